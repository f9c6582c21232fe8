// Float64 references of the ops in PyTorch's (NCHW) element order, and the logical tensors they
// work on: the one copy shared by the layer tests (tests/engine/layer_*_test.cpp, through
// layer_test_util.h) and the op checker (tests/engine/op_check.h), which also runs under the
// CUDA backend (tests/engine_cuda/). Public API only (winfer/shape.h), nothing internal, so that
// both test binaries can include it.
//
// Every reference is linear in its data where the op is (conv, linear, pools, batch norm): fed
// with |x|, |w|, |b| it returns sum|terms| per output, the accumulated magnitude that float32
// rounding errors scale with (op_check.h uses that for its tolerances).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "winfer/shape.h"

namespace winfer {
namespace layer_test {

// A tensor in logical order: NCHW for rank 4, row-major otherwise.
struct HostTensor {
  Shape shape;
  std::vector<float> data;
};

// A float64 reference result, also in logical order.
struct RefTensor {
  Shape shape;
  std::vector<double> data;
};

// Uniform in [-scale, scale] and never (close to) zero, so a missed term or a swapped sign
// cannot hide behind a zero. Each call draws a fresh, reproducible sequence.
inline HostTensor random_tensor(const Shape& shape, float scale = 1.f, float offset = 0.f) {
  static uint32_t next_seed = 12345;
  std::mt19937 rng(next_seed++);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  HostTensor t{shape, std::vector<float>(static_cast<size_t>(shape.numel()))};
  for (float& v : t.data) {
    float x = dist(rng);
    if (std::fabs(x) < 1e-3f) x = x < 0 ? -0.5f : 0.5f;
    v = offset + scale * x;
  }
  return t;
}

inline RefTensor to_ref(const HostTensor& t) { return {t.shape, std::vector<double>(t.data.begin(), t.data.end())}; }

// "[n,c,h,w]" of a flat index into a logical tensor.
inline std::string index_text(const Shape& s, int64_t flat) {
  std::vector<int64_t> idx(static_cast<size_t>(s.rank()));
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = flat % s[d];
    flat /= s[d];
  }
  std::string text = "[";
  for (size_t i = 0; i < idx.size(); ++i) text += (i ? "," : "") + std::to_string(idx[i]);
  return text + "]";
}

// ---- conv2d, batchnorm2d, relu/relu6 ----------------------------------------------------

struct ConvCase {
  const char* name;
  int64_t n, c, h, w, co;
  int64_t kh, kw, sh, sw, dh, dw;
  int64_t pt, pl, pb, pr;  // padding: top, left, bottom, right
  int64_t groups;
  bool bias;
};

// The convolutions of the layer tests and the op checker: edge shapes of every kind.
inline const ConvCase kConvCases[] = {
    //  name                 n  c   h   w  co  kh kw sh sw dh dw pt pl pb pr  g  bias
    {"3x3 pad 1 batch 3", 3, 5, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
    {"3x3 stride 2 odd", 1, 3, 11, 10, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, true},
    {"3x3 dilation 2", 2, 4, 9, 8, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, false},
    {"groups 2", 2, 6, 6, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, true},
    {"groups 3 stride 2", 1, 9, 8, 8, 6, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 3, true},
    {"1x1", 3, 17, 5, 3, 19, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, true},
    {"1x1 stride 2", 2, 8, 7, 7, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, false},
    {"7x7 stride 2 stem", 1, 3, 17, 17, 8, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, false},
    {"asymmetric pad", 2, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1, 0, 1, 1, 0, 1, true},
    {"1x3 kernel", 1, 4, 5, 9, 3, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, 1, true},
    {"kernel = input", 2, 3, 4, 4, 5, 4, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, true},
    {"depthwise 3x3", 2, 6, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, true},
    {"depthwise stride 2", 3, 5, 9, 8, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5, false},
    {"depthwise dilation 2", 1, 4, 9, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 4, true},
    {"depthwise 5x5 odd", 1, 3, 6, 11, 3, 5, 5, 2, 1, 1, 1, 2, 2, 2, 2, 3, true},
    // Larger than one GEMM tile in every direction (K = 360 taps per output).
    {"40 -> 33 channels 3x3", 2, 40, 9, 9, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
    {"3x3 16 channels (winograd's)", 1, 16, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
    {"groups 2, 2 outputs per input", 2, 4, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, true},
};

// PyTorch Conv2d in float64, NCHW, weights OIHW.
inline RefTensor conv_reference(const ConvCase& k, const HostTensor& x, const HostTensor& weight,
                                const HostTensor* bias) {
  const int64_t ho = (k.h + k.pt + k.pb - k.dh * (k.kh - 1) - 1) / k.sh + 1;
  const int64_t wo = (k.w + k.pl + k.pr - k.dw * (k.kw - 1) - 1) / k.sw + 1;
  const int64_t cin_g = k.c / k.groups, cout_g = k.co / k.groups;
  RefTensor y{Shape{k.n, k.co, ho, wo}, {}};
  y.data.reserve(static_cast<size_t>(y.shape.numel()));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.co; ++o)
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          double acc = bias ? bias->data[o] : 0.0;
          const int64_t g = o / cout_g;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                const int64_t iy = oy * k.sh - k.pt + ky * k.dh, ix = ox * k.sw - k.pl + kx * k.dw;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const double xv = x.data[((n * k.c + g * cin_g + ci) * k.h + iy) * k.w + ix];
                const double wv = weight.data[((o * cin_g + ci) * k.kh + ky) * k.kw + kx];
                acc += xv * wv;
              }
          y.data.push_back(acc);
        }
  return y;
}

// Inference batch norm in float64 on NCHW: (x - mean) / sqrt(var + eps) * gamma + beta.
inline RefTensor bn_reference(const RefTensor& x, const HostTensor& gamma, const HostTensor& beta,
                              const HostTensor& mean, const HostTensor& var, double eps) {
  RefTensor y = x;
  const int64_t C = x.shape.c(), HW = x.shape.h() * x.shape.w();
  for (size_t i = 0; i < y.data.size(); ++i) {
    const size_t c = static_cast<size_t>((static_cast<int64_t>(i) / HW) % C);
    y.data[i] = (x.data[i] - mean.data[c]) / std::sqrt(var.data[c] + eps) * gamma.data[c] + beta.data[c];
  }
  return y;
}

inline RefTensor relu6_reference(RefTensor x, bool six) {
  for (double& v : x.data) v = v < 0 ? 0 : (six && v > 6 ? 6 : v);
  return x;
}

// sigmoid, hardsigmoid, hardswish, silu as PyTorch defines them.
inline double pointwise_reference(const std::string& type, double x) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-x)), hard = std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
  if (type == "sigmoid") return sigmoid;
  if (type == "hardsigmoid") return hard;
  if (type == "hardswish") return x * hard;
  return x * sigmoid;  // silu
}

// mul: a * b, b of a's shape or [N, C, 1, 1] (a scale per image and channel).
inline RefTensor mul_reference(const HostTensor& a, const HostTensor& b) {
  RefTensor y{a.shape, std::vector<double>(a.data.size())};
  const bool broadcast = a.shape != b.shape;
  const int64_t hw = a.shape.rank() == 4 ? a.shape.h() * a.shape.w() : 1;
  for (size_t i = 0; i < y.data.size(); ++i) {
    const size_t j = broadcast ? i / static_cast<size_t>(hw) : i;  // NCHW: [n][c] = flat / (H*W)
    y.data[i] = double(a.data[i]) * double(b.data[j]);
  }
  return y;
}

// ---- pooling ----------------------------------------------------------------------------

struct PoolCase {
  const char* name;
  Shape input;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

// The windows of the pooling tests and the op checker (PyTorch's output size rules).
inline const PoolCase kPoolCases[] = {
    //  name                                  input          kh kw sh sw ph pw dh dw ceil
    {"3x3 s2 p1 (ResNet) batch 3", Shape{3, 4, 9, 8}, 3, 3, 2, 2, 1, 1, 1, 1, false},
    {"2x2 s2 odd input", Shape{2, 3, 7, 7}, 2, 2, 2, 2, 0, 0, 1, 1, false},
    {"ceil: last window reaches into padding", Shape{1, 3, 8, 8}, 3, 3, 2, 2, 1, 1, 1, 1, true},
    {"ceil: window starting in padding dropped", Shape{1, 2, 5, 5}, 2, 2, 2, 2, 1, 1, 1, 1, true},
    {"ceil: last window past the input, no padding", Shape{2, 3, 6, 7}, 3, 3, 2, 2, 0, 0, 1, 1, true},
    {"rectangular window and stride", Shape{2, 5, 7, 9}, 3, 2, 1, 2, 1, 1, 1, 1, false},
    {"1x1 window", Shape{1, 3, 4, 5}, 1, 1, 1, 1, 0, 0, 1, 1, false},
    {"window = input", Shape{2, 6, 5, 5}, 5, 5, 5, 5, 2, 2, 1, 1, false},
};

// Dilation applies to max pooling only.
inline const PoolCase kDilatedCases[] = {
    {"dilation 2 pad 1", Shape{1, 3, 7, 8}, 3, 3, 1, 1, 1, 1, 2, 2, false},
    {"dilation 2 stride 2 ceil", Shape{2, 2, 8, 9}, 2, 2, 2, 2, 1, 1, 2, 2, true},
    {"dilation [2,3]", Shape{1, 4, 9, 11}, 3, 3, 2, 1, 1, 0, 2, 3, false},
};

// PyTorch's pooling output size: floor or ceil of the window count, where in ceil mode a
// last window that would start in the right padding is dropped.
inline int64_t torch_pool_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? span + s - 1 : span) / s + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

inline Shape pooled_shape(const PoolCase& k) {
  const Shape& s = k.input;
  return Shape{s.n(), s.c(), torch_pool_extent(s.h(), k.kh, k.sh, k.ph, k.dh, k.ceil_mode),
               torch_pool_extent(s.w(), k.kw, k.sw, k.pw, k.dw, k.ceil_mode)};
}

inline double nchw_at(const HostTensor& x, int64_t n, int64_t c, int64_t y, int64_t xx) {
  const Shape& s = x.shape;
  return x.data[static_cast<size_t>(((n * s.c() + c) * s.h() + y) * s.w() + xx)];
}

// The sum of x[n][c] over rows [y0, y1) and columns [x0, x1).
inline double window_sum(const HostTensor& x, int64_t n, int64_t c, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  double sum = 0;
  for (int64_t iy = y0; iy < y1; ++iy)
    for (int64_t ix = x0; ix < x1; ++ix) sum += nchw_at(x, n, c, iy, ix);
  return sum;
}

// Max over the in-bounds taps of each (dilated) window.
inline RefTensor maxpool_reference(const PoolCase& k, const HostTensor& x) {
  RefTensor y{pooled_shape(k), {}};
  const Shape& s = x.shape;
  for (int64_t n = 0; n < s.n(); ++n)
    for (int64_t c = 0; c < s.c(); ++c)
      for (int64_t oy = 0; oy < y.shape.h(); ++oy)
        for (int64_t ox = 0; ox < y.shape.w(); ++ox) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t ky = 0; ky < k.kh; ++ky)
            for (int64_t kx = 0; kx < k.kw; ++kx) {
              const int64_t iy = oy * k.sh - k.ph + ky * k.dh, ix = ox * k.sw - k.pw + kx * k.dw;
              if (iy >= 0 && iy < s.h() && ix >= 0 && ix < s.w()) m = std::max(m, nchw_at(x, n, c, iy, ix));
            }
          y.data.push_back(m);
        }
  return y;
}

// PyTorch's avg_pool2d: the window is clipped to the padded input (that size is the divisor
// with count_include_pad), then to the input (the divisor without it).
inline RefTensor avgpool_reference(const PoolCase& k, bool count_include_pad, const HostTensor& x) {
  RefTensor y{pooled_shape(k), {}};
  const Shape& s = x.shape;
  for (int64_t n = 0; n < s.n(); ++n)
    for (int64_t c = 0; c < s.c(); ++c)
      for (int64_t oy = 0; oy < y.shape.h(); ++oy)
        for (int64_t ox = 0; ox < y.shape.w(); ++ox) {
          int64_t y0 = oy * k.sh - k.ph, x0 = ox * k.sw - k.pw;
          int64_t y1 = std::min(y0 + k.kh, s.h() + k.ph), x1 = std::min(x0 + k.kw, s.w() + k.pw);
          const int64_t padded_count = (y1 - y0) * (x1 - x0);
          y0 = std::max<int64_t>(y0, 0);
          x0 = std::max<int64_t>(x0, 0);
          y1 = std::min(y1, s.h());
          x1 = std::min(x1, s.w());
          const double sum = window_sum(x, n, c, y0, y1, x0, x1);
          y.data.push_back(sum / static_cast<double>(count_include_pad ? padded_count : (y1 - y0) * (x1 - x0)));
        }
  return y;
}

// PyTorch's adaptive bins: [floor(i*in/out), ceil((i+1)*in/out)).
inline RefTensor adaptive_reference(const HostTensor& x, int64_t out_h, int64_t out_w) {
  const Shape& s = x.shape;
  RefTensor y{Shape{s.n(), s.c(), out_h, out_w}, {}};
  for (int64_t n = 0; n < s.n(); ++n)
    for (int64_t c = 0; c < s.c(); ++c)
      for (int64_t oy = 0; oy < out_h; ++oy)
        for (int64_t ox = 0; ox < out_w; ++ox) {
          const int64_t y0 = oy * s.h() / out_h, y1 = ((oy + 1) * s.h() + out_h - 1) / out_h;
          const int64_t x0 = ox * s.w() / out_w, x1 = ((ox + 1) * s.w() + out_w - 1) / out_w;
          y.data.push_back(window_sum(x, n, c, y0, y1, x0, x1) / static_cast<double>((y1 - y0) * (x1 - x0)));
        }
  return y;
}

// ---- linear and the channel ops ---------------------------------------------------------

inline RefTensor linear_reference(const HostTensor& x, const HostTensor& w, const HostTensor* b) {
  const int64_t rows = x.shape[0], in = x.shape[1], out = w.shape[0];
  RefTensor y{Shape{rows, out}, {}};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b ? b->data[static_cast<size_t>(o)] : 0.0;
      for (int64_t i = 0; i < in; ++i) acc += double(x.data[r * in + i]) * w.data[o * in + i];
      y.data.push_back(acc);
    }
  return y;
}

// Elements of dim 1 at "row" r (all other indices fixed) of a 2-D or 4-D logical tensor,
// as (flat index) = base(r) + channel * stride.
struct ChannelView {
  int64_t rows, channels, inner;  // inner = H*W for rank 4, 1 for rank 2
  explicit ChannelView(const Shape& s)
      : rows(s[0] * (s.rank() == 4 ? s.h() * s.w() : 1)), channels(s[1]), inner(s.rank() == 4 ? s.h() * s.w() : 1) {}
  size_t index(int64_t row, int64_t c) const {
    const int64_t n = row / inner, pixel = row % inner;
    return static_cast<size_t>((n * channels + c) * inner + pixel);
  }
};

inline RefTensor concat_reference(const std::vector<HostTensor>& inputs) {
  Shape out = inputs[0].shape;
  out[1] = 0;
  for (const HostTensor& t : inputs) out[1] += t.shape[1];
  RefTensor y{out, std::vector<double>(static_cast<size_t>(out.numel()))};
  const ChannelView ov(out);
  int64_t offset = 0;
  for (const HostTensor& t : inputs) {
    const ChannelView iv(t.shape);
    for (int64_t r = 0; r < iv.rows; ++r)
      for (int64_t c = 0; c < iv.channels; ++c) y.data[ov.index(r, offset + c)] = t.data[iv.index(r, c)];
    offset += iv.channels;
  }
  return y;
}

// Channels [begin, begin + count) of x (one piece of a split).
inline RefTensor channel_slice(const HostTensor& x, int64_t begin, int64_t count) {
  Shape out = x.shape;
  out[1] = count;
  RefTensor y{out, std::vector<double>(static_cast<size_t>(out.numel()))};
  const ChannelView iv(x.shape), ov(out);
  for (int64_t r = 0; r < iv.rows; ++r)
    for (int64_t c = 0; c < count; ++c) y.data[ov.index(r, c)] = x.data[iv.index(r, begin + c)];
  return y;
}

// PyTorch: x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, C, H, W), i.e. output
// channel j*g + i is input channel i*(C/g) + j.
inline RefTensor shuffle_reference(const HostTensor& x, int64_t groups) {
  const Shape& s = x.shape;
  const int64_t per_group = s.c() / groups, hw = s.h() * s.w();
  RefTensor y{s, std::vector<double>(x.data.size())};
  for (int64_t n = 0; n < s.n(); ++n)
    for (int64_t i = 0; i < groups; ++i)
      for (int64_t j = 0; j < per_group; ++j)
        for (int64_t p = 0; p < hw; ++p)
          y.data[static_cast<size_t>((n * s.c() + j * groups + i) * hw + p)] =
              x.data[static_cast<size_t>((n * s.c() + i * per_group + j) * hw + p)];
  return y;
}

// Softmax over dim 1, with the row maximum subtracted (an identity in exact arithmetic).
inline RefTensor softmax_reference(const HostTensor& x) {
  const ChannelView v(x.shape);
  RefTensor y{x.shape, std::vector<double>(x.data.size())};
  for (int64_t r = 0; r < v.rows; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < v.channels; ++c) max = std::max(max, double(x.data[v.index(r, c)]));
    for (int64_t c = 0; c < v.channels; ++c) sum += std::exp(x.data[v.index(r, c)] - max);
    for (int64_t c = 0; c < v.channels; ++c) y.data[v.index(r, c)] = std::exp(x.data[v.index(r, c)] - max) / sum;
  }
  return y;
}

}  // namespace layer_test
}  // namespace winfer
