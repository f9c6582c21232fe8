#include "engine/src/cuda/cuda_kernel.h"

#include <cstring>

namespace winfer {

Status from_cuda(const cuda::Status& status) {
  switch (status.code()) {
    case cuda::StatusCode::kOk: return Status::Ok();
    case cuda::StatusCode::kInvalidArgument: return invalid_argument(status.message());
    case cuda::StatusCode::kUnsupported: return unsupported(status.message());
    case cuda::StatusCode::kOutOfMemory: return out_of_memory(status.message());
    case cuda::StatusCode::kDeviceError: return device_error(status.message());
    case cuda::StatusCode::kLibraryError: return device_error(status.message());
  }
  return internal_error(status.message());
}

Result<const float*> upload_tensor(const CudaCompileOptions& options, const void* owner, const std::string& key,
                                   const Tensor& host) {
  if (host.empty()) return static_cast<const float*>(nullptr);
  return options.weights->get(options.device, owner, key, host.bytes(),
                              [&](float* dst) { std::memcpy(dst, host.data(), host.bytes()); });
}

}  // namespace winfer
