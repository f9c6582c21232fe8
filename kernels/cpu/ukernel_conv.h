// The convolution micro-kernel: MR output pixels x NR output channels with the accumulators
// in registers, for im2win now and the indirect convolution later.
//
// One call computes, for m < rows and j < cols,
//
//   out[m * out_stride + j] = clamp(bias[j] + sum_{s < segments, l < seg_len}
//                                   pixel[m][s * seg_stride + l] * w[s * w_seg_stride + l * kPanel + j]
//                                   + residual[m * out_stride + j])
//
// where pixel[m] = args.pixels[m] is where output pixel m's receptive field starts. The K
// dimension (segments * seg_len) is walked in order; each step broadcasts one input value per
// pixel and multiplies it with a row of the weight panel (NR contiguous floats), i.e. a GEMM
// whose A rows are given by pointers rather than by a leading dimension. That is what lets
// im2win use it on its window tensor, where consecutive pixels' rows overlap (pixel m + 1
// starts stride*Kh*C floats after pixel m, not K floats after), and what the indirect
// convolution needs (one pointer per pixel and tap: segments = taps, with per-segment pointer
// arrays instead of seg_stride: TileKernels::indirect; see accumulate() in
// ukernel_conv_body.h, the shared loop).
//
//   im2win, dilation 1:  segments = 1, seg_len = Kw*Kh*Cg           (one contiguous run)
//   im2win, dilation_w:  segments = Kw, seg_len = Kh*Cg, seg_stride = dilation_w*Kh*Cg
//   im2win, output rows whose taps kh < kh0 or >= kh1 fall in the padding: segments = Kw,
//                        seg_len = (kh1-kh0)*Cg, seg_stride = dilation_w*Kh*Cg (zeros skipped)
//   1x1 / Kh = 1 on the input itself: segments = Kw, seg_len = Cg, seg_stride = dilation_w*C
// (w_seg_stride = seg_len * kPanel when the segments' weights are contiguous.)
//
// Weights are packed in panels of kPanel output channels: [K][kPanel]. A group's last panel
// may be narrower, [K][width] with width = its remaining channels (no padding: the packed
// weights are exactly as large as OIHW, so they are always packed in place); the "narrow"
// kernels read it with a row stride of `w_row_stride` and a masked load for the block's last,
// partial vector, never touching a float past the row. The panel width is the same for every
// ISA (a session packs once, whatever kernel later runs): AVX-512 covers a panel with 2 zmm
// vectors, AVX2 with two 2-ymm column blocks, the portable kernel with four 2-vector column
// blocks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace cpu {

// Output channels per packed weight panel (floats per K row of a panel).
constexpr int kPanel = 32;

// The most pixels (MR) and vectors (NV) any ISA's table holds.
constexpr int kMaxTileRows = 14;
constexpr int kMaxTileVecs = 2;

struct TileArgs {
  const float* const* pixels;  // `rows` pointers: where each pixel's receptive field starts
  int64_t segments;            // K = segments * seg_len
  int64_t seg_len;
  int64_t seg_stride;    // floats from one segment of a pixel to the next
  const float* weights;  // [K][kPanel] rows starting at this call's first column
  int64_t w_seg_stride;  // floats from one segment's weight rows to the next
  // Floats from one K row of the weights to the next: kPanel, or the width of a narrower last
  // panel, which only the narrow kernels (TileKernels::narrow) read.
  int64_t w_row_stride = kPanel;
  const float* bias;   // `cols` values, or null
  float* out;          // pixel 0, column 0
  int64_t out_stride;  // floats from one pixel's outputs to the next (Co in NHWC)
  // Added before the activation (a fused ResNet shortcut), laid out like `out` (same stride),
  // or null. Read in the epilogue, while the tile is in registers: no second pass over memory.
  const float* residual = nullptr;
  int cols;    // valid columns, 1 .. vecs * lanes of the kernel called
  Clamp clip;  // fused activation
  // Indirect entry (TileKernels::indirect) only. Segment s of pixel m starts at
  // pixels[s * pixels_stride + m] + pixel_offset (seg_stride is not used): one pointer per
  // pixel and tap from an indirection buffer laid out [tap][pixels_stride] per tile, offset by
  // the group's first channel.
  int64_t pixels_stride = 0;
  int64_t pixel_offset = 0;
  // Group-set tiles (TileKernels::sets, group_sets.h) also add pixel_offset to every pixel's
  // pointer (the column block's set: floats s*B of each K step's 2B), and, where a vector is
  // narrower than a set, take `out` as the set's first channel, `cols` as the set's channels
  // present, and set_lane0 as the block's first lane within its set.
  int set_lane0 = 0;
  // Taps in the left/right padding (im2win, TileKernels::fn and ::narrow only; the indirect
  // entries ignore these): the first pixel takes no part in the first `skip_first` K steps
  // (counted over all segments, in order), the last pixel none in the last `skip_last`: a
  // tile starting at an output row's first column and ending at its last skips the window's
  // zeros of those taps instead of multiplying them.
  int64_t skip_first = 0;
  int64_t skip_last = 0;
  // Optional: memory to bring into L2 while this tile computes (a share of the next weight
  // panel, see conv_im2win.cpp), spread evenly over the tile's K steps: every 16 steps, at
  // step i, the kernel prefetches the cache lines [(i * prefetch_rate) >> 16,
  // ((i + 16) * prefetch_rate) >> 16) of `prefetch`. Null: nothing.
  const char* prefetch = nullptr;
  int64_t prefetch_rate = 0;  // cache lines per K step, 16.16 fixed point
  // The caller keeps these weights in L2 (every tile of the layer reads them: im2win's and
  // indirect's tile-major schedules, im2win's K chunks): the AVX2 6x16 loop and AVX-512's
  // evenly spaced 14-pixel tile then leave their way into L1 to the hardware prefetcher, instead
  // of spending two load slots per K step on prefetching the rows 16 steps ahead, which weights
  // streamed from L3 or memory need (on AVX-512, Zen 4: MobileNetV2 0.93x the time, ResNet-18
  // 0.98x, session 25). A hint; results are the same.
  bool weights_in_l2 = false;
  // Several tiles in one call (the im2win entries fn, narrow and sets; the indirect ones compute one):
  // `tiles` tiles of the same shape, tile t's pixels at pixels[m] + t * tile_pixel_step, its
  // outputs (and residual) at out + t * tile_out_step; skip_first/skip_last and the prefetch
  // share apply to each alike (callers of several tiles pass neither). im2win's in-place 1x1
  // layers, whose pixels lie evenly spaced through a whole run of rows: the run's full tiles in
  // one call per column block, without the caller's per-tile setup (K = 16-96 tiles are only
  // 100-600 cycles: that setup was 15-20% of such a layer, perf, session 22).
  int64_t tiles = 1;
  int64_t tile_pixel_step = 0;
  int64_t tile_out_step = 0;
};

// Makes `a` prefetch share `share` of `shares` of the `bytes` at `region` (whole cache lines,
// the shares adjacent) at an even pace over its `steps` K steps: one line per step at most.
// Nothing when the share is empty.
inline void set_prefetch_share(TileArgs& a, const void* region, int64_t bytes, int64_t share, int64_t shares,
                               int64_t steps) {
  const int64_t lines = (bytes + 63) / 64, line0 = lines * share / shares, line1 = lines * (share + 1) / shares;
  if (line1 <= line0 || steps <= 0) return;
  a.prefetch = static_cast<const char*>(region) + line0 * 64;
  a.prefetch_rate = std::min<int64_t>(((line1 - line0) * 65536 + steps - 1) / steps, int64_t{65536});
}

using TileFn = void (*)(const TileArgs&);

// Every tile shape of one ISA: fn[mr][nv] computes mr pixels (1..max_rows) x nv vectors
// (1..max_vecs) of `lanes` channels.
struct TileKernels {
  const char* isa;
  int lanes;
  int max_rows;  // MR of the main kernel
  int max_vecs;  // NV of the main kernel (NR = max_vecs * lanes)
  TileFn fn[kMaxTileRows + 1][kMaxTileVecs + 1];
  // The same tiles reading their segments through per-segment pointers (the indirect
  // convolution); same inner loop, bias and epilogue.
  TileFn indirect[kMaxTileRows + 1][kMaxTileVecs + 1];
  // Both again for a narrow last panel (rows w_row_stride apart, the last vector masked).
  TileFn narrow[kMaxTileRows + 1][kMaxTileVecs + 1];
  TileFn indirect_narrow[kMaxTileRows + 1][kMaxTileVecs + 1];
  // im2win's group-set tiles (group_sets.h), [log2 B][mr], B = 1, 2, 4 groups per set; only the
  // main kernel's max_vecs vectors (a panel holds no partial block: absent groups' lanes are
  // computed, and not stored).
  TileFn sets[3][kMaxTileRows + 1];
  // The same tiles one vector wide where a vector is one whole set (16 lanes: AVX-512; null
  // elsewhere): a group's last panel whose groups all lie in its first set (RegNet-Y-400MF's 13
  // groups of 8 channels: 4 panels, the last holding one group) computes that set only.
  TileFn sets_one_vector[3][kMaxTileRows + 1];

  // Vectors of a column block of `cols` channels (1 <= cols <= max_vecs * lanes). A full block
  // (nearly every call) takes no division: with `lanes` a run-time value, the ceil_div was an
  // idiv per tile, 9% of a 1x1 32->16 layer's caller time (perf, session 22).
  int vecs_for(int cols) const { return cols == max_vecs * lanes ? max_vecs : (cols + lanes - 1) / lanes; }

  // The kernel for `rows` pixels x `vecs` vectors of a panel `width` channels wide.
  TileFn pick(int rows, int vecs, int64_t width, bool indirect_rows) const {
    if (width < kPanel) return indirect_rows ? indirect_narrow[rows][vecs] : narrow[rows][vecs];
    return indirect_rows ? indirect[rows][vecs] : fn[rows][vecs];
  }
};

// The kernels for `isa` (which must be runnable on this CPU, e.g. cpu_isa()).
const TileKernels& tile_kernels(Isa isa);

// Per-ISA tables, defined in ukernel_<isa>.cpp. The AVX ones are null where the compiler
// cannot target x86.
const TileKernels* tile_kernels_avx512();
const TileKernels* tile_kernels_avx2();
const TileKernels& tile_kernels_generic();

// Builds an ISA's table from its kernels Kernel<mr, nv>::run, ::run_indirect, ::run_narrow and
// ::run_indirect_narrow. Called from
// default-target code: it only takes the kernels' addresses, so building the table never
// executes an instruction the CPU may lack.
template <template <int, int> class Kernel, int kRows, int kVecs, int... kRowIndex>
void fill_tile_rows(TileKernels& t, std::integer_sequence<int, kRowIndex...>) {
  ((t.fn[kRowIndex + 1][kVecs] = &Kernel<kRowIndex + 1, kVecs>::run), ...);
  ((t.indirect[kRowIndex + 1][kVecs] = &Kernel<kRowIndex + 1, kVecs>::run_indirect), ...);
  ((t.narrow[kRowIndex + 1][kVecs] = &Kernel<kRowIndex + 1, kVecs>::run_narrow), ...);
  ((t.indirect_narrow[kRowIndex + 1][kVecs] = &Kernel<kRowIndex + 1, kVecs>::run_indirect_narrow), ...);
}
template <template <int, int> class Kernel, int kVecs, int... kRowIndex>
void fill_set_rows(TileFn (&sets)[3][kMaxTileRows + 1], std::integer_sequence<int, kRowIndex...>) {
  ((sets[0][kRowIndex + 1] = &Kernel<kRowIndex + 1, kVecs>::template run_sets<1>), ...);
  ((sets[1][kRowIndex + 1] = &Kernel<kRowIndex + 1, kVecs>::template run_sets<2>), ...);
  ((sets[2][kRowIndex + 1] = &Kernel<kRowIndex + 1, kVecs>::template run_sets<4>), ...);
}
template <template <int, int> class Kernel, int kLanes, int kRows, int kVecs>
TileKernels make_tile_kernels(const char* isa) {
  static_assert(kRows <= kMaxTileRows && kVecs <= kMaxTileVecs && kPanel % (kVecs * kLanes) == 0);
  TileKernels t{};
  t.isa = isa;
  t.lanes = kLanes;
  t.max_rows = kRows;
  t.max_vecs = kVecs;
  fill_tile_rows<Kernel, kRows, 1>(t, std::make_integer_sequence<int, kRows>{});
  if constexpr (kVecs >= 2) fill_tile_rows<Kernel, kRows, 2>(t, std::make_integer_sequence<int, kRows>{});
  fill_set_rows<Kernel, kVecs>(t.sets, std::make_integer_sequence<int, kRows>{});
  if constexpr (kLanes == 16 && kVecs == 2)
    fill_set_rows<Kernel, 1>(t.sets_one_vector, std::make_integer_sequence<int, kRows>{});
  return t;
}

}  // namespace cpu
}  // namespace winfer
