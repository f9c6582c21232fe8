// The one place where kernels are launched, shared by the native and the emulated build so that
// both run exactly the same launch configuration. Include from .cu files only.
//
//   WINFER_CUDA_RETURN_IF_ERROR(launch("add", grid_stride_config(count), stream, add_kernel, a, b, out, count));
//
// Natively this is kernel<<<grid, block, 0, stream>>>(args...) followed by cudaGetLastError(),
// which reports configuration errors at once (errors during execution surface at the next
// synchronisation, as always with CUDA). Under the emulator the grid runs to completion before
// launch() returns, and a broken barrier is reported as cudaErrorLaunchFailure.
#pragma once

#if !defined(WINFER_CUDA_EMULATED) && !defined(__CUDACC__)
#error "kernels/cuda/launch.h is for .cu files (compiled by nvcc or against the emulator)"
#endif

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/fault_injection.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

struct LaunchConfig {
  dim3 grid;
  dim3 block;
};

// Threads per block of the simple kernels: a multiple of the warp size, small enough that every
// SM holds several blocks, and cheap enough for the emulator (one fiber per thread).
constexpr int kBlockThreads = 256;
// Grid-stride kernels cap their grid here and loop over the rest: more blocks than the GPU holds
// at once only adds scheduling work.
constexpr int64_t kMaxGridStrideBlocks = 4096;

// One thread per item of `count`, grid-stride beyond kMaxGridStrideBlocks * threads items.
inline LaunchConfig grid_stride_config(int64_t count, int threads = kBlockThreads) {
  const int64_t blocks = std::min(ceil_div(count, threads), kMaxGridStrideBlocks);
  return LaunchConfig{dim3(static_cast<unsigned>(blocks)), dim3(static_cast<unsigned>(threads))};
}

// Launches kernel(args...) with `config` on `stream`. A grid with a zero dimension means there is
// no work: nothing is launched and the result is ok. `what` names the kernel in errors.
template <typename... Params, typename... Args>
Status launch(const char* what, const LaunchConfig& config, cudaStream_t stream,
              void (*kernel)(Params...), Args&&... args) {
  if (config.grid.x == 0 || config.grid.y == 0 || config.grid.z == 0) return Status();
  if (testing::launch_fails()) {
    return Status(StatusCode::kDeviceError, std::string(what) + ": launch: cudaErrorLaunchFailure (injected by a test)");
  }
#if defined(WINFER_CUDA_EMULATED)
  const cudaError_t error =
      winfer_emu::launch(kernel, config.grid, config.block, stream, std::forward<Args>(args)...);
  (void)cudaGetLastError();  // as natively: a reported launch error is not left pending
#else
  kernel<<<config.grid, config.block, 0, stream>>>(std::forward<Args>(args)...);
  const cudaError_t error = cudaGetLastError();
#endif
  return cuda_status(error, std::string(what) + ": launch");
}

}  // namespace cuda
}  // namespace winfer
