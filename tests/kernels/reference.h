// Float64 reference implementations of the CPU kernels, for the tests only.
//
// Written to be obviously right rather than fast: plain loops over the definition, one output
// element at a time, in double. Tensors are NHWC like the kernels (weights OIHW as PyTorch).
// Where the kernels' result has a float32 rounding error that grows with the number and size
// of the summed terms, the reference also returns sum|terms| per output so the tests can scale
// their tolerance (see test_util.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/common/conv_params.h"
#include "kernels/cpu/pooling.h"

namespace winfer {
namespace ref {

inline double activate(double v, Activation a) {
  if (a == Activation::kRelu) return std::max(v, 0.0);
  if (a == Activation::kRelu6) return std::min(std::max(v, 0.0), 6.0);
  return v;
}

struct Result {
  std::vector<double> value;    // the exact (double) result
  std::vector<double> abs_sum;  // per output: sum of |terms| that were added up (incl. bias)
  int64_t terms = 0;            // terms per output (the length of the float32 sums)
};

// out[n][oh][ow][o] = act(bias[o] + sum_{c in o's group, kh, kw} in[n][ih][iw][c] * w[o][c'][kh][kw])
// with ih = oh*sh - pad_top + kh*dh, iw = ow*sw - pad_left + kw*dw; taps outside the input are
// zero padding and contribute nothing.
// A residual (NHWC like the output, or null) is added before the activation.
inline Result conv2d(const ConvParams& p, const std::vector<float>& in, const std::vector<float>& w, const float* bias,
                     Activation act, const float* residual = nullptr) {
  const int64_t ho = p.out_h(), wo = p.out_w();
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  Result r;
  r.terms = cg * p.kernel_h * p.kernel_w + (bias ? 1 : 0) + (residual ? 1 : 0);
  r.value.assign(static_cast<size_t>(p.batch * ho * wo * p.out_channels), 0.0);
  r.abs_sum = r.value;
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oh = 0; oh < ho; ++oh)
      for (int64_t ow = 0; ow < wo; ++ow)
        for (int64_t o = 0; o < p.out_channels; ++o) {
          const int64_t g = o / cog;
          double sum = bias ? bias[o] : 0.0;
          double abs_sum = std::abs(sum);
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t kh = 0; kh < p.kernel_h; ++kh)
              for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
                const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
                const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
                if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
                const double x =
                    in[static_cast<size_t>(((n * p.in_h + ih) * p.in_w + iw) * p.in_channels + g * cg + ci)];
                const double k = w[static_cast<size_t>(((o * cg + ci) * p.kernel_h + kh) * p.kernel_w + kw)];
                sum += x * k;
                abs_sum += std::abs(x * k);
              }
          const size_t idx = static_cast<size_t>(((n * ho + oh) * wo + ow) * p.out_channels + o);
          if (residual != nullptr) {
            sum += residual[idx];
            abs_sum += std::abs(static_cast<double>(residual[idx]));
          }
          r.value[idx] = activate(sum, act);
          r.abs_sum[idx] = abs_sum;
        }
  return r;
}

// C = alpha * op(A) * op(B) + beta * C (row-major, as winfer::sgemm); c holds C on entry.
inline Result gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                   const std::vector<float>& a, int64_t lda, const std::vector<float>& b, int64_t ldb, double beta,
                   const std::vector<float>& c, int64_t ldc) {
  Result r;
  r.terms = k + 1;
  r.value.assign(static_cast<size_t>(m * n), 0.0);
  r.abs_sum = r.value;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      // beta == 0 means "C is not read" (it may hold NaN), as in BLAS.
      double sum = beta == 0.0 ? 0.0 : beta * c[static_cast<size_t>(i * ldc + j)];
      double abs_sum = std::abs(sum);
      for (int64_t p = 0; p < k; ++p) {
        const double av = trans_a ? a[static_cast<size_t>(p * lda + i)] : a[static_cast<size_t>(i * lda + p)];
        const double bv = trans_b ? b[static_cast<size_t>(j * ldb + p)] : b[static_cast<size_t>(p * ldb + j)];
        sum += alpha * av * bv;
        abs_sum += std::abs(alpha * av * bv);
      }
      r.value[static_cast<size_t>(i * n + j)] = sum;
      r.abs_sum[static_cast<size_t>(i * n + j)] = abs_sum;
    }
  return r;
}

// PyTorch's pooling output size (floor or ceil mode): in ceil mode the last window must start
// inside the input or the left padding, else it is dropped.
inline int64_t pool_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                             bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1;
  int64_t out = (span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Square pooling of [n][h][w][c] with PyTorch's output size.
inline PoolParams pool_params(int64_t n, int64_t c, int64_t h, int64_t w, int64_t kernel, int64_t stride, int64_t pad,
                              int64_t dilation, bool ceil_mode) {
  PoolParams p;
  p.batch = n;
  p.channels = c;
  p.in_h = h;
  p.in_w = w;
  p.kernel_h = p.kernel_w = kernel;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = pad;
  p.dilation_h = p.dilation_w = dilation;
  p.out_h = pool_out_size(h, kernel, stride, pad, dilation, ceil_mode);
  p.out_w = pool_out_size(w, kernel, stride, pad, dilation, ceil_mode);
  return p;
}

// Max over the taps of the window that lie inside the input; a NaN tap wins; -inf if none.
inline std::vector<double> maxpool2d(const PoolParams& p, const std::vector<float>& in) {
  std::vector<double> out(static_cast<size_t>(p.batch * p.out_h * p.out_w * p.channels));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oh = 0; oh < p.out_h; ++oh)
      for (int64_t ow = 0; ow < p.out_w; ++ow)
        for (int64_t c = 0; c < p.channels; ++c) {
          double best = -std::numeric_limits<double>::infinity();
          for (int64_t kh = 0; kh < p.kernel_h; ++kh)
            for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
              const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
              const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
              const double v = in[static_cast<size_t>(((n * p.in_h + ih) * p.in_w + iw) * p.channels + c)];
              if (v > best || std::isnan(v)) best = v;
            }
          out[static_cast<size_t>(((n * p.out_h + oh) * p.out_w + ow) * p.channels + c)] = best;
        }
  return out;
}

// Average over the window. Written as a count over the taps (not PyTorch's clamp formula):
// the sum runs over taps inside the input; with count_include_pad the divisor counts the taps
// inside the padded input [-pad, in + pad) (padding taps count, taps hanging past the
// padding in ceil mode do not), otherwise only the taps inside the input. A window with no tap
// inside the input gives 0.
inline std::vector<double> avgpool2d(const PoolParams& p, bool count_include_pad, const std::vector<float>& in) {
  std::vector<double> out(static_cast<size_t>(p.batch * p.out_h * p.out_w * p.channels));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oh = 0; oh < p.out_h; ++oh)
      for (int64_t ow = 0; ow < p.out_w; ++ow)
        for (int64_t c = 0; c < p.channels; ++c) {
          double sum = 0;
          int64_t inside = 0, inside_padded = 0;
          for (int64_t kh = 0; kh < p.kernel_h; ++kh)
            for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
              const int64_t ih = oh * p.stride_h - p.pad_top + kh;
              const int64_t iw = ow * p.stride_w - p.pad_left + kw;
              if (ih < p.in_h + p.pad_top && iw < p.in_w + p.pad_left) ++inside_padded;
              if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
              ++inside;
              sum += in[static_cast<size_t>(((n * p.in_h + ih) * p.in_w + iw) * p.channels + c)];
            }
          const int64_t divisor = count_include_pad ? inside_padded : inside;
          out[static_cast<size_t>(((n * p.out_h + oh) * p.out_w + ow) * p.channels + c)] =
              inside == 0 ? 0.0 : sum / static_cast<double>(divisor);
        }
  return out;
}

// AdaptiveAvgPool2d: output bin i covers inputs [floor(i*in/out), ceil((i+1)*in/out)).
inline std::vector<double> adaptive_avgpool2d(int64_t batch, int64_t channels, int64_t in_h, int64_t in_w,
                                              int64_t out_h, int64_t out_w, const std::vector<float>& in) {
  std::vector<double> out(static_cast<size_t>(batch * out_h * out_w * channels));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t oh = 0; oh < out_h; ++oh)
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const int64_t h0 = static_cast<int64_t>(std::floor(double(oh) * in_h / out_h));
        const int64_t h1 = static_cast<int64_t>(std::ceil(double(oh + 1) * in_h / out_h));
        const int64_t w0 = static_cast<int64_t>(std::floor(double(ow) * in_w / out_w));
        const int64_t w1 = static_cast<int64_t>(std::ceil(double(ow + 1) * in_w / out_w));
        for (int64_t c = 0; c < channels; ++c) {
          double sum = 0;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw)
              sum += in[static_cast<size_t>(((n * in_h + ih) * in_w + iw) * channels + c)];
          out[static_cast<size_t>(((n * out_h + oh) * out_w + ow) * channels + c)] =
              sum / static_cast<double>((h1 - h0) * (w1 - w0));
        }
      }
  return out;
}

// Softmax of each row, in double: exp(x - max) / sum; subtracting the max is an identity.
inline std::vector<double> softmax_rows(const std::vector<float>& in, int64_t rows, int64_t cols) {
  std::vector<double> out(in.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, double(in[static_cast<size_t>(r * cols + c)]));
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(in[static_cast<size_t>(r * cols + c)]) - mx);
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] = std::exp(double(in[static_cast<size_t>(r * cols + c)]) - mx) / sum;
  }
  return out;
}

}  // namespace ref
}  // namespace winfer
