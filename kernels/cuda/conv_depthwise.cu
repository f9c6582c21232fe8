// "depthwise": groups == C == Co (channel multiplier 1), the ShuffleNet/MobileNet layer. The
// engine uses it for every depthwise layer whatever algorithm is chosen.
//
// One thread per output element (n, oh, ow, c), c fastest: each tap is a coalesced read of
// consecutive channels of one input pixel, times consecutive weights packed [Kh][Kw][C]:
//
//   out[n][oh][ow][c] = act(bias[c] + sum_{kh,kw} in[n][ih][iw][c] * w[kh][kw][c])
//
// Any kernel, stride, asymmetric padding and dilation; no workspace.
#include "kernels/cuda/conv_internal.h"
#include "kernels/cuda/conv_shape.cuh"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

__global__ void depthwise_conv_kernel(ConvShape s, const float* in, const float* w, const float* bias, float* out,
                                      Clamp clip) {
  const int64_t count = s.batch * s.out_h * s.out_w * s.out_c;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t c = i % s.out_c;
    const Pixel px = split_pixel(s, i / s.out_c);
    const float* image = in + px.n * s.in_h * s.in_w * s.in_c + c;
    float acc = bias ? bias[c] : 0.f;
    for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
      const int64_t ih = px.oh * s.stride_h - s.pad_top + kh * s.dilation_h;
      if (ih < 0 || ih >= s.in_h) continue;
      for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
        const int64_t iw = px.ow * s.stride_w - s.pad_left + kw * s.dilation_w;
        if (iw < 0 || iw >= s.in_w) continue;
        acc += image[(ih * s.in_w + iw) * s.in_c] * w[(kh * s.kernel_w + kw) * s.out_c + c];
      }
    }
    out[i] = apply_clamp(acc, clip);
  }
}

class DepthwiseConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "depthwise"; }
  bool user_selectable() const override { return false; }  // every depthwise layer takes it
  bool supports(const ConvParams& p) const override { return fits_launch_limits(p) && p.is_depthwise(); }
  size_t workspace_bytes(const ConvParams&) const override { return 0; }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(packed_weight_floats(p)) * sizeof(float);
  }
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    cuda::pack_weights(p, weight_oihw, packed, WeightLayout::kHWC);
  }
  Status run(const Context& ctx, const ConvParams& p, const float* input, const float* packed, const float* bias,
             float* output, void*, Activation act) const override {
    if (!supports(p)) return invalid_argument("depthwise: unsupported convolution " + p.to_string());
    const int64_t count = p.batch * p.out_h() * p.out_w() * p.out_channels;
    return launch("depthwise conv", grid_stride_config(count), ctx.stream, depthwise_conv_kernel, make_conv_shape(p),
                  input, packed, bias, output, activation_clamp(act));
  }
};

}  // namespace

const ConvAlgorithm& depthwise_conv_algorithm() {
  static const DepthwiseConv algorithm;
  return algorithm;
}

}  // namespace cuda
}  // namespace winfer
