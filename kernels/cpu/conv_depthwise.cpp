// "depthwise": groups == C == Co (channel multiplier 1), the ShuffleNet/MobileNet layer. The
// engine uses it for every depthwise layer whatever algorithm is chosen.
//
// Each output channel reads only its own input channel, so in NHWC the natural vector axis is
// the channel: for one output pixel and a block of channels the accumulators stay in registers
// while the loop walks the in-bounds taps, each tap one contiguous run of input channels times
// one contiguous run of the weights packed [Kh][Kw][C]:
//
//   out[n][oh][ow][c] = act(bias[c] + sum_{kh,kw} in[n][ih][iw][c] * w[kh][kw][c])
//
// Any kernel, stride, asymmetric padding and dilation; no workspace; split over output rows.
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
  float* o = out_pixel + c;
  for (int v = 0; v < kVecs; ++v) store<kLanes>(o + v * kLanes, acc[v]);
  for (int j = 0; j < kLanes * kVecs; ++j) o[j] = clamp(o[j], a.clip);
}

// The last `width` (< one vector) channels from c: the same sum, scalar.
WINFER_ALWAYS_INLINE inline void pixel_tail(const RowArgs& a, const PixelTaps& t, int64_t c, int64_t width,
                                            float* out_pixel) {
  const ConvParams& p = *a.p;
  for (int64_t j = c; j < c + width; ++j) {
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

// All channels of one pixel: blocks of kVecs vectors, then halves down to one vector, then
// narrower vectors down to 4 lanes, then the scalar tail (at most 3 channels; ShuffleNet's
// 58, 116, 232 and 464 channels end in a 4-lane or 8-lane block, not in scalar code).
template <int kLanes, int kVecs>
WINFER_ALWAYS_INLINE inline void pixel_channels(const RowArgs& a, const PixelTaps& t, int64_t c, float* out_pixel) {
  const int64_t channels = a.p->in_channels;
  for (; c + kLanes * kVecs <= channels; c += kLanes * kVecs) pixel_block<kLanes, kVecs>(a, t, c, out_pixel);
  if constexpr (kVecs > 1) {
    pixel_channels<kLanes, kVecs / 2>(a, t, c, out_pixel);
  } else if constexpr (kLanes > 4) {
    pixel_channels<kLanes / 2, 1>(a, t, c, out_pixel);
  } else if (c < channels) {
    pixel_tail(a, t, c, channels - c, out_pixel);
  }
}

template <int kLanes>
WINFER_ALWAYS_INLINE inline void row_body(const RowArgs& a, int64_t n, int64_t oh) {
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
    pixel_channels<kLanes, 4>(a, t, 0, out_row + ow * p.out_channels);
  }
}

// Four vector registers of accumulators per ISA (64, 32 or 16 channels per block).
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
    const RowFn row_fn = pick_row_fn();
    const RowArgs args{&p,   input_nhwc,  packed,
                       bias, output_nhwc, activation_clamp(activation_before_residual(residual_nhwc, act))};
    const int64_t rows = p.batch * p.out_h();
    const int nt = threads_for_work(threads, p.flops() / 2);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t r = 0; r < rows; ++r) row_fn(args, r / p.out_h(), r % p.out_h());
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
