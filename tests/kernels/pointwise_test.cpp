// sigmoid, hardsigmoid, hardswish, silu (kernels/cpu/pointwise.h) over float's whole range and
// its special values, in place and threaded; mul and the channels-last channel scale.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/pointwise.h"
#include "test_util.h"

namespace winfer {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kUlp = 1.0 / (1 << 23);  // relative spacing of floats at most 2^-23

const PointwiseFn kFns[] = {PointwiseFn::kSigmoid, PointwiseFn::kHardSigmoid, PointwiseFn::kHardSwish,
                            PointwiseFn::kSilu};

// Every 1/1024 of [-120, 120] (past both ends of exp's float range), large values (the exp's
// integer part beyond its clamps), and the special values.
std::vector<float> sweep() {
  std::vector<float> x;
  for (int i = -120 * 1024; i <= 120 * 1024; ++i) x.push_back(float(i) / 1024.f);
  for (float v : {1e4f, 8.8e6f, 1.2e7f, 1.7e7f, 3e9f, 1e30f, 3.4e38f, kInf, 1e-30f, 1e-42f, 0.f})
    for (float sign : {1.f, -1.f}) x.push_back(sign * v);
  x.push_back(-3.f), x.push_back(3.f), x.push_back(std::nanf(""));
  return x;
}

double exact(PointwiseFn fn, double x) {
  const double sigmoid = 1.0 / (1.0 + std::exp(-x));
  switch (fn) {
    case PointwiseFn::kSigmoid: return sigmoid;
    case PointwiseFn::kSilu: return std::isinf(x) ? (x > 0 ? x : 0.0) : x * sigmoid;
    default: break;
  }
  return 0;
}

// PyTorch's float expressions for the hard ones (torch/csrc/.../Activation.cpp), which the kernel
// must reproduce bit for bit.
float torch_hard(PointwiseFn fn, float x) {
  const float clamped = std::fmin(std::fmax(x + 3.f, 0.f), 6.f);
  if (std::isnan(x)) return x;
  return fn == PointwiseFn::kHardSigmoid ? clamped / 6.f : x * clamped / 6.f;
}

TEST_CASE("pointwise activations: sigmoid and silu within 4 ulp over float's range, hard ones as torch") {
  const std::vector<float> x = sweep();
  for (PointwiseFn fn : kFns) {
    const std::string name = pointwise_fn_name(fn);
    INFO(name);
    std::vector<float> out(x.size(), NAN);
    pointwise_activation(x.data(), out.data(), static_cast<int64_t>(x.size()), fn, 1);
    std::vector<float> inplace = x;
    pointwise_activation(inplace.data(), inplace.data(), static_cast<int64_t>(x.size()), fn, 3);
    int64_t bad = 0;
    double worst_ulps = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float got = out[i];
      bool ok;
      if (std::isnan(x[i])) {
        ok = std::isnan(got);
      } else if (fn == PointwiseFn::kHardSigmoid || fn == PointwiseFn::kHardSwish) {
        const float want = torch_hard(fn, x[i]);  // NaN for hardswish(-inf): -inf * 0
        ok = std::isnan(want) ? std::isnan(got) : got == want;
      } else {
        // Relative to the exact value; below float's smallest normal number (and where 1 + e
        // overflows in float, x < -88.4, as in torch), an absolute 1e-35.
        const double want = exact(fn, x[i]), error = std::fabs(double(got) - want);
        if (std::isinf(want)) {
          ok = got == want;
        } else {
          ok = error <= 4 * kUlp * std::fabs(want) || error <= 1e-35;
          if (std::fabs(want) > 1e-35) worst_ulps = std::max(worst_ulps, error / (kUlp * std::fabs(want)));
        }
      }
      ok = ok && (std::isnan(got) ? std::isnan(inplace[i]) : inplace[i] == got);
      if (!ok && bad++ < 5) FAIL_CHECK("x = " << x[i] << ": got " << got << ", in place " << inplace[i]);
    }
    CHECK(bad == 0);
    if (worst_ulps > 0) MESSAGE(name, ": worst ", worst_ulps, " ulp");
  }
}

TEST_CASE("mul: same shapes and the channels-last channel scale, separate and in place, on every ISA") {
  // 19 channels: whole vectors and a tail on every ISA; 48: whole vectors only; 3: the tail only.
  for (const cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    for (const int64_t channels : {19, 48, 3}) {
      INFO(test::isa_name(isa), ", ", channels, " channels");
      const int64_t n = 3, pixels = 35;
      const std::vector<float> a = test::random_floats(size_t(n * pixels * channels), 11, -4.f, 4.f);
      const std::vector<float> b = test::random_floats(a.size(), 12, -4.f, 4.f);
      const std::vector<float> scale = test::random_floats(size_t(n * channels), 13, -2.f, 2.f);
      std::vector<float> product(a.size()), scaled(a.size());
      mul(a.data(), b.data(), product.data(), static_cast<int64_t>(a.size()), 1);
      scale_channels_nhwc(a.data(), scale.data(), scaled.data(), n, pixels, channels, 2);
      bool all_equal = true;
      for (int64_t i = 0; i < int64_t(a.size()); ++i) {
        all_equal &= product[size_t(i)] == a[size_t(i)] * b[size_t(i)];
        const int64_t image = i / (pixels * channels), c = i % channels;
        all_equal &= scaled[size_t(i)] == a[size_t(i)] * scale[size_t(image * channels + c)];
      }
      CHECK(all_equal);
      std::vector<float> inplace = a;
      mul(inplace.data(), b.data(), inplace.data(), static_cast<int64_t>(a.size()), 2);
      CHECK(inplace == product);
      inplace = a;
      scale_channels_nhwc(inplace.data(), scale.data(), inplace.data(), n, pixels, channels, 1);
      CHECK(inplace == scaled);
    }
  }
}

}  // namespace
}  // namespace winfer
