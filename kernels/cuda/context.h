// What a CUDA kernel call needs besides its tensors: the stream it runs on and, for the
// algorithms built on NVIDIA's libraries (im2col's GEMM, linear, cudnn), their handles.
#pragma once

#include <memory>
#include <string>

#include "kernels/cuda/runtime.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// cuBLAS and cuDNN handles bound to one stream (defined in native/libraries.cpp; the emulator
// has none). Not thread-safe: one per stream / Session.
class Libraries;
struct LibrariesDeleter {
  void operator()(Libraries* libraries) const;
};
using LibrariesPtr = std::unique_ptr<Libraries, LibrariesDeleter>;

struct Context {
  cudaStream_t stream = nullptr;
  // Needed by im2col, cudnn and linear; those return kUnsupported when it is null.
  Libraries* libraries = nullptr;
};

// Creates the handles on `stream`. TF32 tensor-core math is off unless allow_tf32: results then
// match float32 arithmetic (and the CPU backend) to float32 rounding. Fails with kUnsupported
// under the emulator and with kDeviceError/kLibraryError when there is no usable device.
Status create_libraries(cudaStream_t stream, bool allow_tf32, LibrariesPtr* out);

// Whether a CUDA device can be used. Never fails: without a driver or a device, count is 0 and
// `reason` says why (cudaGetDeviceCount's error). `name` is device 0's name when count > 0.
struct DeviceProbe {
  int count = 0;
  std::string name;
  std::string reason;
};
DeviceProbe probe_devices();

}  // namespace cuda
}  // namespace winfer
