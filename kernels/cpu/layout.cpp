// NCHW <-> NHWC. Per image both are a matrix transpose: NCHW is [C][H*W], NHWC is [H*W][C].
// A naive transpose walks one side with a stride of C (or H*W) floats and touches a new cache
// line per element; here the matrix is cut into kTile x kTile tiles, small enough that the
// tile's source and destination lines stay in L1 while it is copied, so every line fetched is
// used completely. Tiles are independent and split between threads. Thin matrices (C <= 16,
// or a few pixels) are handled without tiles (see below).
#include "kernels/cpu/layout.h"

#include <algorithm>
#include <utility>

#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace {

constexpr int64_t kTile = 32;  // 32 x 32 floats: 4 KiB read + 4 KiB written per tile

// Three planes (an RGB image, NCHW) into pixels of 3 floats (NHWC), kLanes pixels at a time: a
// vector of each plane, interleaved by two two-register shuffles per output vector. The scalar
// loop below stored one float at a time 3 floats apart: 38.6 us for a 224 x 224 image, a
// network's first step (session 39).
template <int kLanes>
struct RgbInterleave {
  // Output vector k, lane i: float q = kLanes * k + i of the pixels, channel q % 3 of pixel q / 3.
  static constexpr int pixel(int k, int i) { return (kLanes * k + i) / 3; }
  static constexpr int channel(int k, int i) { return (kLanes * k + i) % 3; }
  // First shuffle (r, g): the lanes of channel 0 and 1 (channel 2's lanes: a placeholder).
  static constexpr int from_rg(int k, int i) {
    return channel(k, i) == 0 ? pixel(k, i) : channel(k, i) == 1 ? kLanes + pixel(k, i) : 0;
  }
  // Second shuffle (that, b): channel 2's lanes from b.
  static constexpr int from_b(int k, int i) { return channel(k, i) == 2 ? kLanes + pixel(k, i) : i; }
  template <int kK, int... kI>
  WINFER_ALWAYS_INLINE static cpu::Vec<kLanes> out(const cpu::Vec<kLanes>& r, const cpu::Vec<kLanes>& g,
                                                   const cpu::Vec<kLanes>& b, std::integer_sequence<int, kI...>) {
    const cpu::Vec<kLanes> rg = __builtin_shufflevector(r, g, from_rg(kK, kI)...);
    return __builtin_shufflevector(rg, b, from_b(kK, kI)...);
  }
  WINFER_ALWAYS_INLINE static void run(const float* r, const float* g, const float* b, float* d) {
    constexpr auto lanes = std::make_integer_sequence<int, kLanes>{};
    const cpu::Vec<kLanes> vr = cpu::load<kLanes>(r), vg = cpu::load<kLanes>(g), vb = cpu::load<kLanes>(b);
    cpu::store<kLanes>(d, out<0>(vr, vg, vb, lanes));
    cpu::store<kLanes>(d + kLanes, out<1>(vr, vg, vb, lanes));
    cpu::store<kLanes>(d + 2 * kLanes, out<2>(vr, vg, vb, lanes));
  }
};

// Pixels [begin, end) of three planes of `pixels` floats at s into d (3 floats a pixel).
template <int kLanes>
WINFER_ALWAYS_INLINE inline void rgb_to_pixels_body(const float* s, int64_t pixels, int64_t begin, int64_t end,
                                                    float* d) {
  const float *r = s, *g = s + pixels, *b = s + 2 * pixels;
  int64_t j = begin;
  for (; j + kLanes <= end; j += kLanes) RgbInterleave<kLanes>::run(r + j, g + j, b + j, d + 3 * j);
  for (; j < end; ++j) {
    d[3 * j] = r[j];
    d[3 * j + 1] = g[j];
    d[3 * j + 2] = b[j];
  }
}
WINFER_TARGET_AVX512 void rgb_to_pixels_avx512(const float* s, int64_t pixels, int64_t begin, int64_t end, float* d) {
  rgb_to_pixels_body<16>(s, pixels, begin, end, d);
}
WINFER_TARGET_AVX2 void rgb_to_pixels_avx2(const float* s, int64_t pixels, int64_t begin, int64_t end, float* d) {
  rgb_to_pixels_body<8>(s, pixels, begin, end, d);
}
void rgb_to_pixels_generic(const float* s, int64_t pixels, int64_t begin, int64_t end, float* d) {
  rgb_to_pixels_body<4>(s, pixels, begin, end, d);
}

// For each of `count` matrices: dst[j][i] = src[i][j], src being rows x cols.
void batched_transpose(int64_t count, int64_t rows, int64_t cols, const float* src, float* dst, int threads) {
  // One side of at most kFewStreams (e.g. an RGB image, C = 3): no tiling, but the long side
  // innermost, so one array is walked sequentially and the other with a small stride whose
  // cache lines are reused by the next few outer iterations. Threads split the long side.
  constexpr int64_t kFewStreams = 16;
  if (rows == 3) {  // an RGB image's planes into pixels
    auto* fn = rgb_to_pixels_generic;
    if (cpu::cpu_isa() == cpu::Isa::kAvx512) fn = rgb_to_pixels_avx512;
    if (cpu::cpu_isa() == cpu::Isa::kAvx2) fn = rgb_to_pixels_avx2;
    cpu::parallel_chunks(cols, count * rows, threads, [&](int64_t begin, int64_t end) {
      for (int64_t b = 0; b < count; ++b) fn(src + b * rows * cols, cols, begin, end, dst + b * rows * cols);
    });
    return;
  }
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
