// NCHW <-> NHWC is, per image, the transpose of a [C][H*W] (or [H*W][C]) matrix. A naive
// transpose makes either the reads or the writes strided; here each block stages a 32x32 tile in
// shared memory, reading rows and writing columns both along consecutive addresses. The tile
// has 33 columns so that reading a column of it hits 32 different shared-memory banks.
#include "kernels/cuda/layout.h"

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

constexpr int kTile = 32;
constexpr int kTileRowsPerPass = 8;  // blockDim = (32, 8): each thread moves 4 elements of a tile

// out[n][c][r] = in[n][r][c] for every image n, r < rows, c < cols. Tiles and images beyond the
// grid are covered by grid-stride loops over y (row tiles) and z (images); every thread of a
// block runs the same iterations, so the barriers inside are reached by all.
__global__ void transpose_kernel(const float* in, float* out, int64_t images, int64_t rows, int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  WINFER_EMU_SHARED(tile);
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t row_tiles = ceil_div(rows, kTile);
  for (int64_t n = blockIdx.z; n < images; n += gridDim.z) {
    const float* src = in + n * rows * cols;
    float* dst = out + n * rows * cols;
    for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
      const int64_t row0 = rt * kTile;
      for (int i = static_cast<int>(threadIdx.y); i < kTile; i += kTileRowsPerPass) {
        const int64_t r = row0 + i, c = col0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * cols + c];
      }
      __syncthreads();
      for (int i = static_cast<int>(threadIdx.y); i < kTile; i += kTileRowsPerPass) {
        const int64_t c = col0 + i, r = row0 + threadIdx.x;
        if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][i];
      }
      __syncthreads();  // the tile is rewritten by the next iteration
    }
  }
}

Status transpose(const char* what, int64_t images, int64_t rows, int64_t cols, const float* in, float* out,
                 cudaStream_t stream) {
  if (images < 0 || rows < 0 || cols < 0) return invalid_argument(std::string(what) + ": negative size");
  if (images * rows * cols == 0) return Status();
  if (!in || !out) return invalid_argument(std::string(what) + ": null tensor pointer");
  if (in == out) return invalid_argument(std::string(what) + ": cannot run in place");
  const int64_t col_tiles = ceil_div(cols, kTile);
  if (col_tiles > 0x7fffffff) return invalid_argument(std::string(what) + ": tensor too large");
  LaunchConfig config;
  config.grid = dim3(static_cast<unsigned>(col_tiles), static_cast<unsigned>(min64(ceil_div(rows, kTile), 65535)),
                     static_cast<unsigned>(min64(images, 65535)));
  config.block = dim3(kTile, kTileRowsPerPass);
  return launch(what, config, stream, transpose_kernel, in, out, images, rows, cols);
}

}  // namespace

Status nchw_to_nhwc(int64_t n, int64_t c, int64_t h, int64_t w, const float* in, float* out, cudaStream_t stream) {
  return transpose("nchw_to_nhwc", n, c, h * w, in, out, stream);
}

Status nhwc_to_nchw(int64_t n, int64_t c, int64_t h, int64_t w, const float* in, float* out, cudaStream_t stream) {
  return transpose("nhwc_to_nchw", n, h * w, c, in, out, stream);
}

}  // namespace cuda
}  // namespace winfer
