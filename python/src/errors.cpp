// Engine errors -> Python exceptions. The classes are Python's (python/winfer/_errors.py): one per
// winfer::ErrorCode, each also a subclass of the builtin a Python user would catch (NotFoundError
// is a FileNotFoundError, ShapeError a ValueError, ...), which is easier to say in Python than
// with PyErr_NewException. They are looked up when an error is raised, never on the fast path.
#include "common.h"
#include "winfer/session.h"

namespace winfer::python {
namespace {

const char* class_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgumentError";
    case ErrorCode::kNotFound: return "NotFoundError";
    case ErrorCode::kIoError: return "IoError";
    case ErrorCode::kParseError: return "ParseError";
    case ErrorCode::kShapeMismatch: return "ShapeError";
    case ErrorCode::kUnsupported: return "UnsupportedError";
    case ErrorCode::kOutOfMemory: return "OutOfMemoryError";
    case ErrorCode::kDeviceError: return "DeviceError";
    case ErrorCode::kOk:  // not an error: a bug of the binding's, reported as one
    case ErrorCode::kInternal: break;
  }
  return "InternalError";
}

}  // namespace

void raise_error(ErrorCode code, const std::string& message) {
  nb::object type = nb::module_::import_("winfer._errors").attr(class_name(code));
  PyErr_SetObject(type.ptr(), nb::str(message.c_str(), message.size()).ptr());
  throw nb::python_error();
}

void raise_status(const Status& status) { raise_error(status.code(), status.message()); }

void raise_builtin(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

nb::tuple shape_tuple(const Shape& shape) {
  nb::list dims;
  for (int64_t d : shape.dims()) dims.append(d);
  return nb::tuple(dims);
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + (dims.size() == 1 ? ",)" : ")");
}

int default_threads() { return winfer::default_thread_count(); }

}  // namespace winfer::python
