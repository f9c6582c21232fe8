#include "kernels/cuda/context.h"

namespace winfer {
namespace cuda {

DeviceProbe probe_devices() {
  DeviceProbe probe;
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    // cudaErrorNoDevice, cudaErrorInsufficientDriver (no driver at all), ...: not sticky, but
    // cleared so that the next unrelated cudaGetLastError() does not report it.
    (void)cudaGetLastError();
    probe.reason = cuda_status(error, "cudaGetDeviceCount").message();
    return probe;
  }
  if (count == 0) {
    probe.reason = "cudaGetDeviceCount: no CUDA device";
    return probe;
  }
  probe.count = count;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    probe.name = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
  } else {
    (void)cudaGetLastError();
    probe.name = "device 0";
  }
  return probe;
}

}  // namespace cuda
}  // namespace winfer
