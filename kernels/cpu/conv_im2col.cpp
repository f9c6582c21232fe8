// "im2col": lower the convolution to GEMM (OpenBLAS sgemm, see gemm.h).
//
// On NHWC data the lowering is "im2row": for one image and one group, row r = oh*Wo + ow of
// the buffer A [Ho*Wo][Kh*Kw*Cg] holds the receptive field of output pixel (oh, ow) ordered
// (kh, kw, c), zeros where a tap falls in the padding. Each (kh, kw) tap is one contiguous run
// of Cg input channels, so a row is Kh*Kw memcpy's. Then, per group,
//
//   out[n][pixel][g*Cog .. g*Cog+Cog) = A [Ho*Wo x K] * B_g [K x Cog]
//
// with B_g the group's slice of the GHWIO-packed weights (K = Kh*Kw*Cg rows, Cog columns), and
// the output written in place through ldc = Co. Bias, residual and activation follow in an epilogue pass
// over the rows just computed (still in cache).
//
// Workspace: one image and one group at a time, i.e. exactly Ho*Wo*Kh*Kw*Cg floats. Lowering
// the whole batch (or all groups) at once would give larger GEMMs but multiply the largest
// buffer of the algorithm by N (or g); the per-image buffer is what makes im2col's memory cost
// comparable across batch sizes, and one image already gives GEMMs with M = Ho*Wo in the
// hundreds or thousands.
//
// A 1x1, stride-1, unpadded convolution needs no lowering: the NHWC input already is A
// (M = N*H*W pixels, lda = C), so it runs as one GEMM per group over the whole batch with
// workspace 0.
//
// Threads: the output pixels are split into one contiguous range per thread (OpenMP), and each
// thread lowers its rows into its own part of the buffer, multiplies them with a
// single-threaded sgemm and applies the epilogue, with no synchronisation in between. OpenBLAS'
// own threads are not used: alternating OpenMP phases (lowering, epilogue) with an
// OpenBLAS-threaded GEMM puts two busy-waiting thread pools on the same cores. Measured on 2
// idle cores, 3x3 64->64 56x56: 2.5-3.9 ms that way, 1.2 ms this way (1 thread: 2.3 ms). The
// workspace is unchanged: the threads' row ranges tile the one-image buffer.

#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/gemm.h"

namespace winfer {
namespace cpu {
namespace {

bool is_pointwise_unstrided(const ConvParams& p) {
  return p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
         p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0;
}

int64_t im2row_floats(const ConvParams& p) {
  if (is_pointwise_unstrided(p)) return 0;
  return p.out_h() * p.out_w() * p.kernel_h * p.kernel_w * p.in_channels_per_group();
}

// Fills the im2row rows of output pixels [first, last) (pixel r = oh*Wo + ow) of image
// `in_image`, group g; row r goes to rows + (r - first) * K.
void im2row_pixels(const ConvParams& p, const float* in_image, int64_t g, int64_t first, int64_t last, float* rows) {
  const int64_t cg = p.in_channels_per_group();
  const size_t run_bytes = static_cast<size_t>(cg) * sizeof(float);
  float* dst = rows;
  for (int64_t r = first; r < last; ++r) {
    const int64_t oh = r / p.out_w(), ow = r % p.out_w();
    for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
      const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
      const bool row_inside = ih >= 0 && ih < p.in_h;
      for (int64_t kw = 0; kw < p.kernel_w; ++kw, dst += cg) {
        const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
        if (row_inside && iw >= 0 && iw < p.in_w)
          std::memcpy(dst, in_image + (ih * p.in_w + iw) * p.in_channels + g * cg, run_bytes);
        else
          std::memset(dst, 0, run_bytes);
      }
    }
  }
}

// Output pixels [first, last) of every image and group: lower, multiply, epilogue. The rows
// are disjoint between threads in the buffer and in the output, so threads never wait for
// each other.
void conv_pixels(const ConvParams& p, const float* input, const float* packed, const float* bias, const float* residual,
                 float* output, float* buffer, Activation act, int64_t first, int64_t last) {
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const int64_t k = p.kernel_h * p.kernel_w * cg;
  const int64_t pixels_out = p.out_h() * p.out_w();
  const int64_t rows = last - first;
  if (rows <= 0) return;
  for (int64_t n = 0; n < p.batch; ++n) {
    const float* in_image = input + n * p.in_h * p.in_w * p.in_channels;
    const int64_t row0 = (n * pixels_out + first) * p.out_channels;  // in the residual
    float* out_rows = output + (n * pixels_out + first) * p.out_stride();
    for (int64_t g = 0; g < p.groups; ++g) {
      float* a = buffer + first * k;
      im2row_pixels(p, in_image, g, first, last, a);
      sgemm(false, false, rows, cog, k, 1.f, a, k, packed + g * k * cog, cog, 0.f, out_rows + g * cog, p.out_stride());
    }
    bias_residual_activation_strided_rows(out_rows, p.out_stride(), rows, p.out_channels, bias,
                                          residual ? residual + row0 : nullptr, act, 1);
  }
}

// The 1x1 unpadded stride-1 case over pixels [first, last) of the whole batch: the input rows
// are the GEMM's A as they are (lda = C, the group's channels at offset g*Cg).
void pointwise_pixels(const ConvParams& p, const float* input, const float* packed, const float* bias,
                      const float* residual, float* output, Activation act, int64_t first, int64_t last) {
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const int64_t rows = last - first;
  if (rows <= 0) return;
  for (int64_t g = 0; g < p.groups; ++g)
    sgemm(false, false, rows, cog, cg, 1.f, input + first * p.in_channels + g * cg, p.in_channels,
          packed + g * cg * cog, cog, 0.f, output + first * p.out_stride() + g * cog, p.out_stride());
  bias_residual_activation_strided_rows(output + first * p.out_stride(), p.out_stride(), rows, p.out_channels, bias,
                                        residual ? residual + first * p.out_channels : nullptr, act, 1);
}

class Im2colConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "im2col"; }
  bool supports(const ConvParams& p) const override { return p.is_valid(); }
  size_t workspace_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(im2row_floats(p)) * sizeof(float);
  }
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
           const float* residual_nhwc, float* output_nhwc, void* workspace, Activation act,
           int threads) const override {
    // Threads split the output pixels; each lowers and multiplies its own rows with a
    // single-threaded sgemm (see the file comment for why OpenBLAS' threads are not used).
    gemm_set_threads(1);
    const bool pointwise = is_pointwise_unstrided(p);
    const int64_t pixels = pointwise ? p.batch * p.out_h() * p.out_w() : p.out_h() * p.out_w();
    // At least kMinRows rows per thread: thinner GEMMs run poorly.
    constexpr int64_t kMinRows = 16;
    const int nt = static_cast<int>(
        std::min<int64_t>(threads_for_work(threads, p.flops() / 2), std::max<int64_t>(pixels / kMinRows, 1)));
    float* buffer = static_cast<float*>(workspace);
    const int64_t pieces = std::min(pieces_for(nt, pixels, p.flops() / 2), std::max<int64_t>(pixels / kMinRows, 1));
    parallel_pieces(nt, pixels, pieces, [&](int64_t first, int64_t last, int) {
      if (pointwise)
        pointwise_pixels(p, input_nhwc, packed, bias, residual_nhwc, output_nhwc, act, first, last);
      else
        conv_pixels(p, input_nhwc, packed, bias, residual_nhwc, output_nhwc, buffer, act, first, last);
    });
  }
};

}  // namespace

const ConvAlgorithm& im2col_conv_algorithm() {
  static const Im2colConv algorithm;
  return algorithm;
}

}  // namespace cpu
}  // namespace winfer
