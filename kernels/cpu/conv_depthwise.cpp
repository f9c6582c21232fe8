// "depthwise": groups == C == Co (channel multiplier 1), the ShuffleNet/MobileNet layer. The
// engine uses it for every depthwise layer whatever algorithm is chosen.
//
// Each output channel reads only its own input channel, so in NHWC the natural vector axis is
// the channel, and the weights are packed [Kh][Kw][C] so that a tap's weights for a block of
// channels are one contiguous vector:
//
//   out[n][oh][ow][c] = act(bias[c] + sum_{kh,kw} in[n][ih][iw][c] * w[kh][kw][c])
//
// The fast path (kernel width 3, 5 or 7, stride 1 or 2 along W, no dilation along W; any
// kernel height, stride, dilation and padding along H): a tile of 7 output pixels of one row x
// one vector of channels (two on AVX-512 up to 5x5) keeps its accumulators and one kernel
// row's Kw weight vectors in registers, and loads each input column of the tile's window once
// for all the pixels that read it (stride 1, 3x3: 9 loads for 21 FMAs per kernel row and
// vector, where one pixel at a time needs 2 loads per FMA). Tiles whose window crosses the
// left or right edge skip the columns outside the input (a test per column, in those tiles
// only); rows crossing the top or bottom take the valid kernel rows. 7 divides the widths of
// every 224x224 network's layers (112, 56, 28, 14, 7); other widths end in single-pixel tiles.
// Channels past the last full vector take one more full vector that overlaps the one before;
// fewer channels than one vector (or a thread's channel slice narrower than that) take scalar
// code.
//
// Any other shape: one output pixel at a time, the in-bounds taps of its window, blocks of up
// to 4 vectors of channels.
//
// Output rows go in groups of up to 4 of one image: each tile position is computed for the
// group's rows in turn, vector by vector, so the input rows they share are read from L1.
// Threads split output rows x slices of 16 channels (the slices only when the rows alone would
// split unevenly: 7 rows on 2 threads). Every output element is computed by the same code in
// the same order whatever the split, so the result does not depend on the thread count. No
// workspace.
#include <algorithm>
#include <vector>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace cpu {
namespace {

struct RowArgs {
  const ConvParams* p;
  const float* input;   // NHWC
  const float* packed;  // [Kh][Kw][C]
  const float* bias;    // may be null
  float* output;        // NHWC
  Clamp clip;
};

// Where one output pixel reads: taps [kh0, kh1) x [kw0, kw1) are inside the input.
struct PixelTaps {
  const float* in_image;
  int64_t oh, ow, kh0, kh1, kw0, kw1;
};

// Channels [c, c + kLanes*kVecs) of one output pixel, kVecs vector accumulators (registers).
template <int kLanes, int kVecs>
WINFER_ALWAYS_INLINE inline void pixel_block(const RowArgs& a, const PixelTaps& t, int64_t c, float* out_pixel) {
  using V = Vec<kLanes>;
  const ConvParams& p = *a.p;
  V acc[kVecs];
  for (int v = 0; v < kVecs; ++v) acc[v] = a.bias ? load<kLanes>(a.bias + c + v * kLanes) : V{};
  for (int64_t kh = t.kh0; kh < t.kh1; ++kh) {
    const int64_t ih = t.oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    for (int64_t kw = t.kw0; kw < t.kw1; ++kw) {
      const int64_t iw = t.ow * p.stride_w - p.pad_left + kw * p.dilation_w;
      const float* x = t.in_image + (ih * p.in_w + iw) * p.in_channels + c;
      const float* w = a.packed + (kh * p.kernel_w + kw) * p.in_channels + c;
      for (int v = 0; v < kVecs; ++v) acc[v] += load<kLanes>(x + v * kLanes) * load<kLanes>(w + v * kLanes);
    }
  }
  const V lo = broadcast<kLanes>(a.clip.lo), hi = broadcast<kLanes>(a.clip.hi);
  float* o = out_pixel + c;
  for (int v = 0; v < kVecs; ++v) {
    V r = acc[v];
    r = r < lo ? lo : r;  // NaN compares false and passes through
    r = r > hi ? hi : r;
    store<kLanes>(o + v * kLanes, r);
  }
}

// Channels [c, c_end) (a few) of one output pixel: the same sum, scalar.
WINFER_ALWAYS_INLINE inline void pixel_tail(const RowArgs& a, const PixelTaps& t, int64_t c, int64_t c_end,
                                            float* out_pixel) {
  const ConvParams& p = *a.p;
  for (int64_t j = c; j < c_end; ++j) {
    float acc = a.bias ? a.bias[j] : 0.f;
    for (int64_t kh = t.kh0; kh < t.kh1; ++kh) {
      const int64_t ih = t.oh * p.stride_h - p.pad_top + kh * p.dilation_h;
      for (int64_t kw = t.kw0; kw < t.kw1; ++kw) {
        const int64_t iw = t.ow * p.stride_w - p.pad_left + kw * p.dilation_w;
        acc +=
            t.in_image[(ih * p.in_w + iw) * p.in_channels + j] * a.packed[(kh * p.kernel_w + kw) * p.in_channels + j];
      }
    }
    out_pixel[j] = clamp(acc, a.clip);
  }
}

// Channels [c, c_end) of one pixel: blocks of kVecs vectors, then halves down to one vector,
// then narrower vectors down to 4 lanes, then the scalar tail (at most 3 channels).
template <int kLanes, int kVecs>
WINFER_ALWAYS_INLINE inline void pixel_channels(const RowArgs& a, const PixelTaps& t, int64_t c, int64_t c_end,
                                                float* out_pixel) {
  for (; c + kLanes * kVecs <= c_end; c += kLanes * kVecs) pixel_block<kLanes, kVecs>(a, t, c, out_pixel);
  if constexpr (kVecs > 1) {
    pixel_channels<kLanes, kVecs / 2>(a, t, c, c_end, out_pixel);
  } else if constexpr (kLanes > 4) {
    pixel_channels<kLanes / 2, 1>(a, t, c, c_end, out_pixel);
  } else if (c < c_end) {
    pixel_tail(a, t, c, c_end, out_pixel);
  }
}

// Any shape: output row (n, oh), channels [c0, c1), one pixel at a time.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void row_any(const RowArgs& a, int64_t n, int64_t oh, int64_t c0, int64_t c1) {
  const ConvParams& p = *a.p;
  const int64_t wo = p.out_w();
  PixelTaps t;
  t.in_image = a.input + n * p.in_h * p.in_w * p.in_channels;
  t.oh = oh;
  float* out_row = a.output + (n * p.out_h() + oh) * wo * p.out_channels;
  valid_taps(oh * p.stride_h - p.pad_top, p.dilation_h, p.kernel_h, p.in_h, &t.kh0, &t.kh1);
  for (int64_t ow = 0; ow < wo; ++ow) {
    t.ow = ow;
    valid_taps(ow * p.stride_w - p.pad_left, p.dilation_w, p.kernel_w, p.in_w, &t.kw0, &t.kw1);
    pixel_channels<kLanes, 4>(a, t, c0, c1, out_row + ow * p.out_channels);
  }
}

// ---- The fast path: kernel width kKw, stride kSw along W, dilation 1 along W ----

// One output row: where its windows read along H and where it is written.
struct RowTaps {
  const float* in_image;  // image n
  int64_t ih0;            // oh * stride_h - pad_top: the input row of kernel row 0
  int64_t kh0, kh1;       // the kernel rows inside the input
  float* out_row;         // output row (n, oh), NHWC
};

// Output pixels [ow0, ow0 + kPixels) of one row x channels [c, c + kLanes). kEdge: the window
// may cross the left or right edge (columns outside the input are skipped).
template <int kLanes, int kVecs, int kKw, int kSw, int kPixels, bool kEdge>
WINFER_ALWAYS_INLINE inline void tile(const RowArgs& a, const RowTaps& r, int64_t ow0, int64_t c) {
  using V = Vec<kLanes>;
  const ConvParams& p = *a.p;
  const int64_t channels = p.in_channels;
  V acc[kPixels][kVecs];
#pragma GCC unroll 4
  for (int v = 0; v < kVecs; ++v) {
    const V init = a.bias ? load<kLanes>(a.bias + c + v * kLanes) : V{};
#pragma GCC unroll 16
    for (int j = 0; j < kPixels; ++j) acc[j][v] = init;
  }
  const int64_t iw0 = ow0 * kSw - p.pad_left;
  constexpr int kCols = (kPixels - 1) * kSw + kKw;  // input columns the tile's windows read
  for (int64_t kh = r.kh0; kh < r.kh1; ++kh) {
    const float* x = r.in_image + (r.ih0 + kh * p.dilation_h) * p.in_w * channels + c;
    const float* w = a.packed + kh * kKw * channels + c;
    V wk[kKw][kVecs];
#pragma GCC unroll 16
    for (int kw = 0; kw < kKw; ++kw)
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) wk[kw][v] = load<kLanes>(w + kw * channels + v * kLanes);
#pragma GCC unroll 32
    for (int i = 0; i < kCols; ++i) {
      if (kEdge && (iw0 + i < 0 || iw0 + i >= p.in_w)) continue;
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) {
        const V xi = load<kLanes>(x + (iw0 + i) * channels + v * kLanes);
        // Column i is tap kw = i - j * kSw of pixel j: taps are summed in kw order, as in a
        // one-pixel tile.
#pragma GCC unroll 16
        for (int j = 0; j < kPixels; ++j) {
          const int kw = i - j * kSw;
          if (kw >= 0 && kw < kKw) acc[j][v] += xi * wk[kw][v];
        }
      }
    }
  }
  const V lo = broadcast<kLanes>(a.clip.lo), hi = broadcast<kLanes>(a.clip.hi);
  float* o = r.out_row + ow0 * channels + c;
#pragma GCC unroll 16
  for (int j = 0; j < kPixels; ++j) {
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) {
      V y = acc[j][v];
      y = y < lo ? lo : y;  // NaN compares false and passes through
      y = y > hi ? hi : y;
      store<kLanes>(o + j * channels + v * kLanes, y);
    }
  }
}

// Output pixels [ow0, ow0 + count) x channels [c, c_end) (fewer than one vector), scalar.
WINFER_ALWAYS_INLINE inline void tile_tail(const RowArgs& a, const RowTaps& r, int64_t ow0, int64_t count, int64_t c,
                                           int64_t c_end) {
  const ConvParams& p = *a.p;
  for (int64_t ow = ow0; ow < ow0 + count; ++ow) {
    for (int64_t j = c; j < c_end; ++j) {
      float acc = a.bias ? a.bias[j] : 0.f;
      int64_t kw0, kw1;
      valid_taps(ow * p.stride_w - p.pad_left, 1, p.kernel_w, p.in_w, &kw0, &kw1);
      for (int64_t kh = r.kh0; kh < r.kh1; ++kh) {
        const int64_t ih = r.ih0 + kh * p.dilation_h;
        for (int64_t kw = kw0; kw < kw1; ++kw) {
          const int64_t iw = ow * p.stride_w - p.pad_left + kw;
          acc +=
              r.in_image[(ih * p.in_w + iw) * p.in_channels + j] * a.packed[(kh * p.kernel_w + kw) * p.in_channels + j];
        }
      }
      r.out_row[ow * p.out_channels + j] = clamp(acc, a.clip);
    }
  }
}

// The tile at ow0 of `rows` output rows (of one image) for channels [c, c_end): full vectors;
// then, where [c, c_end) holds at least one vector, one more vector ending at c_end, which
// overlaps the last full one (the channels they share are computed twice, with the same
// arithmetic lane by lane: the same bits written again; ShuffleNet's 58 channels: 3 vectors,
// not 3 + a half + 2 scalar channels); else (fewer channels than one vector) scalar code.
// (Half and quarter vectors for those doubled the file's compile time for layers that hardly
// exist.) The rows of a vector of channels one after the other: the input rows they share are
// still in L1.
template <int kLanes, int kKw, int kSw, int kPixels, bool kEdge>
WINFER_ALWAYS_INLINE inline void tile_channels(const RowArgs& a, const RowTaps* r, int rows, int64_t ow0, int64_t c,
                                               int64_t c_end) {
  const int64_t c_begin = c;
  // Two vectors per tile where the registers hold them (AVX-512, kernel width up to 5: 14
  // accumulators and up to 10 weight vectors of 32 zmm): the tile's input columns are read 128
  // bytes (two cache lines) at a time and each column load serves twice the FMAs.
  constexpr int kVecs = (kLanes == 16 && kKw <= 5) ? 2 : 1;
  if constexpr (kVecs > 1) {
    for (; c + kVecs * kLanes <= c_end; c += kVecs * kLanes)
      for (int k = 0; k < rows; ++k) tile<kLanes, kVecs, kKw, kSw, kPixels, kEdge>(a, r[k], ow0, c);
  }
  for (; c + kLanes <= c_end; c += kLanes)
    for (int k = 0; k < rows; ++k) tile<kLanes, 1, kKw, kSw, kPixels, kEdge>(a, r[k], ow0, c);
  if (c == c_end) return;
  if (c_end - c_begin >= kLanes) {
    for (int k = 0; k < rows; ++k) tile<kLanes, 1, kKw, kSw, kPixels, kEdge>(a, r[k], ow0, c_end - kLanes);
  } else {
    for (int k = 0; k < rows; ++k) tile_tail(a, r[k], ow0, kPixels, c, c_end);
  }
}

constexpr int kTilePixels = 7;
constexpr int kGroupRows = 4;  // output rows computed together (RowFn's `rows` at most)

// Output rows [oh, oh + rows) of image n (rows <= kGroupRows), channels [c0, c1).
template <int kLanes, int kKw, int kSw>
WINFER_ALWAYS_INLINE inline void row_fast(const RowArgs& a, int64_t n, int64_t oh, int64_t rows, int64_t c0,
                                          int64_t c1) {
  const ConvParams& p = *a.p;
  const int64_t wo = p.out_w();
  RowTaps r[kGroupRows];
  for (int k = 0; k < rows; ++k) {
    r[k].in_image = a.input + n * p.in_h * p.in_w * p.in_channels;
    r[k].ih0 = (oh + k) * p.stride_h - p.pad_top;
    valid_taps(r[k].ih0, p.dilation_h, p.kernel_h, p.in_h, &r[k].kh0, &r[k].kh1);
    r[k].out_row = a.output + (n * p.out_h() + oh + k) * wo * p.out_channels;
  }
  const int nrows = static_cast<int>(rows);
  // Output columns whose windows lie inside the input: [ow_lo, ow_hi).
  const int64_t ow_lo = ceil_div(p.pad_left, kSw);
  const int64_t last = p.in_w + p.pad_left - kKw;  // ow * kSw <= last for the window's right end
  const int64_t ow_hi = last >= 0 ? last / kSw + 1 : 0;
  int64_t ow = 0;
  for (; ow + kTilePixels <= wo; ow += kTilePixels) {
    if (ow >= ow_lo && ow + kTilePixels <= ow_hi) {
      tile_channels<kLanes, kKw, kSw, kTilePixels, false>(a, r, nrows, ow, c0, c1);
    } else {
      tile_channels<kLanes, kKw, kSw, kTilePixels, true>(a, r, nrows, ow, c0, c1);
    }
  }
  for (; ow < wo; ++ow) tile_channels<kLanes, kKw, kSw, 1, true>(a, r, nrows, ow, c0, c1);
}

// Output rows [oh, oh + rows) of image n, channels [c0, c1).
using RowFn = void (*)(const RowArgs&, int64_t n, int64_t oh, int64_t rows, int64_t c0, int64_t c1);

// Per ISA: 16, 8 or 4 lanes (one zmm, one ymm or one xmm register per vector).
WINFER_TARGET_AVX512 void any_avx512(const RowArgs& a, int64_t n, int64_t oh, int64_t rows, int64_t c0, int64_t c1) {
  for (int64_t k = 0; k < rows; ++k) row_any<16>(a, n, oh + k, c0, c1);
}
WINFER_TARGET_AVX2 void any_avx2(const RowArgs& a, int64_t n, int64_t oh, int64_t rows, int64_t c0, int64_t c1) {
  for (int64_t k = 0; k < rows; ++k) row_any<8>(a, n, oh + k, c0, c1);
}
void any_generic(const RowArgs& a, int64_t n, int64_t oh, int64_t rows, int64_t c0, int64_t c1) {
  for (int64_t k = 0; k < rows; ++k) row_any<4>(a, n, oh + k, c0, c1);
}

template <int kKw, int kSw>
WINFER_TARGET_AVX512 void fast_avx512(const RowArgs& a, int64_t n, int64_t oh, int64_t rows, int64_t c0, int64_t c1) {
  row_fast<16, kKw, kSw>(a, n, oh, rows, c0, c1);
}
template <int kKw, int kSw>
WINFER_TARGET_AVX2 void fast_avx2(const RowArgs& a, int64_t n, int64_t oh, int64_t rows, int64_t c0, int64_t c1) {
  row_fast<8, kKw, kSw>(a, n, oh, rows, c0, c1);
}
template <int kKw, int kSw>
void fast_generic(const RowArgs& a, int64_t n, int64_t oh, int64_t rows, int64_t c0, int64_t c1) {
  row_fast<4, kKw, kSw>(a, n, oh, rows, c0, c1);
}

template <int kKw, int kSw>
RowFn fast_row_fn(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return fast_avx512<kKw, kSw>;
    case Isa::kAvx2: return fast_avx2<kKw, kSw>;
    default: return fast_generic<kKw, kSw>;
  }
}

RowFn pick_row_fn(const ConvParams& p) {
  const Isa isa = cpu_isa();
  if (p.dilation_w == 1) {
    if (p.kernel_w == 3 && p.stride_w == 1) return fast_row_fn<3, 1>(isa);
    if (p.kernel_w == 3 && p.stride_w == 2) return fast_row_fn<3, 2>(isa);
    if (p.kernel_w == 5 && p.stride_w == 1) return fast_row_fn<5, 1>(isa);
    if (p.kernel_w == 5 && p.stride_w == 2) return fast_row_fn<5, 2>(isa);
    if (p.kernel_w == 7 && p.stride_w == 1) return fast_row_fn<7, 1>(isa);
  }
  switch (isa) {
    case Isa::kAvx512: return any_avx512;
    case Isa::kAvx2: return any_avx2;
    default: return any_generic;
  }
}

class DepthwiseConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "depthwise"; }
  // Every depthwise layer takes it (layers/conv2d.cpp), whatever the session's algorithm.
  bool user_selectable() const override { return false; }
  bool supports(const ConvParams& p) const override { return p.is_valid() && p.is_depthwise(); }
  size_t workspace_bytes(const ConvParams&) const override { return 0; }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(p.kernel_h * p.kernel_w * p.in_channels) * sizeof(float);
  }
  // OIHW with I == 1: [C][1][Kh][Kw] -> [Kh][Kw][C].
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    const int64_t taps = p.kernel_h * p.kernel_w;
    for (int64_t c = 0; c < p.in_channels; ++c)
      for (int64_t t = 0; t < taps; ++t) packed[t * p.in_channels + c] = weight_oihw[c * taps + t];
  }
  // A transpose of C x taps floats (a few KB): through one copy of them.
  bool pack_weights_in_place(const ConvParams& p, float* weights) const override {
    const std::vector<float> oihw(weights, weights + p.kernel_h * p.kernel_w * p.in_channels);
    pack_weights(p, oihw.data(), weights);
    return true;
  }
  bool can_unpack_weights() const override { return true; }
  void unpack_weights(const ConvParams& p, const float* packed, float* weight_oihw) const override {
    const int64_t taps = p.kernel_h * p.kernel_w;
    for (int64_t c = 0; c < p.in_channels; ++c)
      for (int64_t t = 0; t < taps; ++t) weight_oihw[c * taps + t] = packed[t * p.in_channels + c];
  }
  void run(const ConvParams& p, const float* input_nhwc, const float* packed, const float* bias,
           const float* residual_nhwc, float* output_nhwc, void*, Activation act, int threads) const override {
    const RowFn row_fn = pick_row_fn(p);
    const RowArgs args{&p,   input_nhwc,  packed,
                       bias, output_nhwc, activation_clamp(activation_before_residual(residual_nhwc, act))};
    const int64_t out_h = p.out_h();
    const int64_t rows = p.batch * out_h;
    const int nt = threads_for_work(threads, p.flops() / 2);
    // Work items: output rows x channel slices (multiples of 16 channels, so that no vector
    // straddles two). Slices only where the rows alone split unevenly between few threads.
    constexpr int64_t kSliceQuantum = 16;
    const int64_t quanta = ceil_div(p.in_channels, kSliceQuantum);
    const int64_t slices = (nt > 1 && rows % nt != 0 && rows < 8 * nt) ? std::min<int64_t>(nt, quanta) : 1;
    const int64_t slice = ceil_div(quanta, slices) * kSliceQuantum;
    const int64_t items = rows * slices;
    const auto run_items = [&](int64_t begin, int64_t end) {
      if (slices == 1) {
        // Rows in groups of up to kGroupRows of one image: each tile of the group's rows reads
        // the input rows they share from L1.
        for (int64_t r = begin; r < end;) {
          const int64_t n = r / out_h, oh = r % out_h;
          const int64_t count = std::min({end - r, out_h - oh, int64_t{kGroupRows}});
          row_fn(args, n, oh, count, 0, p.in_channels);
          r += count;
        }
        return;
      }
      for (int64_t i = begin; i < end; ++i) {
        const int64_t r = i / slices, c0 = (i % slices) * slice;
        const int64_t c1 = std::min(p.in_channels, c0 + slice);
        if (c0 < c1) row_fn(args, r / out_h, r % out_h, 1, c0, c1);
      }
    };
    if (nt <= 1)
      run_items(0, items);
    else
      parallel_pieces(nt, items, pieces_for(nt, items, p.flops() / 2),
                      [&](int64_t first, int64_t last, int) { run_items(first, last); });
    add_residual(p, residual_nhwc, output_nhwc, act, threads);
  }
};

}  // namespace

const ConvAlgorithm& depthwise_conv_algorithm() {
  static const DepthwiseConv algorithm;
  return algorithm;
}

}  // namespace cpu
}  // namespace winfer
