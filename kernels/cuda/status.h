// Status: how the CUDA kernels report errors. The kernels never abort: every CUDA runtime call,
// kernel launch and cuBLAS/cuDNN call is checked and its failure returned as a Status whose
// message names the operation and the CUDA error, e.g.
//   "im2win window transform: launch: cudaErrorInvalidConfiguration (invalid configuration argument)"
// Kernels do not depend on the engine, so this is a small type of their own; the engine maps it
// onto winfer::Status (kOutOfMemory and kDeviceError are the codes it will want to tell apart).
#pragma once

#include <string>
#include <utility>

#include "kernels/cuda/runtime.h"

namespace winfer {
namespace cuda {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // parameters the kernel cannot run (caller's bug or unsupported shape)
  kUnsupported,      // not available in this build (cuBLAS/cuDNN under the emulator, no cuDNN)
  kOutOfMemory,      // cudaErrorMemoryAllocation and friends
  kDeviceError,      // any other CUDA runtime error, including "no device" / "no driver"
  kLibraryError,     // cuBLAS or cuDNN returned an error
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const { return ok() ? std::string("ok") : message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status unsupported(std::string m) { return Status(StatusCode::kUnsupported, std::move(m)); }

// Ok for cudaSuccess, otherwise "what: cudaErrorName (description)" with a code chosen from the
// error (kOutOfMemory for allocation failures, else kDeviceError).
Status cuda_status(cudaError_t error, const std::string& what);

}  // namespace cuda
}  // namespace winfer

// Returns from the enclosing function when `expr` (a Status) is an error.
#define WINFER_CUDA_RETURN_IF_ERROR(expr)    \
  do {                                       \
    ::winfer::cuda::Status status_ = (expr); \
    if (!status_.ok()) return status_;       \
  } while (0)
