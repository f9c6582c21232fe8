#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

Status cuda_status(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status();
  const StatusCode code = error == cudaErrorMemoryAllocation ? StatusCode::kOutOfMemory : StatusCode::kDeviceError;
  return Status(code, what + ": " + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
}

}  // namespace cuda
}  // namespace winfer
