// "im2win": the window-tensor convolution (Lu et al., HPEC 2022; NHWC form of Fu et al. 2024),
// the engine's default algorithm.
//
// Window tensor. For one image and one group, output row oh gets a "window row"
//
//   win[oh][x][kh][c] = Xpadded[oh*sh + kh*dh][x][g*Cg + c]      x < Wp, kh < Kh, c < Cg
//
// (zeros where the tap falls in the padding), with Wp = (Wo-1)*sw + (Kw-1)*dw + 1 the padded
// input columns the windows actually read. Output pixel (oh, ow) then reads the run starting
// at win[oh][ow*sw][0][0]: with dilation_w = 1 its whole Kw*Kh*Cg receptive field is one
// contiguous run, ordered (kw, kh, c); with dilation_w > 1 it is Kw runs of Kh*Cg floats,
// dw*Kh*Cg apart. Consecutive pixels' runs overlap (they start sw*Kh*Cg apart): an
// "overlapping GEMM" that BLAS cannot express, computed by our own micro-kernel
// (ukernel_conv.h), 14 pixels x 32 channels per call on AVX-512. Tiles are balanced runs of
// at most MR consecutive output pixels (they may span output rows: a 7x7 output is 4 tiles of
// 12-13 pixels, not 7 of 7), so row tails never fall to a slow narrow kernel. Where the pixels lie
// evenly spaced through whole runs of rows (stride-1 1x1 convolutions read in place), tiles are
// cut every MR pixels instead and several go to one kernel call (Im2winRun::compute_affine). The first and
// last output rows' taps that lie in the padding are skipped (the kernel walks Kw segments
// of the valid taps), a tile never mixing rows with different taps; so are the left/right
// padding taps of a tile's first pixel when it is a row's first column and of its last pixel
// when it is a row's last column (TileArgs::skip_first, skip_last; 3x3 pad-1 rows of 14, 28,
// 56, ... are whole AVX-512 tiles, so every such column skips them).
//
// Weights are packed once into panels of 32 output channels, [g][panel][Kw][Kh][Cg][32] (a
// group's last panel as wide as its remaining channels), so that the K order matches the
// window run and each K step reads one contiguous 128-byte panel row; the same layout for
// every ISA, shared with the indirect convolution (conv_common.h), packed in place at load.
// Groups of 4, 8 or 16 output channels run in group sets (group_sets.h): 2B groups (B = 16 /
// channels per group) interleaved in one 32-lane panel, their window cells transposed ([c][j])
// so that a K step broadcasts B floats per vector; the tile permutes the lanes back at its
// store. Other groups of fewer than 16 output channels run G at a time as one group with
// block-diagonal weights (conv_common.h, merge_small_groups): one window and one tile for G
// groups.
//
// Workspace: the window rows of R output rows ("slots", R * Wp * Kh * Cg floats), reused for
// every row, group and image, never the whole window tensor (which would cost Kh/sh times
// the input). R is the number of rows fitting 128 KiB when one group's weights fit in L2
// (1.5 MiB), else what L2 holds next to two weight panels (at least 512 KiB); at least 4 (or
// Ho), at most Ho, evened out over the image (14 rows -> 2 blocks of 7, not 11 + 3).
// workspace_bytes() cannot depend on the thread count, which sets the floor of 4: enough slots
// for up to 4 threads to own rows (below).
//
// No window at all when Kh = 1 and there is no padding (1x1 convolutions, 1xK kernels): the
// input's pixel rows are already the window rows, and the kernel reads them in place
// (workspace 0).
//
// Threads, three schedules (Im2winRun), all as tasks of the thread pool (thread_pool.h: the
// caller works too, and a late worker only takes what is left):
//   own rows (weights fit in L2, rows split fairly, at most R threads): the output rows are
//     cut into a few contiguous pieces per thread; a thread takes a piece and, in its own
//     R/threads slots, transforms a few rows, computes them for every channel panel, and moves
//     on. No waiting, and the window rows are still in L1/L2 when read.
//   shared blocks (deep layers: weights beyond L2, few rows; and 1x1 layers whose weights dwarf
//     their pixels, Geometry::panel_major, ResNet-50's 256 -> 1024 on 14x14: 0.87-0.91x the
//     time in the network): per block of R rows the threads
//     transform disjoint rows, and when all are done compute disjoint parts of the channel
//     panels for all tiles (each part streams only its share of the weights, once per block),
//     all done again before the next block overwrites the slots. Such weights come from memory on
//     every run (a network's do not stay in the caches), so each tile of a panel also
//     prefetches its share of the part's next panel into L2 (TileArgs::prefetch): the
//     stream overlaps the arithmetic instead of stalling each panel's first tile (ResNet-50's
//     7x7 stage: 15.3 -> 12.4 ms at 1 thread).
//   K chunks (in-place runs whose 14-pixel tile reads more than L1 holds, K > 585 on AVX-512,
//     or whose pixels lie a multiple of 4 KiB apart, so that a tile's broadcasts all fall in one
//     L1 set): per block of panels whose weights fit half of L2, per chunk of K, each tile copies
//     its pixels' chunk next to each other (at most 34 KiB, on the stack) and computes it for the
//     block's panels; later chunks add to the output so far (Im2winRun::chunked). ResNet-50's
//     1024- and 2048-channel 1x1 layers ran at 50-57% of the FMA peak read in place, 85-95% so.
// Each output element is computed by the same kernel calls whatever the thread count, so
// results do not depend on it (bitwise).

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/group_sets.h"
#include "kernels/cpu/ukernel_conv.h"

namespace winfer {
namespace cpu {
namespace {

// Window slots' size target. With L2-resident weights a thread needs only the rows it works
// on (1-2 rows of a ResNet layer: small slots stay in L1/L2; measured up to 4% faster than
// 512 KiB on 3x3 64->64 56x56). Deep layers stream their weights from L3 or memory once per
// block, so their blocks are as large as L2 holds next to two panels (the one computed and the
// one prefetched) and a margin, and at least kBlockBytes. Weights beyond kDeepBlockBytes take
// the block a 2 MiB L2 would hold even on a smaller L2: ResNet-50's 3x3/2 512->512 (7 window
// rows of 92 KiB) then takes one block instead of two, and streams its 9.4 MB once (2.43 ->
// 1.92 ms in the network, 1 thread, 2 MiB L2; on a 512 KiB L2 two blocks ran 8% slower). Below
// it, a second pass over the weights costs nothing measurable (3x3/2 128->256, 1.2 MB, 28x28:
// two blocks and one ran alike on 512 KiB) and the smaller block keeps the workspace lean.
constexpr int64_t kSmallBlockBytes = 128 << 10;
// The pixels of the tiles one kernel call computes in an affine run (Im2winRun::compute_affine):
// half an L1 (32 KiB on every x86 we know), so that each column block after the first finds them
// there.
constexpr int64_t kAffineTileBytes = 16 << 10;
// Fewer full tiles per call than this (K > 227 on AVX2): balanced tiles, one per call, as
// elsewhere. Such tiles are long enough that the per-tile setup hardly shows, and two per call
// measured slower on 232->232 7x7 (1.06x the time, model_ab, session 23).
constexpr int64_t kAffineMinTilesPerCall = 3;
// K chunks (Im2winRun::chunked): an in-place tile whose pixels' runs together exceed this
// (K > 585 on AVX-512's 14-pixel tile) walks K in chunks of at most this many bytes of pixels,
// so that the chunk stays in L1 while the tile runs through the panels (a 32 KiB L1 on every
// x86 we know; ResNet-50's K = 512 layers, 28 KiB a tile, run at 95% of the FMA peak in one
// pass, its K = 1024 layers at 50% before chunks).
constexpr int64_t kChunkTileBytes = 32 << 10;
// A chunk's weights for a block of panels: at most this share of L2, so that the next unit's
// (prefetched while this one computes, KChunk::next_*) fit beside them with the chunk's pixels
// and the block's outputs, which every chunk reads back. A quarter, session 36 (Intel Xeon, 2 MiB
// L2): ResNet-50 0.98x the time at 1 thread, 0.96x at 2 (an eighth measured the same).
constexpr int64_t kChunkWeightsL2Divisor = 4;
// A chunk's pixels are copied (KChunk::pack) one cache line apart from each other, so that
// consecutive pixels fall in consecutive L1 sets, whatever the input's pixel stride.
constexpr int64_t kChunkPackPad = 16;
// The most floats a tile's packed chunks take: MR chunks of at most kChunkTileBytes / MR
// rounded up to a cache line, each padded by kChunkPackPad.
constexpr int64_t kChunkPackFloats = kChunkTileBytes / 4 + 2 * kMaxTileRows * kChunkPackPad;
// L1: 64-byte lines in sets of 8 ways, 4 KiB apart (Intel since Sandy Bridge, AMD since Zen).
constexpr int64_t kL1SetSpanBytes = 4096;
constexpr int64_t kL1Ways = 8;

// Whether the runs of `rows` consecutive pixels `stride` floats apart put more lines in one
// L1 set than it has ways: a pixel stride that is a multiple of 4 KiB (1024 channels, or 512
// at stride 2) puts a 14-pixel tile's 14 broadcasts of each K step in one set, and the loads
// evict each other's lines before the next 15 steps use them (ResNet-50's 512 -> 1024 1x1/2:
// 57 GFLOP/s read in place, 78 packed; oneDNN 57 on the same buffers).
bool pixels_share_l1_sets(int64_t stride, int64_t rows) {
  const int64_t positions = kL1SetSpanBytes / std::gcd(stride * int64_t{sizeof(float)}, kL1SetSpanBytes);
  return ceil_div(rows, positions) > kL1Ways;
}
constexpr int64_t kBlockBytes = 512 << 10;
constexpr int64_t kDeepBlockBytes = 2 << 20;
constexpr int64_t kBlockMarginBytes = 128 << 10;
constexpr int64_t kMinBlockRows = 4;

// The shape im2win runs, as its weights were packed: the shape itself in group sets
// (group_sets.h) where it has them, else with small groups merged (conv_common.h). The choice
// is made on the caller's shape: a merged depthwise shape may have 16 channels per group, but
// its weights are merged panels, not sets.
struct Im2winShape {
  ConvParams p;
  bool group_sets;
};
Im2winShape im2win_shape(const ConvParams& p) {
  if (group_set_width(p) > 0) return {p, true};
  return {merge_small_groups(p), false};
}

// Everything derived from ConvParams once per call: shapes, blocking, and where a pixel's
// receptive field lies in the window row (or the input row, see reads_input_in_place()).
struct Geometry {
  // p as im2win runs it (im2win_shape()), with group sets or without.
  Geometry(const ConvParams& p, bool group_sets);

  int64_t ho, wo;
  // Group sets (group_sets.h; 0: none): B, and the window's groups (a window holds one group,
  // or one panel of 2B group-set groups: then its "group" below is that panel).
  int64_t set_b;
  int64_t wgroups;
  int64_t cg;                              // floats of a window cell: Cg, or Cg * 2B
  int64_t c_steps;                         // K steps of a window cell: Cg
  int64_t step;                            // floats of a pixel's run per K step: 1, or 2B
  int64_t cog;                             // output channels of a window's group (32 for group sets)
  int64_t wp;                              // window columns (padded input columns the windows read)
  int64_t row_floats;                      // one window row: wp * Kh * cg
  int64_t k;                               // Kw * Kh * Cg, the dot-product length (K steps)
  int64_t panels;                          // weight panels per group: ceil(Cog / kPanel)
  bool in_place;                           // windows read straight from the input (Kh = 1, no padding)
  int64_t block_rows;                      // output rows per window block
  int64_t pixel_stride;                    // floats between the runs of consecutive output pixels of a row
  int64_t segments, seg_len, seg_stride;   // a pixel's run as the micro-kernel walks it (seg_len in K steps)
  bool weights_fit_l2;                     // one group's packed weights fit l2_weight_bytes()
  int64_t full_rows_begin, full_rows_end;  // output rows whose Kh taps all lie in the input
  // Taps (kw) of output column 0 that lie in the left padding, and of column Wo-1 in the right
  // padding: a tile starting or ending there skips them (TileArgs::skip_first, skip_last).
  int64_t left_pad_taps, right_pad_taps;
  // The runs of consecutive output pixels lie evenly spaced through whole row runs, rows
  // included (in place, rows as long as the input's: a stride-1 1x1 convolution): a run's tiles
  // may be cut every MR pixels and computed several per kernel call (TileArgs::tiles).
  bool affine_runs;
  // In place, with weights that dwarf the pixels they meet (weights_dwarf_pixels(), conv_common.h):
  // computed panel by panel (shared blocks) even where the weights fit L2.
  bool panel_major;

  int64_t workspace_floats() const { return in_place ? 0 : block_rows * row_floats; }
};

// Kh = 1 and no padding: window row oh is input row oh*sh itself, already [x][c].
bool reads_input_in_place(const ConvParams& p) {
  return p.kernel_h == 1 && p.pad_top == 0 && p.pad_bottom == 0 && p.pad_left == 0 && p.pad_right == 0;
}

Geometry::Geometry(const ConvParams& p, bool group_sets) {
  ho = p.out_h();
  wo = p.out_w();
  set_b = group_sets ? group_set_width(p) : 0;
  step = set_b > 0 ? 2 * set_b : 1;
  wgroups = ceil_div(p.groups, step);
  c_steps = p.in_channels_per_group();
  cg = c_steps * step;
  cog = set_b > 0 ? kPanel : p.out_channels_per_group();
  wp = (wo - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
  row_floats = wp * p.kernel_h * cg;
  k = p.kernel_w * p.kernel_h * c_steps;
  panels = ceil_div(cog, kPanel);
  const int64_t weight_bytes = cog * k * int64_t{sizeof(float)};  // one group's, packed
  weights_fit_l2 = weight_bytes <= l2_weight_bytes();
  in_place = set_b == 0 && reads_input_in_place(p);  // group sets need their cells transposed
  // oh*sh - pad_top >= 0 and oh*sh - pad_top + (Kh-1)*dh <= H - 1 (empty when no row is full).
  full_rows_begin = ceil_div(p.pad_top, p.stride_h);
  const int64_t last_start = p.in_h - 1 - (p.kernel_h - 1) * p.dilation_h + p.pad_top;
  full_rows_end = last_start < 0 ? 0 : std::min(ho, last_start / p.stride_h + 1);
  full_rows_end = std::max(full_rows_end, full_rows_begin);
  // Column 0 reads input columns kw*dw - pad_left: negative for kw < ceil(pad_left / dw).
  // Column Wo-1 reads (Wo-1)*sw - pad_left + kw*dw: past the input for
  // kw >= ceil((W + pad_left - (Wo-1)*sw) / dw).
  left_pad_taps = std::min<int64_t>(p.kernel_w, ceil_div(p.pad_left, p.dilation_w));
  const int64_t right_num = p.in_w + p.pad_left - (wo - 1) * p.stride_w;
  right_pad_taps = p.kernel_w - std::min<int64_t>(p.kernel_w, right_num <= 0 ? 0 : ceil_div(right_num, p.dilation_w));
  if (in_place) {
    // Pixel runs live in the input: channels of a pixel are C apart from the next pixel's.
    block_rows = ho;
    pixel_stride = p.stride_w * p.in_channels;
    const bool contiguous = cg == p.in_channels && p.dilation_w == 1;
    segments = contiguous ? 1 : p.kernel_w;
    seg_len = contiguous ? k : cg;
    seg_stride = p.dilation_w * p.in_channels;
    affine_runs = left_pad_taps == 0 && right_pad_taps == 0 && p.stride_h * p.in_w == wo * p.stride_w;
    const int64_t pixel_bytes = ho * wo * k * int64_t{sizeof(float)};  // what one image's tiles read
    panel_major = weights_dwarf_pixels(weight_bytes, pixel_bytes);
  } else {
    affine_runs = false;
    panel_major = false;
    const int64_t two_panels = 2 * kPanel * k * int64_t{sizeof(float)};
    const int64_t l2 = weight_bytes > kDeepBlockBytes ? std::max(kDeepBlockBytes, l2_bytes()) : l2_bytes();
    const int64_t budget =
        weights_fit_l2 ? kSmallBlockBytes : std::max(kBlockBytes, l2 - two_panels - kBlockMarginBytes);
    const int64_t max_rows = std::max<int64_t>(kMinBlockRows, budget / (row_floats * int64_t{sizeof(float)}));
    block_rows = ceil_div(ho, ceil_div(ho, max_rows));
    pixel_stride = p.stride_w * p.kernel_h * cg;
    segments = p.dilation_w == 1 ? 1 : p.kernel_w;
    seg_len = k / segments;
    seg_stride = p.dilation_w * p.kernel_h * cg;
  }
}

// Copies n floats with vector moves, the last one overlapping the previous when n is not a
// multiple of the width; narrower moves for short runs. Exact: nothing outside [0, n) is
// read or written.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void copy_exact(float* d, const float* s, int64_t n) {
  if constexpr (kLanes > 4) {
    if (n < kLanes) return copy_exact<kLanes / 2>(d, s, n);
  } else if (n < kLanes) {
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store<kLanes>(d + i, load<kLanes>(s + i));
  if (i < n) store<kLanes>(d + n - kLanes, load<kLanes>(s + n - kLanes));
}

template <int kLanes>
WINFER_ALWAYS_INLINE inline void zero_exact(float* d, int64_t n) {
  if constexpr (kLanes > 4) {
    if (n < kLanes) return zero_exact<kLanes / 2>(d, n);
  } else if (n < kLanes) {
    for (int64_t i = 0; i < n; ++i) d[i] = 0.f;
    return;
  }
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store<kLanes>(d + i, Vec<kLanes>{});
  if (i < n) store<kLanes>(d + n - kLanes, Vec<kLanes>{});
}

// The same in whole 4-float vectors: may read and write up to 3 floats past n. Thin inputs
// (C = 3 in a stem) make the transform millions of 12-byte copies, which this turns into one
// 16-byte move each, where copy_exact needs three and memcpy a call.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void copy_rounded(float* d, const float* s, int64_t n) {
  int64_t i = 0;
  if constexpr (kLanes > 4)
    for (; i + kLanes <= n; i += kLanes) store<kLanes>(d + i, load<kLanes>(s + i));
  for (; i < n; i += 4) store<4>(d + i, load<4>(s + i));
}

template <int kLanes>
WINFER_ALWAYS_INLINE inline void zero_rounded(float* d, int64_t n) {
  int64_t i = 0;
  if constexpr (kLanes > 4)
    for (; i + kLanes <= n; i += kLanes) store<kLanes>(d + i, Vec<kLanes>{});
  for (; i < n; i += 4) store<4>(d + i, Vec<4>{});
}

// One tap of a window row: dst[x * Kh * Cg ...] = the Cg channels of input pixel
// (row in_row, column x - pad_left), zeros for columns in the padding or when in_row is null
// (the tap's input row is padding). TapCopy::kRounded copies in whole 4-float vectors, which may
// spill up to 3 floats into the next taps of the same column (filled after this one) and read
// up to 3 floats past a pixel's channels (never past image_end).
enum class TapCopy { kExact, kRounded, kOneVector };  // kOneVector: kRounded with Cg <= 4

template <int kLanes, TapCopy kHow>
WINFER_ALWAYS_INLINE inline void fill_tap(const ConvParams& p, const Geometry& geo, const float* in_row,
                                          const float* image_end, float* dst) {
  const int64_t cg = geo.cg, x_stride = p.kernel_h * cg, c_stride = p.in_channels;
  const int64_t rounded = (cg + 3) / 4 * 4;
  // Window columns [x0, x1) map to input columns [0, W) (x = ix + pad_left).
  const int64_t x0 = in_row != nullptr ? std::min(p.pad_left, geo.wp) : geo.wp;
  int64_t x1 = in_row != nullptr ? std::min(p.pad_left + p.in_w, geo.wp) : geo.wp;
  const int64_t x_end = x1;
  // A rounded read of the image's last pixel could pass its end: copy that one exactly.
  if (kHow != TapCopy::kExact && x1 > x0 && in_row + (x1 - 1 - x0) * c_stride + rounded > image_end) --x1;
  float* d = dst;
  for (int64_t x = 0; x < x0; ++x, d += x_stride) {
    if constexpr (kHow == TapCopy::kExact)
      zero_exact<kLanes>(d, cg);
    else if constexpr (kHow == TapCopy::kRounded)
      zero_rounded<kLanes>(d, cg);
    else
      store<4>(d, Vec<4>{});
  }
  const float* s = in_row;
  for (int64_t x = x0; x < x1; ++x, d += x_stride, s += c_stride) {
    if constexpr (kHow == TapCopy::kExact)
      copy_exact<kLanes>(d, s, cg);
    else if constexpr (kHow == TapCopy::kRounded)
      copy_rounded<kLanes>(d, s, cg);
    else
      store<4>(d, load<4>(s));
  }
  if (x1 < x_end) {
    copy_exact<kLanes>(d, s, cg);
    d += x_stride;
  }
  for (int64_t x = x_end; x < geo.wp; ++x, d += x_stride) {
    if constexpr (kHow == TapCopy::kExact)
      zero_exact<kLanes>(d, cg);
    else if constexpr (kHow == TapCopy::kRounded)
      zero_rounded<kLanes>(d, cg);
    else
      store<4>(d, Vec<4>{});
  }
}

// A stem on 3 channels (Cg = 3, AVX-512) with Kh = 3 or 7: the window row column by column, each
// column's 3*Kh floats ([kh][c]) gathered from Kh 4-float loads (one per tap's input row; the
// float past the pixel's 3 is dropped) into registers and written by one or two 16-float stores,
// whose extra floats land on the next column, written after it (the row's last column, and a
// pixel whose 4-float read would pass the image's end, go exactly). Tap by tap (below), the
// column's last tap went float by float: 21% of ShuffleNetV2's 3x3/2 stem's time, 6% of VGG-16's
// 3 -> 64 (perf, session 35); the 7x7/2 stem of the ResNets spent 9% of its time in 7 tap-by-tap
// passes of 4-float stores, a quarter of them split across cache lines (perf, session 37).
template <int kTaps>
struct RgbColumn;

template <>
struct RgbColumn<3> {
  static constexpr int kStores = 1;
  WINFER_ALWAYS_INLINE static void gather(const Vec<4> (&t)[3], Vec<16> (&out)[kStores]) {
    const Vec<8> t01 = __builtin_shufflevector(t[0], t[1], 0, 1, 2, 4, 5, 6, 7, 7);
    const Vec<8> t22 = __builtin_shufflevector(t[2], t[2], 0, 1, 2, 3, 3, 3, 3, 3);
    out[0] = __builtin_shufflevector(t01, t22, 0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 11, 11, 11, 11, 11, 11);
  }
};

template <>
struct RgbColumn<7> {
  static constexpr int kStores = 2;  // floats 0-15 and 16-20 (+ 11 that land on the next column)
  WINFER_ALWAYS_INLINE static void gather(const Vec<4> (&t)[7], Vec<16> (&out)[kStores]) {
    const Vec<8> t01 = __builtin_shufflevector(t[0], t[1], 0, 1, 2, 4, 5, 6, 7, 7);
    const Vec<8> t23 = __builtin_shufflevector(t[2], t[3], 0, 1, 2, 4, 5, 6, 7, 7);
    const Vec<8> t45 = __builtin_shufflevector(t[4], t[5], 0, 1, 2, 4, 5, 6, 7, 7);
    const Vec<8> t66 = __builtin_shufflevector(t[6], t[6], 0, 1, 2, 3, 3, 3, 3, 3);
    // Taps 0-3 in floats 0-11 of a, taps 4-6 in floats 0-8 of b.
    const Vec<16> a = __builtin_shufflevector(t01, t23, 0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 6, 7, 14, 15);
    const Vec<16> b = __builtin_shufflevector(t45, t66, 0, 1, 2, 3, 4, 5, 8, 9, 10, 6, 7, 11, 12, 13, 14, 15);
    out[0] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19);
    out[1] = __builtin_shufflevector(b, b, 4, 5, 6, 7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8);
  }
};

// (A template, as the other transforms, so that it is compiled in its caller's ISA: AVX-512 only.)
template <int kLanes, int kTaps>
WINFER_ALWAYS_INLINE inline void transform_rgb_row(const ConvParams& p, const Geometry& geo, const float* in_image,
                                                   int64_t g, int64_t oh, float* dst) {
  constexpr int64_t kC = 3, kColumn = kTaps * kC;
  constexpr int kStores = RgbColumn<kTaps>::kStores;
  alignas(16) static const float kZeros[4] = {};
  const int64_t c_stride = p.in_channels;
  // Each tap's input pixel at column x0 (+ g * 3) and the step to the next column; a tap in the
  // padding reads zeros, step 0.
  const float* src[kTaps];
  int64_t step[kTaps];
  const int64_t x0 = std::min(p.pad_left, geo.wp), x1 = std::max(x0, std::min(p.pad_left + p.in_w, geo.wp));
  for (int64_t kh = 0; kh < kTaps; ++kh) {
    const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    const bool in = ih >= 0 && ih < p.in_h;
    src[kh] = in ? in_image + (ih * p.in_w + x0 - p.pad_left) * c_stride + g * kC : kZeros;
    step[kh] = in ? c_stride : 0;
  }
  Vec<16> column[kStores];
  float* d = dst;
  for (int64_t x = 0; x < x0; ++x, d += kColumn)
    for (int k = 0; k < kStores; ++k) store<16>(d + 16 * k, Vec<16>{});
  // Columns [x0, fast_end): every read in the image (a pixel's 4th float is the next pixel's or
  // channel's: the last input column goes below) and the stores' spill on a later column.
  const int64_t fast_end = std::max(x0, std::min(x1 - 1, geo.wp - 1));
  Vec<4> t[kTaps];
  for (int64_t x = x0; x < fast_end; ++x, d += kColumn) {
    for (int64_t kh = 0; kh < kTaps; ++kh) {
      t[kh] = load<4>(src[kh]);
      src[kh] += step[kh];
    }
    RgbColumn<kTaps>::gather(t, column);
    for (int k = 0; k < kStores; ++k) store<16>(d + 16 * k, column[k]);
  }
  // The rest, reading 3 floats a tap and the last column written exactly.
  for (int64_t x = fast_end; x < geo.wp; ++x, d += kColumn) {
    for (int k = 0; k < kStores; ++k) column[k] = Vec<16>{};
    if (x < x1) {
      for (int64_t kh = 0; kh < kTaps; ++kh) {
        t[kh] = Vec<4>{src[kh][0], src[kh][1], src[kh][2], 0.f};
        src[kh] += step[kh];
      }
      RgbColumn<kTaps>::gather(t, column);
    }
    if (x + 1 < geo.wp) {
      for (int k = 0; k < kStores; ++k) store<16>(d + 16 * k, column[k]);
    } else {
      alignas(64) float last[16 * kStores];
      for (int k = 0; k < kStores; ++k) store<16>(last + 16 * k, column[k]);
      std::memcpy(d, last, kColumn * sizeof(float));
    }
  }
}

// Fills the window row of output row oh (image in_image, group g) into dst [wp][Kh][Cg]:
// column x, tap kh holds input pixel (oh*sh - pad_top + kh*dh, x - pad_left), or zeros in the
// padding. Tap by tap, in order, so that a tap may spill into the later taps of its column
// (TapCopy::kRounded) as long as the spill stays in the column: for Cg = 3, Kh = 7, taps 0-5
// copy one 16-byte vector per column, tap 6 copies exactly.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void transform_row_body(const ConvParams& p, const Geometry& geo, const float* in_image,
                                                    int64_t g, int64_t oh, float* dst) {
  const int64_t cg = geo.cg, rounded = (cg + 3) / 4 * 4;
  if constexpr (kLanes == 16) {
    if (cg == 3 && p.kernel_h == 3) return transform_rgb_row<kLanes, 3>(p, geo, in_image, g, oh, dst);
    if (cg == 3 && p.kernel_h == 7) return transform_rgb_row<kLanes, 7>(p, geo, in_image, g, oh, dst);
  }
  const float* const image_end = in_image + p.in_h * p.in_w * p.in_channels;
  for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
    const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    const float* in_row = ih >= 0 && ih < p.in_h ? in_image + ih * p.in_w * p.in_channels + g * cg : nullptr;
    float* d = dst + kh * cg;
    if ((p.kernel_h - kh) * cg < rounded)
      fill_tap<kLanes, TapCopy::kExact>(p, geo, in_row, image_end, d);
    else if (cg <= 4)
      fill_tap<kLanes, TapCopy::kOneVector>(p, geo, in_row, image_end, d);
    else
      fill_tap<kLanes, TapCopy::kRounded>(p, geo, in_row, image_end, d);
  }
}

// Group sets (group_sets.h): cell (x, kh) of panel q's window holds [c][j], channel c of the
// panel's group j, the input pixel's [j][c] transposed; zeros for absent groups and in the
// padding (src null). Every zoo shape's cell is 32 floats (Cg * 2B = 32 with Cg = Cog): two
// vector loads and two two-register shuffles (vpermt2ps on AVX-512); other cells go float by
// float.
template <int kPerPanel>
struct SetCellShuffle {
  // Output float i (c = i / P, j = i % P) comes from input float j * Cg + c, Cg = 32 / P.
  static constexpr int from(int i) { return (i % kPerPanel) * (32 / kPerPanel) + i / kPerPanel; }
  template <int... kI>
  WINFER_ALWAYS_INLINE static void run(const Vec<16>& a, const Vec<16>& b, float* cell,
                                       std::integer_sequence<int, kI...>) {
    store<16>(cell, __builtin_shufflevector(a, b, from(kI)...));
    store<16>(cell + 16, __builtin_shufflevector(a, b, from(kI + 16)...));
  }
  // The cell of the input's 32 floats a, b.
  WINFER_ALWAYS_INLINE static void run(const Vec<16>& a, const Vec<16>& b, float* cell) {
    run(a, b, cell, std::make_integer_sequence<int, 16>{});
  }
  WINFER_ALWAYS_INLINE static void run(const float* src, float* cell) { run(load<16>(src), load<16>(src + 16), cell); }
};

// The same cell in 8-lane vectors (AVX2, where GCC lowered the 16-lane shuffles above into
// stack round trips): output vector k gathers from all four input vectors, so each is a
// shuffle of the first two, one of the last two, and a blend of the pair.
template <int kPerPanel>
struct SetCellShuffle8 {
  static constexpr int from(int i) { return SetCellShuffle<kPerPanel>::from(i); }
  static constexpr int low(int i) { return from(i) < 16 ? from(i) : 0; }
  static constexpr int high(int i) { return from(i) >= 16 ? from(i) - 16 : 0; }
  static constexpr int pick(int i) { return from(i) < 16 ? i % 8 : 8 + i % 8; }
  template <int kK, int... kE>
  WINFER_ALWAYS_INLINE static Vec<8> out(const Vec<8> (&x)[4], std::integer_sequence<int, kE...>) {
    const Vec<8> a = __builtin_shufflevector(x[0], x[1], low(8 * kK + kE)...);
    const Vec<8> b = __builtin_shufflevector(x[2], x[3], high(8 * kK + kE)...);
    return __builtin_shufflevector(a, b, pick(8 * kK + kE)...);
  }
  WINFER_ALWAYS_INLINE static void run(const float* src, float* cell) {
    const Vec<8> x[4] = {load<8>(src), load<8>(src + 8), load<8>(src + 16), load<8>(src + 24)};
    run(x, cell);
  }
  // The cell of the input's 32 floats x.
  WINFER_ALWAYS_INLINE static void run(const Vec<8> (&x)[4], float* cell) {
    constexpr auto e = std::make_integer_sequence<int, 8>{};
    store<8>(cell, out<0>(x, e));
    store<8>(cell + 8, out<1>(x, e));
    store<8>(cell + 16, out<2>(x, e));
    store<8>(cell + 24, out<3>(x, e));
  }
};

// The first n floats at s (n a multiple of 4 below 32) and zeros up to 32, as eight 4-float
// vectors in registers. (Through a stack buffer before: 4-float stores, then 64-byte loads of
// the same bytes, which no store forwards to: 45% of the window transform of RegNet's grouped
// 48-channel layer stalled on them, perf, session 25.)
WINFER_ALWAYS_INLINE inline void load_fours(const float* s, int64_t n, Vec<4> (&q)[8]) {
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) q[i] = 4 * i < n ? load<4>(s + 4 * i) : Vec<4>{};
}
WINFER_ALWAYS_INLINE inline Vec<8> join(const Vec<4>& lo, const Vec<4>& hi) {
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
}
WINFER_ALWAYS_INLINE inline Vec<16> join(const Vec<8>& lo, const Vec<8>& hi) {
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// A last panel's cell, its absent groups' floats zeros (present * cg_in of 32 floats given).
template <int kLanes, int kPerPanel>
WINFER_ALWAYS_INLINE inline void fill_partial_set_cell(const float* src, int64_t n, float* cell) {
  Vec<4> q[8];
  load_fours(src, n, q);
  const Vec<8> x[4] = {join(q[0], q[1]), join(q[2], q[3]), join(q[4], q[5]), join(q[6], q[7])};
  if constexpr (kLanes == 8)
    SetCellShuffle8<kPerPanel>::run(x, cell);
  else
    SetCellShuffle<kPerPanel>::run(join(x[0], x[1]), join(x[2], x[3]), cell);
}

template <int kLanes>
WINFER_ALWAYS_INLINE inline void fill_set_cell(const float* src, int64_t cg_in, int64_t present, int64_t per_panel,
                                               float* cell) {
  if (cg_in * per_panel == 32) {
    if (src == nullptr) {
      store<16>(cell, Vec<16>{});
      store<16>(cell + 16, Vec<16>{});
      return;
    }
    if (present < per_panel) {
      const int64_t n = present * cg_in;
      if (per_panel == 2) return fill_partial_set_cell<kLanes, 2>(src, n, cell);
      if (per_panel == 4) return fill_partial_set_cell<kLanes, 4>(src, n, cell);
      if (per_panel == 8) return fill_partial_set_cell<kLanes, 8>(src, n, cell);
    }
    if constexpr (kLanes == 8) {
      if (per_panel == 2) return SetCellShuffle8<2>::run(src, cell);
      if (per_panel == 4) return SetCellShuffle8<4>::run(src, cell);
      if (per_panel == 8) return SetCellShuffle8<8>::run(src, cell);
    } else {
      if (per_panel == 2) return SetCellShuffle<2>::run(src, cell);
      if (per_panel == 4) return SetCellShuffle<4>::run(src, cell);
      if (per_panel == 8) return SetCellShuffle<8>::run(src, cell);
    }
  }
  for (int64_t c = 0; c < cg_in; ++c)
    for (int64_t j = 0; j < per_panel; ++j)
      cell[c * per_panel + j] = src != nullptr && j < present ? src[j * cg_in + c] : 0.f;
}

// The window row of output row oh of panel q (group sets), [wp][Kh][Cg][2B]: as
// transform_row_body, cell by cell.
// transform_set_row_body() for a panel of whole 32-float cells (every set layer of the zoo): per
// tap row, the padding columns zeroed and the others shuffled with pointers that step a pixel
// at a time. Cell by cell through fill_set_cell, each cell's bounds checks, index arithmetic
// and branches cost more than its shuffles: 35% of RegNet-Y-400MF's 3x3/2 grouped layer
// (block1-0.f.b.0) in the transform (perf, session 35). A last panel with absent groups
// (`present` of kPerPanel: every RegNetY-400MF layer has one, and half of the panels of its
// 48-channel layer are) goes the same way, its cells from `present` groups' floats and zeros;
// until session 39 it went cell by cell, and the transform was still 36% of that layer (perf).
template <int kLanes, int kPerPanel>
WINFER_ALWAYS_INLINE inline void transform_full_set_row(const ConvParams& p, const Geometry& geo, const float* in_image,
                                                        int64_t q, int64_t present, int64_t oh, float* dst) {
  constexpr int64_t kCell = 32;
  const int64_t x_stride = p.kernel_h * kCell, c_stride = p.in_channels;
  const int64_t x0 = std::min(p.pad_left, geo.wp), x1 = std::max(x0, std::min(p.pad_left + p.in_w, geo.wp));
  for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
    const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    float* d = dst + kh * kCell;
    const bool row_in = ih >= 0 && ih < p.in_h;
    const int64_t zero_end = row_in ? x0 : geo.wp;
    int64_t x = 0;
    for (; x < zero_end; ++x, d += x_stride) {
      store<16>(d, Vec<16>{});
      store<16>(d + 16, Vec<16>{});
    }
    if (row_in) {
      const float* src = in_image + (ih * p.in_w + (x0 - p.pad_left)) * c_stride + q * kCell;
      if (present < kPerPanel) {
        const int64_t n = present * (kCell / kPerPanel);
        for (; x < x1; ++x, d += x_stride, src += c_stride) fill_partial_set_cell<kLanes, kPerPanel>(src, n, d);
      }
      for (; x < x1; ++x, d += x_stride, src += c_stride) {
        if constexpr (kLanes == 8)
          SetCellShuffle8<kPerPanel>::run(src, d);
        else
          SetCellShuffle<kPerPanel>::run(src, d);
      }
    }
    for (; x < geo.wp; ++x, d += x_stride) {
      store<16>(d, Vec<16>{});
      store<16>(d + 16, Vec<16>{});
    }
  }
}

template <int kLanes>
WINFER_ALWAYS_INLINE inline void transform_set_row_body(const ConvParams& p, const Geometry& geo, const float* in_image,
                                                        int64_t q, int64_t oh, float* dst) {
  const int64_t per_panel = geo.step, cg_in = geo.c_steps;
  const int64_t present = std::min(per_panel, p.groups - q * per_panel);
  if (cg_in * per_panel == 32 && geo.cg == 32) {
    if (per_panel == 2) return transform_full_set_row<kLanes, 2>(p, geo, in_image, q, present, oh, dst);
    if (per_panel == 4) return transform_full_set_row<kLanes, 4>(p, geo, in_image, q, present, oh, dst);
    if (per_panel == 8) return transform_full_set_row<kLanes, 8>(p, geo, in_image, q, present, oh, dst);
  }
  for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
    const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    const bool row_in = ih >= 0 && ih < p.in_h;
    const float* in_row = row_in ? in_image + ih * p.in_w * p.in_channels + q * per_panel * cg_in : nullptr;
    for (int64_t x = 0; x < geo.wp; ++x) {
      const int64_t ix = x - p.pad_left;
      const float* src = row_in && ix >= 0 && ix < p.in_w ? in_row + ix * p.in_channels : nullptr;
      fill_set_cell<kLanes>(src, cg_in, present, per_panel, dst + (x * p.kernel_h + kh) * geo.cg);
    }
  }
}

// Window rows [first, last) of output rows into slots first - r0 .. last - 1 - r0.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void transform_rows_body(const ConvParams& p, const Geometry& geo, const float* in_image,
                                                     int64_t g, int64_t r0, int64_t first, int64_t last,
                                                     float* window) {
  for (int64_t oh = first; oh < last; ++oh) {
    if (geo.set_b > 0)
      transform_set_row_body<kLanes>(p, geo, in_image, g, oh, window + (oh - r0) * geo.row_floats);
    else
      transform_row_body<kLanes>(p, geo, in_image, g, oh, window + (oh - r0) * geo.row_floats);
  }
}

WINFER_TARGET_AVX512 void transform_rows_avx512(const ConvParams& p, const Geometry& geo, const float* in_image,
                                                int64_t g, int64_t r0, int64_t first, int64_t last, float* window) {
  transform_rows_body<16>(p, geo, in_image, g, r0, first, last, window);
}
WINFER_TARGET_AVX2 void transform_rows_avx2(const ConvParams& p, const Geometry& geo, const float* in_image, int64_t g,
                                            int64_t r0, int64_t first, int64_t last, float* window) {
  transform_rows_body<8>(p, geo, in_image, g, r0, first, last, window);
}
void transform_rows_generic(const ConvParams& p, const Geometry& geo, const float* in_image, int64_t g, int64_t r0,
                            int64_t first, int64_t last, float* window) {
  transform_rows_body<4>(p, geo, in_image, g, r0, first, last, window);
}

using TransformRowsFn = void (*)(const ConvParams&, const Geometry&, const float*, int64_t, int64_t, int64_t, int64_t,
                                 float*);
TransformRowsFn pick_transform_rows(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return transform_rows_avx512;
    case Isa::kAvx2: return transform_rows_avx2;
    default: return transform_rows_generic;
  }
}

// K steps [k0, k1) of a single-segment run (Im2winRun::chunked()); `first` starts from the
// bias (and the fused residual), a later chunk from the output so far; `last` applies the
// activation. k1 = 0: the whole K in one pass.
struct KChunk {
  int64_t k0 = 0, k1 = 0;
  bool first = true, last = true;
  // Where the tile's pixels' chunks are copied first, one after the other with a cache line
  // between them (kChunkPackPad), or null: read in place.
  float* pack = nullptr;
  // The weights the thread reads next (Im2winRun::chunked: the next block-and-chunk's, rows
  // [next_k0, next_k1) of panels [next_panel0, next_panel1)), of which this tile prefetches share
  // `share` of `shares` into L2, panel by panel, while it computes: that unit's first tile then
  // finds its weights in L2 instead of streaming them from memory at the FMAs' pace. No next unit:
  // next_panel1 = next_panel0.
  int64_t next_panel0 = 0, next_panel1 = 0, next_k0 = 0, next_k1 = 0, share = 0, shares = 1;
};

// A run of consecutive output rows of one image and group, and where their window rows are:
// output row oh0 + i is in window slot slot0 + i.
struct RowRun {
  int64_t n, g, oh0, slot0, rows;
};

// One run(): which rows and channels each task computes, in which order, and when the threads
// wait for each other.
class Im2winRun {
 public:
  Im2winRun(const Im2winShape& shape, const float* input, const float* packed, const float* bias, const float* residual,
            float* output, float* window, Activation act)
      : p_(shape.p),
        geo_(shape.p, shape.group_sets),
        uk_(tile_kernels(cpu_isa())),
        transform_rows_(pick_transform_rows(cpu_isa())),
        input_(input),
        packed_(packed),
        bias_(bias),
        residual_(residual),
        output_(output),
        window_(window),
        clip_(activation_clamp(act)),
        sets_(shape.p) {
    // Every panel's bias in lane order, once per run where it fits the object (every zoo
    // layer): made per tile it cost 6% of a RegNet layer's time.
    lane_biases_cached_ = geo_.set_b > 0 && sets_.panels * kPanel <= kCachedLaneBiasFloats;
    if (lane_biases_cached_)
      for (int64_t q = 0; q < sets_.panels; ++q) lane_bias(sets_, q, bias_, lane_biases_ + q * kPanel);
    plan_k_chunks();
  }

  // The whole convolution on up to `team` threads (thread_pool.h).
  void run(int team) const {
    if (chunked_) {
      chunked(team);
    } else if (own_rows_pay(team) && !geo_.panel_major) {
      const int64_t units = p_.batch * geo_.wgroups * geo_.ho;
      parallel_pieces(team, units, pieces_for(team, units, p_.flops() / 2),
                      [&](int64_t u_begin, int64_t u_end, int slot) { own_rows(u_begin, u_end, slot, team); });
    } else {
      shared_blocks(team);
    }
  }

 private:
  // Own rows: the output rows (every image and group) are cut into a few pieces per thread;
  // a thread takes a piece and, one step of a few rows at a time, transforms them into window
  // slots only it uses and computes them for every channel, tile by tile. No barriers, and a
  // row's window is still in L1/L2 when it is read. Needs a slot per thread, a fair split of the rows, and weights that
  // stay in L2 while the tiles stream through them (every tile reads all of them).
  bool own_rows_pay(int team) const {
    const int64_t units = p_.batch * geo_.wgroups * geo_.ho;
    const bool slots = geo_.in_place || team <= geo_.block_rows;
    const bool fair = ceil_div(units, team) * team * 8 <= units * 9;  // at most 12.5% over the mean
    return slots && fair && geo_.weights_fit_l2;
  }

  // Rows [u_begin, u_end) (counted over every image and group) on the thread of slot `slot`.
  void own_rows(int64_t u_begin, int64_t u_end, int slot, int team) const {
    const int64_t slot0 = geo_.block_rows * slot / team;
    // The thread's slots; reading the input in place needs none, and then a step is any number of
    // rows (with fewer rows than threads, e.g. a squeeze-excite 1x1 convolution on a 1x1 map at
    // batch 8 and 2 threads, the slot share of thread 0 is 0 rows: a step of 0 never ended).
    const int64_t step_rows = geo_.in_place ? geo_.ho : geo_.block_rows * (slot + 1) / team - slot0;
    for (int64_t u = u_begin; u < u_end;) {
      const int64_t oh = u % geo_.ho, ng = u / geo_.ho;
      RowRun run{ng / geo_.wgroups, ng % geo_.wgroups, oh, slot0, std::min({step_rows, u_end - u, geo_.ho - oh})};
      if (!geo_.in_place) transform(run);
      compute(run, 0, 1, /*tile_major=*/true);
      u += run.rows;
    }
  }

  // Shared blocks: for each block of window rows, the threads transform disjoint rows, then
  // (once all are done) compute disjoint parts of the (panel, tile) pairs panel by panel (each
  // part streams only its share of the weights, once per block); the next block overwrites
  // the window when they are all done. For deep layers (weights beyond L2, few output rows).
  void shared_blocks(int team) const {
    for (int64_t n = 0; n < p_.batch; ++n)
      for (int64_t g = 0; g < geo_.wgroups; ++g)
        for (int64_t r0 = 0; r0 < geo_.ho; r0 += geo_.block_rows) {
          const int64_t rows = std::min(geo_.block_rows, geo_.ho - r0);
          if (!geo_.in_place)
            parallel_pieces(team, rows, pieces_for(team, rows, rows * geo_.row_floats),
                            [&](int64_t first, int64_t last, int) {
                              transform({n, g, r0 + first, first, last - first});
                            });
          const RowRun run{n, g, r0, 0, rows};
          const int64_t parts = pieces_for(team, geo_.panels * rows * geo_.wo, rows * geo_.wo * geo_.k * geo_.cog);
          auto part = [&](int64_t k, int) {
            compute(run, static_cast<int>(k), static_cast<int>(parts), /*tile_major=*/false);
          };
          parallel_tasks(team, parts, TaskFn(part));
        }
  }

  // K chunks of an in-place run (kChunkTileBytes): chunk_len_ K steps each (a whole number of
  // cache lines of a pixel's run), and the panels in blocks_ blocks whose chunk weights fit the
  // L2 share kChunkWeightsL2Divisor leaves them. chunks_ = 1: one pass over K, as elsewhere.
  void plan_k_chunks() {
    chunks_ = 1;
    chunk_len_ = geo_.k;
    blocks_ = 1;
    chunked_ = false;
    if (!geo_.in_place || geo_.segments != 1 || geo_.set_b > 0) return;
    const int64_t mr = uk_.max_rows, tile_bytes = mr * geo_.k * int64_t{sizeof(float)};
    if (tile_bytes <= kChunkTileBytes && !pixels_share_l1_sets(geo_.pixel_stride, mr)) return;
    chunked_ = true;
    constexpr int64_t kLine = 16;  // floats per cache line
    chunk_len_ = ceil_div(ceil_div(geo_.k, ceil_div(tile_bytes, kChunkTileBytes)), kLine) * kLine;
    chunks_ = ceil_div(geo_.k, chunk_len_);
    const int64_t panel_bytes = chunk_len_ * kPanel * int64_t{sizeof(float)};
    const int64_t max_panels = std::max<int64_t>(1, l2_bytes() / kChunkWeightsL2Divisor / panel_bytes);
    blocks_ = ceil_div(geo_.panels, max_panels);
  }

  // Long-K in-place runs (1x1 layers of 1024 and more input channels): for each block of
  // panels, for each K chunk, every tile computes the chunk for the block's panels, tile by
  // tile, so that the tile's pixels (one chunk of each) stay in L1 while the panels pass and the
  // block's chunk weights stay in L2 while the tiles pass. The first chunk adds the bias (and a
  // fused residual), the later ones add the output so far (TileArgs::residual = out), the last
  // applies the activation. Units are (block, tile) pairs in that order, one contiguous piece per
  // thread: with several blocks each thread streams its blocks' weights only; either way every
  // output element sums the same chunks in the same order whatever the thread count. No
  // workspace, no barrier.
  void chunked(int team) const {
    const int64_t pixels = geo_.ho * geo_.wo, tiles = ceil_div(pixels, uk_.max_rows);
    const int64_t runs = p_.batch * geo_.wgroups, per_block = runs * tiles;
    const SubRun whole{0, geo_.ho, 0, p_.kernel_h};
    parallel_pieces(team, blocks_ * per_block, team, [&](int64_t u_begin, int64_t u_end, int) {
      alignas(64) float pack[kChunkPackFloats];
      for (int64_t u = u_begin; u < u_end;) {
        const int64_t block = u / per_block, end = std::min(u_end, (block + 1) * per_block);
        const int64_t panel0 = geo_.panels * block / blocks_, panel1 = geo_.panels * (block + 1) / blocks_;
        // The next block's panels, if this thread computes some of its tiles.
        const bool next_block = end < u_end;
        const int64_t next_panel0 = panel1, next_panel1 = next_block ? geo_.panels * (block + 2) / blocks_ : panel1;
        for (int64_t c = 0; c < chunks_; ++c) {
          KChunk chunk{c * chunk_len_, std::min(geo_.k, (c + 1) * chunk_len_), c == 0, c + 1 == chunks_, pack};
          if (c + 1 < chunks_) {  // the block's next chunk
            chunk.next_panel0 = panel0;
            chunk.next_panel1 = panel1;
            chunk.next_k0 = chunk.k1;
            chunk.next_k1 = std::min(geo_.k, (c + 2) * chunk_len_);
          } else {  // the next block's first chunk (none: next_panel1 = next_panel0)
            chunk.next_panel0 = next_panel0;
            chunk.next_panel1 = next_panel1;
            chunk.next_k1 = std::min(geo_.k, chunk_len_);
          }
          chunk.shares = end - u;
          for (int64_t v = u; v < end; ++v) {
            const int64_t r = v % per_block / tiles, t = v % tiles;
            const RowRun run{r / geo_.wgroups, r % geo_.wgroups, 0, 0, geo_.ho};
            chunk.share = v - u;
            compute_tile(run, whole, panel0, panel1, pixels * t / tiles, pixels * (t + 1) / tiles, NextPanelShare(), 1,
                         chunk);
          }
        }
        u = end;
      }
    });
  }

  void transform(const RowRun& run) const {
    const float* in_image = input_ + run.n * p_.in_h * p_.in_w * p_.in_channels;
    // transform_rows_ puts row oh in slot oh - r0.
    transform_rows_(p_, geo_, in_image, run.g, run.oh0 - run.slot0, run.oh0, run.oh0 + run.rows, window_);
  }

  // Rows of a run that use the same taps: the rows whose taps all lie in the input, or one
  // row near the top or bottom whose taps outside [kh0, kh1) lie in the padding. A tile never
  // spans two of them, so that it can skip those taps (they multiply the window's zeros):
  // 1/3 of the work of a 3x3 convolution's first and last rows.
  struct SubRun {
    int64_t row0, rows, kh0, kh1;
  };

  // The sub-runs of `run` in order; f(sub) for each until f returns true.
  template <class F>
  void for_each_subrun(const RowRun& run, F f) const {
    for (int64_t r = 0; r < run.rows;) {
      const int64_t oh = run.oh0 + r;
      SubRun sub{r, 1, 0, p_.kernel_h};
      if (oh >= geo_.full_rows_begin && oh < geo_.full_rows_end)
        sub.rows = std::min(run.rows - r, geo_.full_rows_end - oh);
      else
        valid_taps(oh * p_.stride_h - p_.pad_top, p_.dilation_h, p_.kernel_h, p_.in_h, &sub.kh0, &sub.kh1);
      if (f(sub)) return;
      r += sub.rows;
    }
  }

  int64_t tiles_of(const SubRun& sub) const { return ceil_div(sub.rows * geo_.wo, uk_.max_rows); }

  // Calls f(sub, p0, p1) for the tiles of `run` with indices [first, last) (counted over the
  // whole run), in order: balanced runs of at most MR pixels of each sub-run.
  template <class F>
  void for_tiles(const RowRun& run, int64_t first, int64_t last, F f) const {
    int64_t j = 0;
    for_each_subrun(run, [&](const SubRun& sub) {
      const int64_t count = tiles_of(sub), pixels = sub.rows * geo_.wo, base = sub.row0 * geo_.wo;
      for (int64_t t = std::max<int64_t>(first - j, 0); t < count && j + t < last; ++t)
        f(sub, base + pixels * t / count, base + pixels * (t + 1) / count);
      j += count;
      return j >= last;
    });
  }

  // Part `part` of `parts` of the (panel, tile) pairs of a row run, ordered tile by tile (all
  // panels of a tile, while its pixels are in L1) or panel by panel (one weight panel across
  // all tiles, while it is in L2).
  void compute(const RowRun& run, int part, int parts, bool tile_major) const {
    int64_t tiles = 0;
    for_each_subrun(run, [&](const SubRun& sub) { return tiles += tiles_of(sub), false; });
    const int64_t panels = geo_.panels, items = panels * tiles;
    const int64_t first = items * part / parts, last = items * (part + 1) / parts;
    if (first >= last) return;
    if (tile_major) {
      if (const int64_t per_call = affine_tiles_per_call(); per_call >= kAffineMinTilesPerCall)
        return compute_affine(run, first, last, per_call);
      int64_t j = first / panels;
      for_tiles(run, j, (last - 1) / panels + 1, [&](const SubRun& sub, int64_t p0, int64_t p1) {
        compute_tile(run, sub, std::max(first - j * panels, int64_t{0}), std::min(panels, last - j * panels), p0, p1,
                     NextPanelShare());
        ++j;
      });
    } else {
      for (int64_t panel = first / tiles; panel * tiles < last; ++panel) {
        const int64_t j0 = std::max(first - panel * tiles, int64_t{0}), j1 = std::min(last - panel * tiles, tiles);
        // Weights beyond L2 (or run panel by panel, Geometry::panel_major) come from memory: while
        // this panel's tiles compute, each pulls its share of the next panel (if this thread
        // computes it) into L2.
        const bool stream_next = (!geo_.weights_fit_l2 || geo_.panel_major) && (panel + 1) * tiles < last;
        int64_t j = j0;
        for_tiles(run, j0, j1, [&](const SubRun& sub, int64_t p0, int64_t p1) {
          compute_tile(run, sub, panel, panel + 1, p0, p1,
                       stream_next ? NextPanelShare{run.g, panel + 1, j, tiles} : NextPanelShare());
          ++j;
        });
      }
    }
  }

  // Full tiles per kernel call in an affine run (Geometry::affine_runs): as many as keep their
  // pixels in L1 while each column block reads them (kAffineTileBytes); 1: none of this.
  int64_t affine_tiles_per_call() const {
    if (!geo_.affine_runs) return 1;
    return std::max<int64_t>(1, kAffineTileBytes / (uk_.max_rows * geo_.k * int64_t{sizeof(float)}));
  }

  // compute()'s items [first, last) of an affine run, tile by tile: tiles of MR pixels from the
  // run's first, but for the last two, which share the rest evenly when the run does not end
  // on a whole tile (49 pixels: 7 x 6 + 4 + 3, not 8 x 6 + 1: a 1-pixel tile of a long K runs
  // at FMA latency); consecutive full tiles that take every panel go several per kernel call
  // (TileArgs::tiles).
  void compute_affine(const RowRun& run, int64_t first, int64_t last, int64_t per_call) const {
    const int64_t panels = geo_.panels, mr = uk_.max_rows, pixels = run.rows * geo_.wo;
    const int64_t count = ceil_div(pixels, mr), rest = pixels % mr;
    const int64_t whole = rest == 0 ? count : std::max<int64_t>(count - 2, 0);  // tiles of exactly MR pixels
    const int64_t second = (mr + rest) / 2;  // pixels of the last tile after `whole` + 1
    const SubRun sub{0, run.rows, 0, p_.kernel_h};
    for (int64_t j = first / panels, j_end = (last - 1) / panels + 1; j < j_end;) {
      const int64_t panel0 = std::max(first - j * panels, int64_t{0}), panel1 = std::min(panels, last - j * panels);
      int64_t p0 = j * mr, p1 = p0 + mr, tiles = 1;
      if (j >= whole) {  // one of the last two (or the only tile, shorter than MR)
        p0 = j == whole ? whole * mr : pixels - second;
        p1 = j == whole && count - whole == 2 ? pixels - second : pixels;
      } else if (panel0 == 0 && panel1 == panels) {
        while (tiles < per_call && j + tiles < whole && (j + tiles + 1) * panels <= last) ++tiles;
      }
      compute_tile(run, sub, panel0, panel1, p0, p1, NextPanelShare(), tiles);
      j += tiles;
    }
  }

  // Share `share` of `shares` of weight panel `panel` of group g, to prefetch during one tile
  // of the panel before it (panel < 0: nothing).
  struct NextPanelShare {
    int64_t g = 0, panel = -1, share = 0, shares = 1;
  };

  // Pixels [p0, p1) of the run (counted from its first pixel, all in sub-run `sub`) x the
  // channels of panels [panel0, panel1); `share` is prefetched on the way. The pixels'
  // pointers and the K walk are set once for all the panels (a C = 3 stem's tile is only 27 K
  // steps: per-call work shows there).
  void compute_tile(const RowRun& run, const SubRun& sub, int64_t panel0, int64_t panel1, int64_t p0, int64_t p1,
                    const NextPanelShare& share, int64_t tiles = 1, const KChunk& chunk = KChunk()) const {
    TileArgs a;
    const bool chunked = chunk.k1 > 0;
    a.weights_in_l2 = geo_.weights_fit_l2 || chunked;
    a.tiles = tiles;  // > 1: that many tiles of p1 - p0 pixels from p0 (affine runs only)
    a.tile_pixel_step = (p1 - p0) * geo_.pixel_stride;
    a.tile_out_step = (p1 - p0) * p_.out_stride();
    int64_t skip = 0;        // K steps of a pixel's run before its first valid tap
    int64_t w_seg_rows = 0;  // panel rows from one segment's weights to the next
    if (sub.kh0 == 0 && sub.kh1 == p_.kernel_h) {
      a.segments = geo_.segments;
      a.seg_len = geo_.seg_len;
      w_seg_rows = geo_.seg_len;
    } else {  // one segment per kw, over the valid taps of each
      skip = sub.kh0 * geo_.c_steps;
      a.segments = p_.kernel_w;
      a.seg_len = (sub.kh1 - sub.kh0) * geo_.c_steps;
      w_seg_rows = p_.kernel_h * geo_.c_steps;
    }
    a.seg_stride = geo_.seg_stride;
    if (chunked) {  // one segment, no padding (plan_k_chunks): the chunk is a shorter run
      skip = chunk.k0;
      a.seg_len = chunk.k1 - chunk.k0;
    }
    // A tile starting at column 0 or ending at column Wo-1 skips that pixel's taps in the
    // padding: K steps per kw tap = segments * seg_len / Kw, whether the run is one segment
    // ordered (kw, kh, c) or one segment per kw (3x3 pad 1: 1/3 of the first and last
    // column's work, 2.4% of a 28x28 layer's, 4.8% of a 14x14's).
    const int64_t tap_steps = a.segments * a.seg_len / p_.kernel_w;
    // One division per tile (a 64-bit one costs up to ~40 cycles here, and a 1x1 layer's tile of
    // 16-32 K steps only ~200-400): the last pixel's column from the first's.
    int64_t row = p0 / geo_.wo, ow = p0 - row * geo_.wo;
    int64_t last_ow = ow + (p1 - 1 - p0);
    while (last_ow >= geo_.wo) last_ow -= geo_.wo;
    if (ow == 0) a.skip_first = geo_.left_pad_taps * tap_steps;
    if (last_ow == geo_.wo - 1) a.skip_last = geo_.right_pad_taps * tap_steps;
    const float* pixels[kMaxTileRows];
    const int64_t skip_floats = skip * geo_.step;
    const float* start = row_start(run, row) + skip_floats;
    for (int64_t px = p0; px < p1; ++px) {
      pixels[px - p0] = start + ow * geo_.pixel_stride;
      if (++ow == geo_.wo && px + 1 < p1) {
        ow = 0;
        start = row_start(run, ++row) + skip_floats;
      }
    }
    if (chunk.pack != nullptr) {
      const int64_t len = chunk.k1 - chunk.k0, ld = len + kChunkPackPad;
      for (int64_t m = 0; m < p1 - p0; ++m) {
        std::memcpy(chunk.pack + m * ld, pixels[m], static_cast<size_t>(len) * sizeof(float));
        pixels[m] = chunk.pack + m * ld;
      }
    }
    a.pixels = pixels;
    a.out_stride = p_.out_stride();
    a.clip = chunk.last ? clip_ : activation_clamp(Activation::kNone);
    if (share.panel >= 0)
      set_prefetch_share(a, packed_ + panel_start(share.g, geo_.cog, share.panel, geo_.k),
                         geo_.k * panel_width(geo_.cog, share.panel) * int64_t{sizeof(float)}, share.share,
                         share.shares, a.segments * a.seg_len);
    const int block_cols = uk_.max_vecs * uk_.lanes;
    const int rows = static_cast<int>(p1 - p0);
    const int64_t out_pixel = ((run.n * geo_.ho + run.oh0) * geo_.wo + p0) * p_.out_stride();
    if (geo_.set_b > 0) return compute_set_tile(a, run.g, rows, out_pixel, skip, w_seg_rows, block_cols);
    for (int64_t panel = panel0; panel < panel1; ++panel) {
      const int64_t width = panel_width(geo_.cog, panel);  // floats per K row of this panel
      a.w_row_stride = width;
      a.w_seg_stride = w_seg_rows * width;
      const int64_t co0 = run.g * geo_.cog + panel * kPanel;
      const float* w_panel = packed_ + panel_start(run.g, geo_.cog, panel, geo_.k) + skip * width;
      const int64_t out_offset = out_pixel + co0;
      for (int64_t c = 0; c < width; c += block_cols) {
        a.cols = static_cast<int>(std::min<int64_t>(block_cols, width - c));
        a.weights = w_panel + c;
        a.bias = bias_ != nullptr && chunk.first ? bias_ + co0 + c : nullptr;
        a.out = output_ + out_offset + c;
        a.residual = !chunk.first ? a.out : residual_ != nullptr ? residual_ + out_offset + c : nullptr;
        if (c == 0 && chunked) prefetch_next_chunk(a, run.g, chunk, panel - panel0);
        const int vecs = uk_.vecs_for(a.cols);
        uk_.pick(rows, vecs, width, /*indirect_rows=*/false)(a);
        a.prefetch = nullptr;  // the first column block has fetched the share
      }
    }
  }

  // Makes the tile `a` (a chunked tile's call for the i-th panel of its block) prefetch its share
  // of the next unit's weights for the i-th panel of that unit (KChunk::next_*); a next block
  // one panel wider leaves its last panel to the hardware.
  void prefetch_next_chunk(TileArgs& a, int64_t g, const KChunk& chunk, int64_t i) const {
    const int64_t panel = chunk.next_panel0 + i;
    if (panel >= chunk.next_panel1) return;
    const int64_t width = panel_width(geo_.cog, panel);
    set_prefetch_share(a, packed_ + panel_start(g, geo_.cog, panel, geo_.k) + chunk.next_k0 * width,
                       (chunk.next_k1 - chunk.next_k0) * width * int64_t{sizeof(float)}, chunk.share, chunk.shares,
                       a.segments * a.seg_len);
  }

  // The tile of compute_tile() for group sets (group_sets.h): panel q (the window's one
  // panel), its blocks of block_cols lanes. AVX-512 takes the panel as one block: its two
  // vectors are its two sets, and the tile permutes each into channel order. Narrower blocks
  // lie in one set (pixels offset to that set's floats); with B = 1 their lanes are their
  // channels, otherwise the tile writes the set's channels lane by lane (TileArgs::set_lane0).
  void compute_set_tile(TileArgs& a, int64_t q, int rows, int64_t out_pixel, int64_t skip, int64_t w_seg_rows,
                        int block_cols) const {
    alignas(64) float made[kPanel];  // the panel's bias in lane order where not cached
    const float* bias = lane_biases_ + q * kPanel;
    if (!lane_biases_cached_) {
      lane_bias(sets_, q, bias_, made);
      bias = made;
    }
    const int64_t co0 = q * kPanel, present = std::min<int64_t>(kPanel, p_.out_channels - co0);
    const int b_index = geo_.set_b == 1 ? 0 : geo_.set_b == 2 ? 1 : 2;
    // A panel whose groups all lie in its first set, in one whole-panel call: that set's vector
    // only, where the ISA has such tiles (the other set's lanes are absent groups).
    const TileFn one_set = block_cols >= kPanel && present <= 16 ? uk_.sets_one_vector[b_index][rows] : nullptr;
    const TileFn fn = one_set != nullptr ? one_set : uk_.sets[b_index][rows];
    a.w_row_stride = kPanel;
    a.w_seg_stride = w_seg_rows * kPanel;
    const float* w_panel = packed_ + q * kPanel * geo_.k + skip * kPanel;
    for (int c = 0; c < kPanel; c += block_cols) {
      const int set = c / 16;
      const bool whole = block_cols >= kPanel || geo_.set_b == 1;  // lanes in channel order within the block
      const int64_t first = whole ? c : set * 16;                  // the block's (or its set's) first channel
      const int64_t cols = std::min<int64_t>(whole ? block_cols : 16, present - first);
      if (cols <= 0) continue;  // absent groups only
      a.cols = static_cast<int>(cols);
      a.set_lane0 = whole ? 0 : c % 16;
      a.pixel_offset = block_cols >= kPanel ? 0 : set * geo_.set_b;
      a.weights = w_panel + c;
      a.bias = bias + c;
      a.out = output_ + out_pixel + co0 + first;
      a.residual = residual_ != nullptr ? residual_ + out_pixel + co0 + first : nullptr;
      fn(a);
    }
  }

  // Where the receptive field of pixel ow = 0 of the run's row `row` starts: in its window
  // slot, or in the input itself.
  const float* row_start(const RowRun& run, int64_t row) const {
    if (geo_.in_place) {
      const int64_t ih = (run.oh0 + row) * p_.stride_h;
      return input_ + (run.n * p_.in_h + ih) * p_.in_w * p_.in_channels + run.g * geo_.cg;
    }
    return window_ + (run.slot0 + row) * geo_.row_floats;
  }

  const ConvParams p_;  // a copy: the shape may be a temporary
  const Geometry geo_;
  const TileKernels& uk_;
  const TransformRowsFn transform_rows_;
  const float* input_;
  const float* packed_;
  const float* bias_;
  const float* residual_;
  float* output_;
  float* window_;
  Clamp clip_;
  GroupSets sets_;  // used where geo_.set_b > 0
  // In the object, not allocated: run_into() allocates nothing (session_test).
  static constexpr int64_t kCachedLaneBiasFloats = 2048;
  bool lane_biases_cached_;
  bool chunked_;
  int64_t chunks_, chunk_len_, blocks_;  // plan_k_chunks()
  alignas(64) float lane_biases_[kCachedLaneBiasFloats];
};

class Im2winConv final : public PanelWeightsAlgorithm {
 public:
  const char* name() const override { return "im2win"; }
  std::string variant(const ConvParams& p) const override {
    return group_set_width(p) > 0 ? "group sets" : std::string();
  }
  bool supports(const ConvParams& p) const override { return p.is_valid(); }
  size_t workspace_bytes(const ConvParams& p) const override {
    const Im2winShape shape = im2win_shape(p);
    return static_cast<size_t>(Geometry(shape.p, shape.group_sets).workspace_floats()) * sizeof(float);
  }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    if (group_set_width(p) == 0) return PanelWeightsAlgorithm::packed_weight_bytes(p);
    return static_cast<size_t>(GroupSets(p).weight_floats()) * sizeof(float);
  }
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    if (group_set_width(p) == 0) return PanelWeightsAlgorithm::pack_weights(p, weight_oihw, packed);
    pack_weights_group_sets(p, weight_oihw, packed);
  }
  bool pack_weights_in_place(const ConvParams& p, float* weights) const override {
    if (group_set_width(p) == 0) return PanelWeightsAlgorithm::pack_weights_in_place(p, weights);
    return pack_weights_group_sets_in_place(p, weights);
  }
  void unpack_weights(const ConvParams& p, const float* packed, float* weight_oihw) const override {
    if (group_set_width(p) == 0) return PanelWeightsAlgorithm::unpack_weights(p, packed, weight_oihw);
    unpack_weights_group_sets(p, packed, weight_oihw);
  }
  bool scales_packed_input_channels(const ConvParams& p) const override {
    return group_set_width(p) == 0 && PanelWeightsAlgorithm::scales_packed_input_channels(p);
  }
  void run(const ConvParams& p, const float* input_nhwc, const float* packed, const float* bias,
           const float* residual_nhwc, float* output_nhwc, void* workspace, Activation act,
           int threads) const override {
    const Im2winRun job(im2win_shape(p), input_nhwc, packed, bias, residual_nhwc, output_nhwc,
                        static_cast<float*>(workspace), act);
    job.run(threads_for_work(threads, p.flops() / 2));
  }
};

}  // namespace

const ConvAlgorithm& im2win_conv_algorithm() {
  static const Im2winConv algorithm;
  return algorithm;
}

}  // namespace cpu
}  // namespace winfer
