#include "winfer/status.h"

namespace winfer {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kIoError: return "I/O error";
    case ErrorCode::kParseError: return "parse error";
    case ErrorCode::kShapeMismatch: return "shape mismatch";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kOutOfMemory: return "out of memory";
    case ErrorCode::kDeviceError: return "device error";
  }
  return "unknown error";
}

}  // namespace winfer
