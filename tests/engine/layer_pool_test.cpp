// maxpool2d, avgpool2d and adaptive_avgpool2d against float64 references written from
// PyTorch's definitions (output size, ceil_mode, count_include_pad, adaptive bins).
#include <algorithm>
#include <limits>
#include <string>

#include "layer_test_util.h"

namespace winfer {
namespace layer_test {
namespace {

struct PoolCase {
  const char* name;
  Shape input;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil_mode;
};

// PyTorch's pooling output size: floor or ceil of the window count, where in ceil mode a
// last window that would start in the right padding is dropped.
int64_t torch_pool_extent(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? span + s - 1 : span) / s + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

AttrList pool_attrs(const PoolCase& k, bool with_dilation) {
  AttrList a = {{"kernel_size", ints_attr({k.kh, k.kw})},
                {"stride", ints_attr({k.sh, k.sw})},
                {"padding", ints_attr({k.ph, k.pw})},
                {"ceil_mode", bool_attr(k.ceil_mode)}};
  if (with_dilation) a.push_back({"dilation", ints_attr({k.dh, k.dw})});
  return a;
}

Shape pooled_shape(const PoolCase& k) {
  const Shape& s = k.input;
  return Shape{s.n(), s.c(), torch_pool_extent(s.h(), k.kh, k.sh, k.ph, k.dh, k.ceil_mode),
               torch_pool_extent(s.w(), k.kw, k.sw, k.pw, k.dw, k.ceil_mode)};
}

double at(const HostTensor& x, int64_t n, int64_t c, int64_t y, int64_t xx) {
  const Shape& s = x.shape;
  return x.data[static_cast<size_t>(((n * s.c() + c) * s.h() + y) * s.w() + xx)];
}

// Max over the in-bounds taps of each (dilated) window.
RefTensor maxpool_reference(const PoolCase& k, const HostTensor& x) {
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
              if (iy >= 0 && iy < s.h() && ix >= 0 && ix < s.w()) m = std::max(m, at(x, n, c, iy, ix));
            }
          y.data.push_back(m);
        }
  return y;
}

// PyTorch's avg_pool2d: the window is clipped to the padded input (that size is the divisor
// with count_include_pad), then to the input (the divisor without it).
RefTensor avgpool_reference(const PoolCase& k, bool count_include_pad, const HostTensor& x) {
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
          double sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) sum += at(x, n, c, iy, ix);
          y.data.push_back(sum / static_cast<double>(count_include_pad ? padded_count : (y1 - y0) * (x1 - x0)));
        }
  return y;
}

// PyTorch's adaptive bins: [floor(i*in/out), ceil((i+1)*in/out)).
RefTensor adaptive_reference(const HostTensor& x, int64_t out_h, int64_t out_w) {
  const Shape& s = x.shape;
  RefTensor y{Shape{s.n(), s.c(), out_h, out_w}, {}};
  for (int64_t n = 0; n < s.n(); ++n)
    for (int64_t c = 0; c < s.c(); ++c)
      for (int64_t oy = 0; oy < out_h; ++oy)
        for (int64_t ox = 0; ox < out_w; ++ox) {
          const int64_t y0 = oy * s.h() / out_h, y1 = ((oy + 1) * s.h() + out_h - 1) / out_h;
          const int64_t x0 = ox * s.w() / out_w, x1 = ((ox + 1) * s.w() + out_w - 1) / out_w;
          double sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) sum += at(x, n, c, iy, ix);
          y.data.push_back(sum / static_cast<double>((y1 - y0) * (x1 - x0)));
        }
  return y;
}

const PoolCase kPoolCases[] = {
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
const PoolCase kDilatedCases[] = {
    {"dilation 2 pad 1", Shape{1, 3, 7, 8}, 3, 3, 1, 1, 1, 1, 2, 2, false},
    {"dilation 2 stride 2 ceil", Shape{2, 2, 8, 9}, 2, 2, 2, 2, 1, 1, 2, 2, true},
    {"dilation [2,3]", Shape{1, 4, 9, 11}, 3, 3, 2, 1, 1, 0, 2, 3, false},
};

TEST_CASE("layer maxpool2d matches the float64 reference") {
  std::vector<PoolCase> cases(std::begin(kPoolCases), std::end(kPoolCases));
  cases.insert(cases.end(), std::begin(kDilatedCases), std::end(kDilatedCases));
  for (const PoolCase& k : cases) {
    // All-negative data too: a padding tap counted as 0 would then win the max.
    for (float offset : {0.f, -2.f}) {
      const HostTensor x = random_tensor(k.input, 1.f, offset);
      const HostTensor y = run_simple("maxpool2d", pool_attrs(k, true), x, RunOptions{nullptr, 2, nullptr});
      check_close(y, maxpool_reference(k, x), kExact, k.name);
    }
  }
}

TEST_CASE("layer maxpool2d ceil_mode output sizes follow PyTorch") {
  // Spelled out so that a shared mistake in torch_pool_extent and pooled_extent shows.
  const PoolCase& drop = kPoolCases[3];  // 5 with k2 s2 p1: 4 windows, the 4th starts at 6 > 5
  CHECK(run_simple("maxpool2d", pool_attrs(drop, true), random_tensor(drop.input)).shape == Shape{1, 2, 3, 3});
  const PoolCase& keep = kPoolCases[2];  // 8 with k3 s2 p1: ceil(7/2) + 1 = 5
  CHECK(run_simple("maxpool2d", pool_attrs(keep, true), random_tensor(keep.input)).shape == Shape{1, 3, 5, 5});
  PoolCase floor_mode = keep;
  floor_mode.ceil_mode = false;
  CHECK(run_simple("maxpool2d", pool_attrs(floor_mode, true), random_tensor(keep.input)).shape ==
        Shape{1, 3, 4, 4});
}

TEST_CASE("layer maxpool2d stride defaults to kernel_size") {
  const HostTensor x = random_tensor(Shape{1, 2, 6, 7});
  const HostTensor y = run_simple("maxpool2d", {{"kernel_size", int_attr(3)}}, x);
  const PoolCase k{"default stride", x.shape, 3, 3, 3, 3, 0, 0, 1, 1, false};
  check_close(y, maxpool_reference(k, x), kExact);
}

TEST_CASE("layer avgpool2d matches the float64 reference, count_include_pad both ways") {
  for (const PoolCase& k : kPoolCases) {
    for (bool count_include_pad : {true, false}) {
      const HostTensor x = random_tensor(k.input);
      AttrList attrs = pool_attrs(k, false);
      attrs.push_back({"count_include_pad", bool_attr(count_include_pad)});
      const HostTensor y = run_simple("avgpool2d", attrs, x, RunOptions{nullptr, 2, nullptr});
      check_close(y, avgpool_reference(k, count_include_pad, x), kSumTol,
                  std::string(k.name) + (count_include_pad ? ", count_include_pad" : ", exclude pad"));
    }
  }
}

TEST_CASE("layer avgpool2d defaults: stride = kernel_size, count_include_pad = true") {
  const HostTensor x = random_tensor(Shape{2, 3, 7, 5});
  const HostTensor y = run_simple("avgpool2d", {{"kernel_size", int_attr(3)}, {"padding", int_attr(1)}}, x);
  const PoolCase k{"defaults", x.shape, 3, 3, 3, 3, 1, 1, 1, 1, false};
  check_close(y, avgpool_reference(k, true, x), kSumTol);
}

TEST_CASE("layer adaptive_avgpool2d matches the float64 reference") {
  struct Case {
    Shape input;
    int64_t out_h, out_w;
  };
  const Case cases[] = {
      {Shape{2, 3, 7, 5}, 3, 4},   // bins that overlap and differ in size
      {Shape{3, 4, 6, 6}, 1, 1},   // global average pooling
      {Shape{1, 2, 3, 2}, 5, 3},   // output larger than the input
      {Shape{1, 3, 7, 7}, 7, 7},   // identity
      {Shape{2, 5, 10, 9}, 4, 2},  // non-divisible both ways
  };
  for (const Case& c : cases) {
    const HostTensor x = random_tensor(c.input);
    const AttrValue size = c.out_h == c.out_w ? int_attr(c.out_h) : ints_attr({c.out_h, c.out_w});
    const HostTensor y = run_simple("adaptive_avgpool2d", {{"output_size", size}}, x);
    check_close(y, adaptive_reference(x, c.out_h, c.out_w), kSumTol, c.input.to_string());
  }
}

}  // namespace
}  // namespace layer_test
}  // namespace winfer
