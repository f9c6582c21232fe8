// The INT8 convolution micro-kernel (internal to kernels/cpu): rows output pixels x one panel of
// kS8Panel output channels, int32 accumulators in registers, the requantize epilogue fused.
//
// One call computes, for m < rows and j < cols (the panel's valid channels),
//
//   acc = bias[j] + sum_{s < segments} sum_{k < 4 * quads + tail} px(m, s)[k] * w(s)[k / 4][j][k % 4]
//   out[m * out_stride + j] = s8_requantize(acc, mult[j], out_zero, lo, hi)
//   or, with a residual (res != null),
//   out[m * out_stride + j] = s8_requantize_residual(acc, mult[j], res[m * res_stride + j], res_zero,
//                                                    res_scale, out_zero, lo, hi)
//
// (res may equal out with res_stride == out_stride: each value is read before its own store.)
// The kernels test `res` once per tile and run one of two epilogues: the plain one unchanged.
//
// where px(m, s) = pixels[m] + s * seg_stride (im2win: window runs or the input in place), or
// pixels[s * pixels_stride + m] + pixel_offset (indirect: one pointer per pixel and tap), and
// w(s) = weights + s * w_seg_stride. K runs in groups of 4 bytes (one vpdpbusd lane: 4 u8 x s8
// products summed into an int32); the weights are packed [K/4][kS8Panel][4] per segment so that
// one group of a K step is one 128-byte row (two zmm). `tail` (0-3) bytes after the quads of a
// segment are read exactly (bytes past them are never touched) and multiplied with a last,
// zero-padded weight group: the indirect convolution's Cg % 4 channels. The panel is always
// kS8Panel wide in memory (bias and multiplier too: zeros past the group's channels); only the
// store is limited to `cols`.
#pragma once

#include <cstdint>

#include "kernels/cpu/conv_s8.h"

namespace winfer {
namespace cpu {

constexpr int kS8Panel = 32;    // output channels per weight panel (two zmm of int32)
constexpr int kS8MaxRows = 14;  // the widest kernel's MR

struct S8TileArgs {
  const uint8_t* const* pixels;
  int64_t segments;
  int64_t quads;  // 4-byte groups per segment
  int tail;       // bytes after them, 0-3
  int64_t seg_stride;
  int64_t pixels_stride;  // indirect only
  int64_t pixel_offset;   // indirect only
  const int8_t* weights;
  int64_t w_seg_stride;  // bytes between the segments' weights
  const int32_t* bias;   // kS8Panel values (folded bias)
  const float* mult;     // kS8Panel values
  int32_t out_zero, lo, hi;
  uint8_t* out;
  int64_t out_stride;  // bytes between consecutive pixels' outputs
  int cols;            // 1..kS8Panel
  // The residual (null: none): pixel m's channel j at res[m * res_stride + j].
  const uint8_t* res;
  int64_t res_stride;
  int32_t res_zero;
  float res_scale;
};

using S8TileFn = void (*)(const S8TileArgs&);

struct S8TileKernels {
  const char* isa;
  int max_rows;
  S8TileFn fn[kS8MaxRows + 1];        // [rows], im2win addressing
  S8TileFn indirect[kS8MaxRows + 1];  // [rows], per-tap pointers
};

const S8TileKernels& s8_tile_kernels(S8Isa isa);
const S8TileKernels* s8_tile_kernels_vnni();  // null where the compiler cannot target x86
const S8TileKernels* s8_tile_kernels_avx2();
const S8TileKernels& s8_tile_kernels_generic();

// 1-3 bytes as the low bytes of a 32-bit group (zeros above): the tail of a segment.
inline uint32_t s8_load_tail(const uint8_t* p, int n) {
  uint32_t v = p[0];
  if (n > 1) v |= static_cast<uint32_t>(p[1]) << 8;
  if (n > 2) v |= static_cast<uint32_t>(p[2]) << 16;
  return v;
}

// Where segment s of pixel m starts.
template <bool kIndirect>
inline const uint8_t* s8_segment(const S8TileArgs& a, int64_t s, int m) {
  return kIndirect ? a.pixels[s * a.pixels_stride + m] + a.pixel_offset : a.pixels[m] + s * a.seg_stride;
}

// Fills an ISA's table from its Tile<rows, indirect>::run.
template <template <int, bool> class Tile, int... kRows>
void fill_s8_tiles(S8TileKernels& t) {
  ((t.fn[kRows] = &Tile<kRows, false>::run), ...);
  ((t.indirect[kRows] = &Tile<kRows, true>::run), ...);
}

}  // namespace cpu
}  // namespace winfer
