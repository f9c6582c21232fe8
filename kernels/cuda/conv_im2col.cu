// "im2col": lower the convolution to GEMM, multiplied by cuBLAS.
//
// On NHWC data the lowering is "im2row": for group g, row r = (n*Ho + oh)*Wo + ow of
// rows[N*Ho*Wo][K], K = Kh*Kw*Cg, holds the receptive field of output pixel r ordered
// (kh, kw, c), zeros where a tap falls in the padding. Then
//
//   out[r][g*Cog .. g*Cog + Cog) = rows [P x K] * W_g [K x Cog]     (P = N*Ho*Wo)
//
// with W_g the group's slice of the GHWIO-packed weights, written in place through ldc = Co, and
// the bias and activation applied by one epilogue kernel afterwards.
//
// The whole batch is lowered at once (one group at a time): a GPU needs the large GEMM (per
// image, M = Ho*Wo is 49 on ResNet's last stage), and it is the baseline the im2win paper
// measures. The workspace is therefore N*Ho*Wo*Kh*Kw*Cg floats, compared with im2win's
// N*Ho*Ww*Kh*C. A 1x1, stride-1, unpadded convolution needs no lowering: the NHWC input already
// is the row matrix (lda = C), so its workspace is 0.
#include <string>

#include "kernels/cuda/blas.h"
#include "kernels/cuda/conv_internal.h"
#include "kernels/cuda/conv_shape.cuh"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

bool is_pointwise_unstrided(const ConvParams& p) {
  return p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
         p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0;
}

// One thread per element of rows, c fastest: coalesced reads of an input pixel's channels and
// coalesced writes.
__global__ void im2row_kernel(ConvShape s, int64_t group, const float* in, float* rows) {
  const int64_t k_size = s.kernel_h * s.kernel_w * s.cg;
  const int64_t count = s.batch * s.out_h * s.out_w * k_size;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t k = i % k_size;
    const Pixel px = split_pixel(s, i / k_size);
    const int64_t c = k % s.cg, tap = k / s.cg;
    const int64_t ih = px.oh * s.stride_h - s.pad_top + (tap / s.kernel_w) * s.dilation_h;
    const int64_t iw = px.ow * s.stride_w - s.pad_left + (tap % s.kernel_w) * s.dilation_w;
    const bool inside = ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w;
    rows[i] = inside ? in[((px.n * s.in_h + ih) * s.in_w + iw) * s.in_c + group * s.cg + c] : 0.f;
  }
}

class Im2colConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "im2col"; }
  bool supports(const ConvParams& p) const override { return fits_launch_limits(p); }
  size_t workspace_bytes(const ConvParams& p) const override {
    return is_pointwise_unstrided(p) ? 0 : static_cast<size_t>(im2row_floats(p)) * sizeof(float);
  }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(packed_weight_floats(p)) * sizeof(float);
  }
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    cuda::pack_weights(p, weight_oihw, packed, WeightLayout::kGHWIO);
  }
  Status run(const Context& ctx, const ConvParams& p, const float* input, const float* packed, const float* bias,
             float* output, void* workspace, Activation act) const override {
    if (!supports(p)) return invalid_argument("im2col: unsupported convolution " + p.to_string());
    if (!ctx.libraries) return unsupported("im2col: needs cuBLAS (Context::libraries is null)");
    const bool lower = !is_pointwise_unstrided(p);
    if (lower && !workspace) return invalid_argument("im2col: null workspace");
    const int64_t pixels = p.batch * p.out_h() * p.out_w();
    const int64_t k = p.kernel_h * p.kernel_w * p.in_channels_per_group(), cog = p.out_channels_per_group();
    float* rows = static_cast<float*>(workspace);
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* a = input + g * p.in_channels_per_group();
      int64_t lda = p.in_channels;
      if (lower) {
        WINFER_CUDA_RETURN_IF_ERROR(im2row(p, g, input, rows, ctx.stream));
        a = rows;
        lda = k;
      }
      WINFER_CUDA_RETURN_IF_ERROR(sgemm(ctx, false, false, pixels, cog, k, 1.f, a, lda, packed + g * k * cog, cog, 0.f,
                                        output + g * cog, p.out_channels));
    }
    return bias_activation_rows(output, pixels, p.out_channels, bias, act, ctx.stream);
  }
};

}  // namespace

int64_t im2row_floats(const ConvParams& p) {
  return p.batch * p.out_h() * p.out_w() * p.kernel_h * p.kernel_w * p.in_channels_per_group();
}

Status im2row(const ConvParams& p, int64_t group, const float* input_nhwc, float* rows, cudaStream_t stream) {
  if (!fits_launch_limits(p) || group < 0 || group >= p.groups)
    return invalid_argument("im2row: unsupported convolution " + p.to_string());
  return launch("im2row", grid_stride_config(im2row_floats(p)), stream, im2row_kernel, make_conv_shape(p), group,
                input_nhwc, rows);
}

const ConvAlgorithm& im2col_conv_algorithm() {
  static const Im2colConv algorithm;
  return algorithm;
}

}  // namespace cuda
}  // namespace winfer
