// NCHW <-> NHWC. Per image both are a matrix transpose: NCHW is [C][H*W], NHWC is [H*W][C].
// A naive transpose walks one side with a stride of C (or H*W) floats and touches a new cache
// line per element; here the matrix is cut into kTile x kTile tiles, small enough that the
// tile's source and destination lines stay in L1 while it is copied, so every line fetched is
// used completely. Tiles are independent and split between threads. Thin matrices (C <= 16,
// or a few pixels) are handled without tiles (see below).
#include "kernels/cpu/layout.h"

#include <algorithm>

#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace {

constexpr int64_t kTile = 32;  // 32 x 32 floats: 4 KiB read + 4 KiB written per tile

// For each of `count` matrices: dst[j][i] = src[i][j], src being rows x cols.
void batched_transpose(int64_t count, int64_t rows, int64_t cols, const float* src, float* dst, int threads) {
  // One side of at most kFewStreams (e.g. an RGB image, C = 3): no tiling, but the long side
  // innermost, so one array is walked sequentially and the other with a small stride whose
  // cache lines are reused by the next few outer iterations. Threads split the long side.
  constexpr int64_t kFewStreams = 16;
  if (rows <= kFewStreams || cols <= kFewStreams) {
    const bool few_rows = rows <= kFewStreams;
    const int64_t length = few_rows ? cols : rows;
    cpu::parallel_chunks(length, count * (few_rows ? rows : cols), threads, [&](int64_t begin, int64_t end) {
      for (int64_t b = 0; b < count; ++b) {
        const float* s = src + b * rows * cols;
        float* d = dst + b * rows * cols;
        if (few_rows) {
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = begin; j < end; ++j) d[j * rows + i] = s[i * cols + j];
        } else {
          for (int64_t j = 0; j < cols; ++j)
            for (int64_t i = begin; i < end; ++i) d[j * rows + i] = s[i * cols + j];
        }
      }
    });
    return;
  }
  const int64_t row_tiles = cpu::ceil_div(rows, kTile);
  const int64_t col_tiles = cpu::ceil_div(cols, kTile);
  const int64_t tiles = count * row_tiles * col_tiles;
  const int nt = cpu::threads_for_work(threads, count * rows * cols);
  cpu::parallel_pieces(nt, tiles, cpu::pieces_for(nt, tiles, count * rows * cols),
                       [&](int64_t first, int64_t last, int) {
                         for (int64_t t = first; t < last; ++t) {
                           const int64_t b = t / (row_tiles * col_tiles);
                           const int64_t i0 = (t / col_tiles) % row_tiles * kTile;
                           const int64_t j0 = t % col_tiles * kTile;
                           const int64_t i1 = std::min(i0 + kTile, rows), j1 = std::min(j0 + kTile, cols);
                           const float* s = src + b * rows * cols;
                           float* d = dst + b * rows * cols;
                           for (int64_t i = i0; i < i1; ++i)
                             for (int64_t j = j0; j < j1; ++j) d[j * rows + i] = s[i * cols + j];
                         }
                       });
}

}  // namespace

void nchw_to_nhwc(int64_t n, int64_t c, int64_t h, int64_t w, const float* in, float* out, int threads) {
  batched_transpose(n, c, h * w, in, out, threads);
}

void nhwc_to_nchw(int64_t n, int64_t c, int64_t h, int64_t w, const float* in, float* out, int threads) {
  batched_transpose(n, h * w, c, in, out, threads);
}

}  // namespace winfer
