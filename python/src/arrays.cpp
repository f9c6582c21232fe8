#include "arrays.h"

#include <cstdlib>
#include <vector>

using namespace nb::literals;

namespace winfer::python {
namespace {

Layout layout_of(const Shape& shape) { return shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain; }

std::string dtype_name(const nb::dlpack::dtype& dtype) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(dtype.code);
  if (code == Code::Bool) return "bool";
  const std::string kind = code == Code::Int       ? "int"
                           : code == Code::UInt    ? "uint"
                           : code == Code::Float   ? "float"
                           : code == Code::Bfloat  ? "bfloat"
                           : code == Code::Complex ? "complex"
                                                   : "dlpack code " + std::to_string(dtype.code) + ", bits ";
  return kind + std::to_string(dtype.bits);
}

std::string py_type_name(nb::handle h) { return nb::type_name(h.type()).c_str(); }

std::vector<int64_t> dims_of(const nb::ndarray<nb::ro>& a) {
  return std::vector<int64_t>(a.shape_ptr(), a.shape_ptr() + a.ndim());
}

// C order: each stride the product of the later dims (in elements; a dim of size 1 may have
// any stride, as numpy's C_CONTIGUOUS flag allows).
bool c_contiguous(const nb::ndarray<nb::ro>& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

// Any array-like object nanobind can see without converting it (numpy, or anything with the
// buffer protocol or DLPack: a CPU torch.Tensor too); false for lists, scalars, ...
bool as_array(nb::handle h, nb::ndarray<nb::ro>* array) { return nb::try_cast(h, *array, /*convert=*/false); }

// The checks shared by inputs and outputs, in the order a user would fix them. An input's
// messages say how to convert it (copy=True, or numpy's own calls); an `out` array cannot be
// converted: the engine must write into the caller's memory.
void check_array(const nb::ndarray<nb::ro>& a, const Shape& expected, const std::string& what, bool input) {
  if (a.device_type() != nb::device::cpu::value) {
    raise_builtin(PyExc_TypeError, what + " is not in host memory (device type " + std::to_string(a.device_type()) +
                                       "); expected a CPU array (numpy.ndarray)");
  }
  const std::string copy_hint = input ? "; pass copy=True to convert it (a copy), or " : "";
  if (a.dtype() != nb::dtype<float>()) {
    raise_builtin(PyExc_TypeError, what + " has dtype " + dtype_name(a.dtype()) + ", expected float32" + copy_hint +
                                       (input ? "x.astype(numpy.float32)" : ""));
  }
  if (!c_contiguous(a)) {
    std::vector<int64_t> strides;
    for (size_t i = 0; i < a.ndim(); ++i) strides.push_back(a.stride(i) * 4);
    raise_error(ErrorCode::kInvalidArgument, what + " is not C-contiguous (shape " + shape_text(dims_of(a)) +
                                                 ", strides " + shape_text(strides) +
                                                 " bytes); expected a C-contiguous float32 array" + copy_hint +
                                                 (input ? "numpy.ascontiguousarray(x)" : ""));
  }
  if (dims_of(a) != expected.dims()) {
    raise_error(ErrorCode::kShapeMismatch,
                what + " has shape " + shape_text(dims_of(a)) + ", expected " + shape_text(expected.dims()) +
                    (input ? " (the session's; make a session with batch= or input_shape= for another shape)"
                           : " (the output's: Session.output_shapes)"));
  }
}

}  // namespace

InputView input_view(nb::handle x, const Shape& expected, bool copy, const std::string& what) {
  InputView view;
  view.keep = nb::borrow(x);
  nb::ndarray<nb::ro> array;
  const bool is_array = as_array(x, &array);
  const bool needs_copy = !is_array || array.dtype() != nb::dtype<float>() || !c_contiguous(array);
  if (copy && needs_copy) {
    // numpy converts (dtype, order, nested lists); the copy lives as long as `view`.
    nb::module_ np = nb::module_::import_("numpy");
    view.keep = np.attr("ascontiguousarray")(x, "dtype"_a = np.attr("float32"));
    if (!as_array(view.keep, &array)) raise_builtin(PyExc_TypeError, what + ": numpy could not convert it");
  } else if (!is_array) {
    raise_builtin(PyExc_TypeError, what + " must be a float32 numpy.ndarray (NCHW, C-contiguous), got " +
                                       py_type_name(x) + "; pass copy=True to convert it");
  }
  check_array(array, expected, what, /*input=*/true);
  view.tensor =
      Tensor::view(const_cast<float*>(static_cast<const float*>(array.data())), expected, layout_of(expected));
  return view;
}

Tensor output_view(nb::handle out, const Shape& expected, const std::string& what) {
  nb::ndarray<nb::ro> array;
  if (!as_array(out, &array)) {
    raise_builtin(PyExc_TypeError, what + " must be a float32 numpy.ndarray (C-contiguous, the output's shape), got " +
                                       py_type_name(out));
  }
  check_array(array, expected, what, /*input=*/false);
  nb::ndarray<> writable;
  if (!nb::try_cast(out, writable, /*convert=*/false)) {
    raise_error(ErrorCode::kInvalidArgument, what + " is read-only; expected a writable float32 array");
  }
  return Tensor::view(static_cast<float*>(writable.data()), expected, layout_of(expected));
}

OutputBuffer allocate_output(const Shape& shape) {
  const size_t bytes = static_cast<size_t>(shape.numel()) * sizeof(float);
  const size_t rounded =
      (std::max<size_t>(bytes, 1) + Tensor::kAlignment - 1) / Tensor::kAlignment * Tensor::kAlignment;
  float* p = static_cast<float*>(std::aligned_alloc(Tensor::kAlignment, rounded));
  if (p == nullptr) {
    raise_error(ErrorCode::kOutOfMemory, "cannot allocate " + std::to_string(bytes) + " bytes for an output of shape " +
                                             shape_text(shape.dims()));
  }
  return OutputBuffer(p);
}

nb::object to_numpy(OutputBuffer buffer, const Shape& shape) {
  float* data = buffer.get();
  nb::capsule owner(data, [](void* p) noexcept { std::free(p); });
  buffer.release();  // the capsule frees it from now on
  std::vector<size_t> dims(shape.dims().begin(), shape.dims().end());
  return nb::ndarray<nb::numpy, float>(data, dims.size(), dims.data(), owner).cast();
}

uintptr_t input_pointer(nb::handle x) {
  nb::ndarray<nb::ro> array;
  if (!as_array(x, &array)) raise_builtin(PyExc_TypeError, "not an array: " + py_type_name(x));
  return reinterpret_cast<uintptr_t>(array.data());
}

}  // namespace winfer::python
