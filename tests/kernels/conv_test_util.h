// Shared by the convolution tests: a fluent ConvParams builder, random data, and a guarded
// run of one algorithm (canaries after every buffer, output pre-filled with NaN).
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/conv_algorithm.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace test {

// Fluent ConvParams: conv(n, c, h, w, co).k(3, 3).s(2, 2).pad(1, 1, 1, 1).d(2, 2).g(4)
struct Conv {
  ConvParams p;
  Conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t co) {
    p.batch = n;
    p.in_channels = c;
    p.in_h = h;
    p.in_w = w;
    p.out_channels = co;
  }
  Conv& k(int64_t kh, int64_t kw) { p.kernel_h = kh; p.kernel_w = kw; return *this; }
  Conv& s(int64_t sh, int64_t sw) { p.stride_h = sh; p.stride_w = sw; return *this; }
  Conv& pad(int64_t top, int64_t left, int64_t bottom, int64_t right) {
    p.pad_top = top; p.pad_left = left; p.pad_bottom = bottom; p.pad_right = right;
    return *this;
  }
  Conv& pad(int64_t all) { return pad(all, all, all, all); }
  Conv& d(int64_t dh, int64_t dw) { p.dilation_h = dh; p.dilation_w = dw; return *this; }
  Conv& g(int64_t groups) { p.groups = groups; return *this; }
};

struct ConvCase {
  ConvParams p;
  bool bias;
  Activation act;
};

constexpr Activation kNone = Activation::kNone, kRelu = Activation::kRelu, kRelu6 = Activation::kRelu6;

inline std::string describe(const ConvCase& c) {
  return c.p.to_string() + (c.bias ? " bias" : " nobias") + " act=" + activation_name(c.act);
}

struct ConvData {
  std::vector<float> input, weight, bias;
};

inline ConvData make_data(const ConvParams& p, uint32_t seed) {
  ConvData d;
  d.input = test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels), seed);
  d.weight = test::random_floats(
      static_cast<size_t>(p.out_channels * p.in_channels_per_group() * p.kernel_h * p.kernel_w), seed + 1);
  d.bias = test::random_floats(static_cast<size_t>(p.out_channels), seed + 2);
  return d;
}

// Packs and runs `algo` with every buffer guarded by a canary, and checks the canaries.
// The output starts as NaN so an element the algorithm forgets to write shows up. `residual`
// (the output's size, or null) is the fused shortcut.
inline std::vector<float> run_conv(const ConvAlgorithm& algo, const ConvParams& p, const ConvData& d,
                            bool with_bias, Activation act, int threads, const float* residual = nullptr) {
  GuardedBuffer packed(algo.packed_weight_bytes(p));
  algo.pack_weights(p, d.weight.data(), packed.floats());
  CHECK_MESSAGE(packed.canary_intact(), algo.name(), " pack_weights wrote past packed_weight_bytes");

  const size_t ws_bytes = algo.workspace_bytes(p);
  GuardedBuffer workspace(ws_bytes);
  const size_t out_count = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
  GuardedBuffer out(out_count * sizeof(float));
  std::memset(out.data_bytes(), 0xFF, out_count * sizeof(float));  // NaN

  algo.run(p, d.input.data(), packed.floats(), with_bias ? d.bias.data() : nullptr, residual, out.floats(),
           ws_bytes ? workspace.data_bytes() : nullptr, act, threads);
  CHECK_MESSAGE(workspace.canary_intact(), algo.name(), " wrote past workspace_bytes");
  CHECK_MESSAGE(out.canary_intact(), algo.name(), " wrote past the output");
  return std::vector<float>(out.floats(), out.floats() + out_count);
}

// The shared edge-shape check of the micro-kernel algorithms (im2win, indirect): each case
// against the float64 reference and `direct`, under every ISA this machine runs, and
// bitwise-identical results for 2 and 3 threads (the tiles and each one's summation order do
// not depend on the thread count).
inline void check_on_edge_cases(const ConvAlgorithm& algorithm, const std::vector<ConvCase>& cases,
                                uint32_t seed) {
  const ConvAlgorithm* direct = find_conv_algorithm("direct");
  REQUIRE(direct != nullptr);
  const std::string name = algorithm.name();
  for (const ConvCase& c : cases) {
    INFO(describe(c));
    REQUIRE(c.p.is_valid());
    REQUIRE(algorithm.supports(c.p));
    const ConvData d = make_data(c.p, seed += 10);
    const ref::Result want = ref::conv2d(c.p, d.input, d.weight, c.bias ? d.bias.data() : nullptr, c.act);
    const std::vector<float> base = run_conv(*direct, c.p, d, c.bias, c.act, 1);
    std::vector<double> base_d(base.begin(), base.end()), twice(want.abs_sum);
    for (double& v : twice) v *= 2;
    for (cpu::Isa isa : runnable_isas()) {
      IsaCap cap(isa);
      INFO("isa ", isa_name(isa));
      const std::vector<float> one = run_conv(algorithm, c.p, d, c.bias, c.act, 1);
      check_close(one.data(), want.value, want.abs_sum, want.terms, (name + " vs reference").c_str());
      check_close(one.data(), base_d, twice, want.terms, (name + " vs direct").c_str());
      for (int threads : {2, 3}) {
        INFO("threads ", threads);
        const std::vector<float> many = run_conv(algorithm, c.p, d, c.bias, c.act, threads);
        CHECK(bitwise_equal(one.data(), many.data(), one.size()));
      }
    }
  }
}

}  // namespace test
}  // namespace winfer
