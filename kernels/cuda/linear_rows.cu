// Fully connected layer for few rows (a classifier head at small batch): one warp per output
// element. The lanes stride over the K features together, so both the input row and the weight
// row are read with coalesced loads, and a shuffle tree sums the 32 partial dot products. At
// batch 1 a fully connected layer is a matrix-vector product bounded by reading the weights once,
// which this does at full bandwidth without cuBLAS's GEMM setup; it also needs no library, so
// the emulator runs it.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/linear.h"

namespace winfer {
namespace cuda {
namespace {

constexpr unsigned kFullWarp = 0xffffffffu;
constexpr int kWarpSize = 32;

__global__ void linear_warp_kernel(const float* in, const float* weight, const float* bias, float* out, int64_t rows,
                                   int64_t in_features, int64_t out_features, Clamp clamp) {
  const int64_t warps_per_block = blockDim.x / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int64_t total = rows * out_features;
  const int64_t warp_count = static_cast<int64_t>(gridDim.x) * warps_per_block;
  // `item` is the same for every lane of a warp, so whole warps enter and leave the loop together
  // and the full-mask shuffles below always have all 32 lanes.
  for (int64_t item = blockIdx.x * warps_per_block + threadIdx.x / kWarpSize; item < total; item += warp_count) {
    const int64_t row = item / out_features, o = item % out_features;
    const float* x = in + row * in_features;
    const float* w = weight + o * in_features;
    float sum = 0.f;
    for (int64_t k = lane; k < in_features; k += kWarpSize) sum += x[k] * w[k];
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(kFullWarp, sum, offset);
    if (lane == 0) out[item] = apply_clamp(sum + (bias != nullptr ? bias[o] : 0.f), clamp);
  }
}

}  // namespace

Status linear_rows(const float* in, const float* weight, const float* bias, float* out, int64_t rows,
                   int64_t in_features, int64_t out_features, Activation act, cudaStream_t stream) {
  if (rows < 0 || in_features < 0 || out_features < 0) return invalid_argument("linear: negative size");
  const int64_t total = rows * out_features;
  constexpr int kThreads = 256;
  const int64_t blocks = min64(ceil_div(total, kThreads / kWarpSize), kMaxGridStrideBlocks);
  const LaunchConfig config{dim3(static_cast<unsigned>(blocks)), dim3(kThreads)};
  return launch("linear_warp_kernel", config, stream, linear_warp_kernel, in, weight, bias, out, rows, in_features,
                out_features, activation_clamp(act));
}

}  // namespace cuda
}  // namespace winfer
