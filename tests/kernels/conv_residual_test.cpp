// The fused residual (a ResNet shortcut, out = act(conv(x) + bias + residual)) of every CPU
// convolution algorithm: in the micro-kernel epilogue (im2win, indirect), the GEMM epilogue
// pass (im2col), or the shared fallback pass (direct, depthwise). Each against the float64
// reference under every ISA this machine runs and 1 and 3 threads, the residual left as it was.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_algorithm.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::ConvCase;
using test::kNone;
using test::kRelu;
using test::kRelu6;

// Odd sizes, padding, stride 2, 1x1 (read in place by im2win), partial channel panels, groups,
// batch 2, a 7x7 stem and a depthwise layer; relu, relu6 and none.
std::vector<ConvCase> residual_cases() {
  return {
      {Conv(1, 5, 7, 9, 11).k(3, 3).pad(1).p, true, kRelu},
      {Conv(2, 8, 9, 7, 20).k(3, 3).s(2, 2).pad(1).p, true, kNone},
      {Conv(2, 16, 6, 5, 40).p, false, kRelu},
      {Conv(1, 12, 9, 9, 33).s(2, 2).p, true, kRelu},
      {Conv(2, 24, 5, 7, 70).k(3, 3).pad(1).p, true, kRelu6},
      {Conv(1, 6, 9, 9, 36).k(3, 3).pad(1).g(2).p, true, kRelu},
      {Conv(1, 3, 11, 13, 16).k(7, 7).s(2, 2).pad(3).p, true, kNone},
      {Conv(2, 16, 7, 7, 16).k(3, 3).pad(1).g(16).p, true, kRelu},
      {Conv(2, 1024, 3, 5, 40).p, true, kRelu},          // im2win in K chunks: the residual in the first
      {Conv(1, 512, 5, 6, 36).s(2, 2).p, false, kNone},  // pixels 4 KiB apart, packed
  };
}

TEST_CASE("conv residual: every algorithm adds the residual before the activation") {
  uint32_t seed = 7000;
  for (const ConvCase& c : residual_cases()) {
    INFO(test::describe(c));
    REQUIRE(c.p.is_valid());
    const test::ConvData d = test::make_data(c.p, seed += 10);
    const size_t out_count = static_cast<size_t>(c.p.batch * c.p.out_h() * c.p.out_w() * c.p.out_channels);
    const std::vector<float> residual = test::random_floats(out_count, seed + 5, -2.f, 2.f);
    const ref::Result want =
        ref::conv2d(c.p, d.input, d.weight, c.bias ? d.bias.data() : nullptr, c.act, residual.data());
    int algorithms = 0;
    for (const ConvAlgorithm* algorithm : conv_algorithms()) {
      if (!algorithm->supports(c.p)) continue;
      ++algorithms;
      const std::string name = algorithm->name();
      INFO("algorithm ", name);
      for (cpu::Isa isa : test::runnable_isas()) {
        test::IsaCap cap(isa);
        INFO("isa ", test::isa_name(isa));
        for (int threads : {1, 3}) {
          INFO("threads ", threads);
          const std::vector<float> residual_copy = residual;
          const std::vector<float> got =
              test::run_conv(*algorithm, c.p, d, c.bias, c.act, threads, residual_copy.data());
          test::check_close(got.data(), want.value, want.abs_sum, want.terms, name + " with residual vs reference");
          CHECK_MESSAGE(residual_copy == residual, name, " wrote into the residual");
        }
      }
    }
    CHECK(algorithms >= 2);  // direct and at least one other (depthwise, or the GEMM-like ones)
  }
}

TEST_CASE("conv residual: a zero residual gives the result without one, bit for bit") {
  // The fused path must not change the arithmetic of the unfused one: conv + bias, then + 0.
  const ConvParams p = Conv(1, 16, 8, 8, 24).k(3, 3).pad(1).p;
  const test::ConvData d = test::make_data(p, 91);
  const std::vector<float> zeros(static_cast<size_t>(p.out_h() * p.out_w() * p.out_channels), 0.f);
  for (const ConvAlgorithm* algorithm : conv_algorithms()) {
    if (!algorithm->supports(p)) continue;
    INFO("algorithm ", std::string(algorithm->name()));
    const std::vector<float> plain = test::run_conv(*algorithm, p, d, true, kRelu, 1);
    const std::vector<float> fused = test::run_conv(*algorithm, p, d, true, kRelu, 1, zeros.data());
    CHECK(test::bitwise_equal(plain.data(), fused.data(), plain.size()));
  }
}

TEST_CASE("conv residual: algorithms that say so give the same bits with the output written over the residual") {
  int in_place = 0;
  uint32_t seed = 7700;
  for (const ConvCase& c : residual_cases()) {
    INFO(test::describe(c));
    const test::ConvData d = test::make_data(c.p, seed += 10);
    const size_t out_count = static_cast<size_t>(c.p.batch * c.p.out_h() * c.p.out_w() * c.p.out_channels);
    const std::vector<float> residual = test::random_floats(out_count, seed + 5, -2.f, 2.f);
    for (const ConvAlgorithm* algorithm : conv_algorithms()) {
      if (!algorithm->supports(c.p) || !algorithm->residual_may_alias_output()) continue;
      ++in_place;
      INFO("algorithm ", std::string(algorithm->name()));
      const std::vector<float> apart = test::run_conv(*algorithm, c.p, d, c.bias, c.act, 3, residual.data());
      // The planner's in-place case: the residual's storage is the output.
      std::vector<float> packed(algorithm->packed_weight_bytes(c.p) / sizeof(float));
      algorithm->pack_weights(c.p, d.weight.data(), packed.data());
      std::vector<float> workspace(algorithm->workspace_bytes(c.p) / sizeof(float) + 1);
      std::vector<float> shared = residual;
      algorithm->run(c.p, d.input.data(), packed.data(), c.bias ? d.bias.data() : nullptr, shared.data(), shared.data(),
                     workspace.data(), c.act, 3);
      CHECK(test::bitwise_equal(shared.data(), apart.data(), apart.size()));
    }
  }
  CHECK(in_place >= 2 * 7);  // im2win and indirect on every non-depthwise case
}

}  // namespace
}  // namespace winfer
