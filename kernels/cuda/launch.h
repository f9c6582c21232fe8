// The one place where kernels are launched, shared by the native and the emulated build so that
// both run exactly the same launch configuration, and the asynchronous copy (cp.async) in one
// spelling for both: the two things the kernels spell differently natively (<<<>>>, inline PTX)
// and under the emulator. Include from .cu files (and the device headers they include) only.
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

// 16-byte asynchronous copy global -> shared (cp.async.cg, sm_80+); `valid == false` writes 16
// zero bytes and reads nothing (the source must still be a valid address). Each thread's copies
// are complete once it has committed them (copy_async_commit) and waited (copy_async_wait_all);
// the other threads see them after the next __syncthreads(). Natively inline PTX with the source
// size in a register (CUDA's __pipeline_memcpy_async takes it as a constant and branches, which
// cost one of the im2win tiles a register); under the emulator its __pipeline_* primitives.
__device__ __forceinline__ void copy_async_16(float* dst_shared, const float* src_global, bool valid) {
#if defined(WINFER_CUDA_EMULATED)
  __pipeline_memcpy_async(dst_shared, src_global, 16, valid ? 0 : 16);
#else
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(dst_shared));
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src_global), "r"(src_bytes));
#endif
}
// Closes the group of the copies this thread issued since the last commit.
__device__ __forceinline__ void copy_async_commit() {
#if defined(WINFER_CUDA_EMULATED)
  __pipeline_commit();
#else
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
// Waits until every committed group of this thread has landed in shared memory.
__device__ __forceinline__ void copy_async_wait_all() {
#if defined(WINFER_CUDA_EMULATED)
  __pipeline_wait_prior(0);
#else
  asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

// Launches kernel(args...) with `config` on `stream`. A grid with a zero dimension means there is
// no work: nothing is launched and the result is ok. `what` names the kernel in errors.
template <typename... Params, typename... Args>
Status launch(const char* what, const LaunchConfig& config, cudaStream_t stream, void (*kernel)(Params...),
              Args&&... args) {
  if (config.grid.x == 0 || config.grid.y == 0 || config.grid.z == 0) return Status();
  if (testing::launch_fails()) {
    return Status(StatusCode::kDeviceError,
                  std::string(what) + ": launch: cudaErrorLaunchFailure (injected by a test)");
  }
#if defined(WINFER_CUDA_EMULATED)
  winfer_emu::name_next_launch(what);
  const cudaError_t error = winfer_emu::launch(kernel, config.grid, config.block, stream, std::forward<Args>(args)...);
  (void)cudaGetLastError();  // as natively: a reported launch error is not left pending
#else
  // clang-format does not know the launch syntax in a .h file.
  // clang-format off
  kernel<<<config.grid, config.block, 0, stream>>>(std::forward<Args>(args)...);
  // clang-format on
  const cudaError_t error = cudaGetLastError();
#endif
  return cuda_status(error, std::string(what) + ": launch");
}

}  // namespace cuda
}  // namespace winfer
