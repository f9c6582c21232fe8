// "direct": the reference convolution and the zero-workspace baseline.
//
// Supports every valid ConvParams (any kernel, stride, asymmetric padding, dilation, groups).
// Weights are packed GHWIO [g][Kh][Kw][C/g][Co/g] (see conv_common.h). For one output pixel and
// a block of output channels, the accumulators live in registers while the loops walk the
// in-bounds taps, and for each tap the input channels of the NHWC pixel (contiguous) times a
// weight row over the output-channel block (contiguous):
//
//   out[n][oh][ow][g*Cog + o] = act(bias + sum_{kh,kw,c} in[n][ih][iw][g*Cg + c] * w[g][kh][kw][c][o])
//
// with ih = oh*sh - pad_top + kh*dh and iw = ow*sw - pad_left + kw*dw; taps outside the input
// are skipped (they would multiply zeros). Work is split over output rows (n, oh).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace cpu {
namespace {

// Everything one output row needs, computed once per run().
struct RowArgs {
  const ConvParams* p;
  const float* input;   // NHWC
  const float* packed;  // GHWIO
  const float* bias;    // may be null
  float* output;        // NHWC
  Clamp clip;
};

// Where one output pixel reads: taps [kh0, kh1) x [kw0, kw1) are inside the input.
struct PixelTaps {
  const float* in_image;
  int64_t oh, ow, kh0, kh1, kw0, kw1;
};

// Output pixel, group g, output channels [co, co + kLanes*kVecs): kVecs vector accumulators
// (registers) over all in-bounds taps and the group's input channels.
template <int kLanes, int kVecs>
WINFER_ALWAYS_INLINE inline void pixel_block(const RowArgs& a, const PixelTaps& t, int64_t g, int64_t co,
                                             float* out_pixel) {
  using V = Vec<kLanes>;
  const ConvParams& p = *a.p;
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const float* w_group = a.packed + g * p.kernel_h * p.kernel_w * cg * cog + co;

  V acc[kVecs];
  for (int v = 0; v < kVecs; ++v) acc[v] = a.bias ? load<kLanes>(a.bias + g * cog + co + v * kLanes) : V{};
  for (int64_t kh = t.kh0; kh < t.kh1; ++kh) {
    const int64_t ih = t.oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    for (int64_t kw = t.kw0; kw < t.kw1; ++kw) {
      const int64_t iw = t.ow * p.stride_w - p.pad_left + kw * p.dilation_w;
      const float* x = t.in_image + (ih * p.in_w + iw) * p.in_channels + g * cg;
      const float* w = w_group + (kh * p.kernel_w + kw) * cg * cog;
      for (int64_t c = 0; c < cg; ++c) {
        const V xv = broadcast<kLanes>(x[c]);
        const float* w_row = w + c * cog;
        for (int v = 0; v < kVecs; ++v) acc[v] += xv * load<kLanes>(w_row + v * kLanes);
      }
    }
  }
  float* o = out_pixel + co;
  for (int v = 0; v < kVecs; ++v) store<kLanes>(o + v * kLanes, acc[v]);
  for (int j = 0; j < kLanes * kVecs; ++j) o[j] = clamp(o[j], a.clip);
}

// The last `width` (< one vector) output channels from co: the same sum, scalar.
WINFER_ALWAYS_INLINE inline void pixel_tail(const RowArgs& a, const PixelTaps& t, int64_t g, int64_t co, int64_t width,
                                            float* out_pixel) {
  const ConvParams& p = *a.p;
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const float* w_group = a.packed + g * p.kernel_h * p.kernel_w * cg * cog + co;
  for (int64_t j = 0; j < width; ++j) {
    float acc = a.bias ? a.bias[g * cog + co + j] : 0.f;
    for (int64_t kh = t.kh0; kh < t.kh1; ++kh) {
      const int64_t ih = t.oh * p.stride_h - p.pad_top + kh * p.dilation_h;
      for (int64_t kw = t.kw0; kw < t.kw1; ++kw) {
        const int64_t iw = t.ow * p.stride_w - p.pad_left + kw * p.dilation_w;
        const float* x = t.in_image + (ih * p.in_w + iw) * p.in_channels + g * cg;
        const float* w = w_group + (kh * p.kernel_w + kw) * cg * cog + j;
        for (int64_t c = 0; c < cg; ++c) acc += x[c] * w[c * cog];
      }
    }
    out_pixel[co + j] = clamp(acc, a.clip);
  }
}

// All output channels of group g for one pixel: blocks of kVecs vectors, then blocks of half
// as many down to one vector, then narrower vectors down to 4 lanes, then the scalar tail (at
// most 3 channels). Common widths (multiples of 16, 32, 64) never leave the widest blocks.
template <int kLanes, int kVecs>
WINFER_ALWAYS_INLINE inline void pixel_channels(const RowArgs& a, const PixelTaps& t, int64_t g, int64_t co,
                                                float* out_pixel) {
  const int64_t cog = a.p->out_channels_per_group();
  for (; co + kLanes * kVecs <= cog; co += kLanes * kVecs) pixel_block<kLanes, kVecs>(a, t, g, co, out_pixel);
  if constexpr (kVecs > 1) {
    pixel_channels<kLanes, kVecs / 2>(a, t, g, co, out_pixel);
  } else if constexpr (kLanes > 4) {
    pixel_channels<kLanes / 2, 1>(a, t, g, co, out_pixel);
  } else if (co < cog) {
    pixel_tail(a, t, g, co, cog - co, out_pixel);
  }
}

// One output row (n, oh): every pixel, group and output channel.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void row_body(const RowArgs& a, int64_t n, int64_t oh) {
  const ConvParams& p = *a.p;
  const int64_t wo = p.out_w();
  PixelTaps t;
  t.in_image = a.input + n * p.in_h * p.in_w * p.in_channels;
  t.oh = oh;
  float* out_row = a.output + ((n * p.out_h() + oh) * wo) * p.out_stride();
  valid_taps(oh * p.stride_h - p.pad_top, p.dilation_h, p.kernel_h, p.in_h, &t.kh0, &t.kh1);
  for (int64_t ow = 0; ow < wo; ++ow) {
    t.ow = ow;
    valid_taps(ow * p.stride_w - p.pad_left, p.dilation_w, p.kernel_w, p.in_w, &t.kw0, &t.kw1);
    float* out_pixel = out_row + ow * p.out_stride();
    for (int64_t g = 0; g < p.groups; ++g)
      pixel_channels<kLanes, 4>(a, t, g, 0, out_pixel + g * p.out_channels_per_group());
  }
}

// Four vector registers of accumulators on each ISA (64, 32 or 16 output channels): four
// independent FMA chains per input channel, with registers to spare for the weights.
WINFER_TARGET_AVX512 void row_avx512(const RowArgs& a, int64_t n, int64_t oh) { row_body<16>(a, n, oh); }
WINFER_TARGET_AVX2 void row_avx2(const RowArgs& a, int64_t n, int64_t oh) { row_body<8>(a, n, oh); }
void row_generic(const RowArgs& a, int64_t n, int64_t oh) { row_body<4>(a, n, oh); }

using RowFn = void (*)(const RowArgs&, int64_t, int64_t);
RowFn pick_row_fn() {
  switch (cpu_isa()) {
    case Isa::kAvx512: return row_avx512;
    case Isa::kAvx2: return row_avx2;
    default: return row_generic;
  }
}

class DirectConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "direct"; }
  bool supports(const ConvParams& p) const override { return p.is_valid(); }
  size_t workspace_bytes(const ConvParams&) const override { return 0; }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(ghwio_weight_floats(p)) * sizeof(float);
  }
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    pack_weights_ghwio(p, weight_oihw, packed);
  }
  bool can_unpack_weights() const override { return true; }  // GHWIO is a permutation
  void unpack_weights(const ConvParams& p, const float* packed, float* weight_oihw) const override {
    unpack_weights_ghwio(p, packed, weight_oihw);
  }
  bool supports_output_stride() const override { return true; }
  void run(const ConvParams& p, const float* input_nhwc, const float* packed, const float* bias,
           const float* residual_nhwc, float* output_nhwc, void*, Activation act, int threads) const override {
    const RowFn row_fn = pick_row_fn();
    const RowArgs args{&p,   input_nhwc,  packed,
                       bias, output_nhwc, activation_clamp(activation_before_residual(residual_nhwc, act))};
    const int64_t rows = p.batch * p.out_h();
    const int nt = threads_for_work(threads, p.flops() / 2);
    parallel_pieces(nt, rows, pieces_for(nt, rows, p.flops() / 2), [&](int64_t first, int64_t last, int) {
      for (int64_t r = first; r < last; ++r) row_fn(args, r / p.out_h(), r % p.out_h());
    });
    add_residual(p, residual_nhwc, output_nhwc, act, threads);
  }
};

}  // namespace

const ConvAlgorithm& direct_conv_algorithm() {
  static const DirectConv algorithm;
  return algorithm;
}

}  // namespace cpu
}  // namespace winfer
