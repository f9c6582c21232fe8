// Status: the engine's error type. The library never aborts or exits on bad input; every
// fallible call returns a Status (or a Result<T>) whose message names the file, layer, tensor
// and what was expected, e.g.
//   "models/tiny.yaml:12: layer 'conv1' (conv2d): weight 'conv1.weight' has shape [8,3,5,5], expected [8,3,3,3]"
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace winfer {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // bad value from the user (attribute, CLI flag, tensor data)
  kNotFound,         // missing file, tensor, layer, op
  kIoError,          // read/write/mmap failed
  kParseError,       // YAML / JSON / npy / safetensors syntax
  kShapeMismatch,    // shapes disagree
  kUnsupported,      // valid request the engine cannot serve (yet), or not in this build
  kInternal,         // a bug in winfer
  kOutOfMemory,      // an allocation (host or device) failed
  kDeviceError,      // a CUDA device failed, is absent, or its driver is
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("layer 'conv1' (conv2d)") so the innermost detail stays last:
  // "file.yaml: layer 'conv1' (conv2d): weight ... expected ...".
  Status& with_context(const std::string& context) {
    if (!ok()) message_ = context + ": " + message_;
    return *this;
  }
  std::string to_string() const { return ok() ? std::string("ok") : message_; }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return Status(ErrorCode::kInvalidArgument, std::move(m)); }
inline Status not_found(std::string m) { return Status(ErrorCode::kNotFound, std::move(m)); }
inline Status io_error(std::string m) { return Status(ErrorCode::kIoError, std::move(m)); }
inline Status parse_error(std::string m) { return Status(ErrorCode::kParseError, std::move(m)); }
inline Status shape_mismatch(std::string m) { return Status(ErrorCode::kShapeMismatch, std::move(m)); }
inline Status unsupported(std::string m) { return Status(ErrorCode::kUnsupported, std::move(m)); }
inline Status internal_error(std::string m) { return Status(ErrorCode::kInternal, std::move(m)); }
inline Status out_of_memory(std::string m) { return Status(ErrorCode::kOutOfMemory, std::move(m)); }
inline Status device_error(std::string m) { return Status(ErrorCode::kDeviceError, std::move(m)); }

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace winfer

#define WINFER_CONCAT_INNER(a, b) a##b
#define WINFER_CONCAT(a, b) WINFER_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if `expr` failed.
#define WINFER_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::winfer::Status winfer_status_ = (expr);        \
    if (!winfer_status_.ok()) return winfer_status_; \
  } while (0)

// `WINFER_ASSIGN_OR_RETURN(auto x, make_x());` unwraps a Result or returns its Status.
#define WINFER_ASSIGN_OR_RETURN(lhs, expr)                                                                    \
  auto WINFER_CONCAT(winfer_result_, __LINE__) = (expr);                                                      \
  if (!WINFER_CONCAT(winfer_result_, __LINE__).ok()) return WINFER_CONCAT(winfer_result_, __LINE__).status(); \
  lhs = std::move(WINFER_CONCAT(winfer_result_, __LINE__)).value()
