// Helpers shared by the kernels (device code; include from .cu files only).
#pragma once

#include <cstdint>
#include <limits>

#include "kernels/common/conv_params.h"  // Activation
#include "kernels/cuda/runtime.h"

// WINFER_EMU_SHARED(var) after a __shared__ declaration lets the host emulator poison the
// variable at every block start (kernels/cuda/emu/emu.h); natively it is nothing.
#if !defined(WINFER_CUDA_EMULATED)
#define WINFER_EMU_SHARED(var) ((void)0)
#endif

namespace winfer {
namespace cuda {

// A fused activation as a clamp [lo, hi] (none: [-inf, inf], relu: [0, inf], relu6: [0, 6]),
// passed to kernels by value. Written with comparisons, as the CPU kernels do, so a NaN passes
// through unchanged (PyTorch's relu keeps NaN; fmaxf would turn it into 0).
struct Clamp {
  float lo, hi;
};

inline Clamp activation_clamp(Activation a) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (a == Activation::kRelu) return Clamp{0.f, kInf};
  if (a == Activation::kRelu6) return Clamp{0.f, 6.f};
  return Clamp{-kInf, kInf};
}

__device__ __forceinline__ float apply_clamp(float v, Clamp c) {
  v = v < c.lo ? c.lo : v;
  return v > c.hi ? c.hi : v;
}

// Index of this thread in a 1-D grid and the number of threads in the grid (grid-stride loops).
// 64-bit: tensors may have more than 2^31 elements.
__device__ __forceinline__ int64_t grid_thread_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_thread_count() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__host__ __device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
__host__ __device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

}  // namespace cuda
}  // namespace winfer
