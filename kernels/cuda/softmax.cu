// Row softmax: one block per row (grid-stride over rows). Three passes over the row: the max
// (block reduction), exp(x - max) written to out while summing (block reduction), then the
// scaling by 1/sum. Every exponent is <= 0, so nothing overflows, and the largest term is 1, so
// the sum is >= 1. In place is safe: each element is read and then written by the same thread.
#include "kernels/cuda/linear.h"

#include <cmath>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

constexpr int kSoftmaxThreads = 256;  // 8 warps
constexpr unsigned kFullWarp = 0xffffffffu;

struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// Reduces v over the 32 lanes of a warp (butterfly: every lane ends with the result).
template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
}

// Reduces v over the block (blockDim.x a multiple of 32, at most 1024): each warp reduces its
// lanes, warp 0 reduces the warps' results, and every thread receives the total. `scratch`
// holds 32 floats of shared memory; the trailing barrier lets the caller reuse it at once.
template <typename Op>
__device__ float block_reduce(float v, Op op, float identity, float* scratch) {
  const int lane = static_cast<int>(threadIdx.x) % warpSize, warp = static_cast<int>(threadIdx.x) / warpSize;
  v = warp_reduce(v, op);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>(blockDim.x) / warpSize;
    v = warp_reduce(lane < warps ? scratch[lane] : identity, op);
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  const float total = scratch[0];
  __syncthreads();
  return total;
}

__global__ void softmax_kernel(const float* in, float* out, int64_t rows, int64_t cols) {
  __shared__ float scratch[32];
  WINFER_EMU_SHARED(scratch);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* x = in + r * cols;
    float* y = out + r * cols;
    float local_max = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) local_max = fmaxf(local_max, x[c]);
    const float row_max = block_reduce(local_max, MaxOp(), -INFINITY, scratch);
    float local_sum = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float e = expf(x[c] - row_max);
      y[c] = e;
      local_sum += e;
    }
    const float inv = 1.f / block_reduce(local_sum, SumOp(), 0.f, scratch);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[c] *= inv;
  }
}

}  // namespace

Status softmax_rows(const float* in, float* out, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows < 0 || cols < 0) return invalid_argument("softmax: negative size");
  if (rows * cols == 0) return Status();
  if (!in || !out) return invalid_argument("softmax: null tensor pointer");
  const LaunchConfig config{dim3(static_cast<unsigned>(min64(rows, kMaxGridStrideBlocks))), dim3(kSoftmaxThreads)};
  return launch("softmax", config, stream, softmax_kernel, in, out, rows, cols);
}

}  // namespace cuda
}  // namespace winfer
