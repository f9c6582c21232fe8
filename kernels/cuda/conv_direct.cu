// "direct": the reference convolution and the zero-workspace baseline on the GPU.
//
// One thread per output element (n, oh, ow, o), o fastest. Weights are packed GHWIO
// [g][Kh][Kw][C/g][Co/g], so the threads of a warp (consecutive o) read consecutive weights,
// while they all read the same input value (a broadcast). Each thread walks the in-bounds taps
// and the group's input channels:
//
//   out[n][oh][ow][o] = act(bias[o] + sum_{kh,kw,c} in[n][ih][iw][g*Cg + c] * w[g][kh][kw][c][o % Cog])
//
// Supports every valid ConvParams. Slow (no data reuse through shared memory), but simple enough
// to be obviously right, which is its job.
#include "kernels/cuda/conv_internal.h"
#include "kernels/cuda/conv_shape.cuh"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

__global__ void direct_conv_kernel(ConvShape s, const float* in, const float* w, const float* bias, float* out,
                                   Clamp clip) {
  const int64_t count = s.batch * s.out_h * s.out_w * s.out_c;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t o = i % s.out_c;
    const Pixel px = split_pixel(s, i / s.out_c);
    const int64_t g = o / s.cog;
    const float* image = in + px.n * s.in_h * s.in_w * s.in_c + g * s.cg;
    const float* w_out = w + g * s.kernel_h * s.kernel_w * s.cg * s.cog + o % s.cog;
    float acc = bias ? bias[o] : 0.f;
    for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
      const int64_t ih = px.oh * s.stride_h - s.pad_top + kh * s.dilation_h;
      if (ih < 0 || ih >= s.in_h) continue;
      for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
        const int64_t iw = px.ow * s.stride_w - s.pad_left + kw * s.dilation_w;
        if (iw < 0 || iw >= s.in_w) continue;
        const float* x = image + (ih * s.in_w + iw) * s.in_c;
        const float* wt = w_out + (kh * s.kernel_w + kw) * s.cg * s.cog;
        for (int64_t c = 0; c < s.cg; ++c) acc += x[c] * wt[c * s.cog];
      }
    }
    out[i] = apply_clamp(acc, clip);
  }
}

class DirectConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "direct"; }
  bool supports(const ConvParams& p) const override { return fits_launch_limits(p); }
  size_t workspace_bytes(const ConvParams&) const override { return 0; }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(packed_weight_floats(p)) * sizeof(float);
  }
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    cuda::pack_weights(p, weight_oihw, packed, WeightLayout::kGHWIO);
  }
  Status run(const Context& ctx, const ConvParams& p, const float* input, const float* packed, const float* bias,
             float* output, void*, Activation act) const override {
    if (!supports(p)) return invalid_argument("direct: unsupported convolution " + p.to_string());
    const int64_t count = p.batch * p.out_h() * p.out_w() * p.out_channels;
    return launch("direct conv", grid_stride_config(count), ctx.stream, direct_conv_kernel, make_conv_shape(p), input,
                  packed, bias, output, activation_clamp(act));
  }
};

}  // namespace

const ConvAlgorithm& direct_conv_algorithm() {
  static const DirectConv algorithm;
  return algorithm;
}

}  // namespace cuda
}  // namespace winfer
