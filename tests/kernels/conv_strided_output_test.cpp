// ConvParams::out_pixel_stride (concat without copies, docs/MEMORY.md): an algorithm whose
// supports_output_stride() is true writes each output pixel's channels at
// output + pixel * stride, bit for bit what it writes densely, and touches nothing between
// them (the other producers' channels of a concat's output). Every ISA this machine runs,
// 1 and 3 threads.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_algorithm.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::ConvCase;
using test::kNone;
using test::kRelu;
using test::kRelu6;

// 1x1 unpadded (im2col's pointwise path, im2win reading in place), 3x3 stride 1 (winograd),
// stride 2, partial channel panels, groups, batch 2, a 7x7 stem.
std::vector<ConvCase> strided_cases() {
  return {
      {Conv(1, 16, 6, 5, 40).p, true, kRelu},
      {Conv(2, 12, 7, 9, 33).p, false, kNone},
      {Conv(1, 5, 7, 9, 11).k(3, 3).pad(1).p, true, kRelu},
      {Conv(2, 24, 9, 7, 70).k(3, 3).pad(1).p, true, kRelu6},
      {Conv(2, 8, 9, 7, 20).k(3, 3).s(2, 2).pad(1).p, true, kNone},
      {Conv(1, 6, 9, 9, 36).k(3, 3).pad(1).g(2).p, true, kRelu},
      {Conv(1, 3, 11, 13, 16).k(7, 7).s(2, 2).pad(3).p, true, kNone},
  };
}

// A value no convolution here produces: what the strided run must leave untouched.
constexpr float kSentinel = -12345.5f;

TEST_CASE("conv strided output: every algorithm that supports it writes exactly its channel slice") {
  std::set<std::string> strided;
  uint32_t seed = 9100;
  for (const ConvCase& c : strided_cases()) {
    INFO(test::describe(c));
    REQUIRE(c.p.is_valid());
    const test::ConvData d = test::make_data(c.p, seed += 10);
    const int64_t pixels = c.p.batch * c.p.out_h() * c.p.out_w();
    const int64_t before = 3, after = 5;  // channels of other inputs on either side
    ConvParams ps = c.p;
    ps.out_pixel_stride = before + c.p.out_channels + after;
    REQUIRE(ps.is_valid());
    for (const ConvAlgorithm* algorithm : conv_algorithms()) {
      if (!algorithm->supports_output_stride() || !algorithm->supports(c.p)) continue;
      strided.insert(algorithm->name());
      INFO("algorithm ", std::string(algorithm->name()));
      CHECK(algorithm->workspace_bytes(ps) == algorithm->workspace_bytes(c.p));
      CHECK(algorithm->packed_weight_bytes(ps) == algorithm->packed_weight_bytes(c.p));
      for (cpu::Isa isa : test::runnable_isas()) {
        test::IsaCap cap(isa);
        INFO("isa ", test::isa_name(isa));
        for (int threads : {1, 3}) {
          INFO("threads ", threads);
          const std::vector<float> dense = test::run_conv(*algorithm, c.p, d, c.bias, c.act, threads);

          test::GuardedBuffer packed(algorithm->packed_weight_bytes(ps));
          algorithm->pack_weights(ps, d.weight.data(), packed.floats());
          const size_t ws_bytes = algorithm->workspace_bytes(ps);
          test::GuardedBuffer workspace(ws_bytes);
          const size_t count = static_cast<size_t>(pixels * ps.out_pixel_stride);
          test::GuardedBuffer out(count * sizeof(float));
          for (size_t i = 0; i < count; ++i) out.floats()[i] = kSentinel;
          algorithm->run(ps, d.input.data(), packed.floats(), c.bias ? d.bias.data() : nullptr, nullptr,
                         out.floats() + before, ws_bytes ? workspace.data_bytes() : nullptr, c.act, threads);
          CHECK(out.canary_intact());
          CHECK(workspace.canary_intact());
          int64_t wrong = 0, touched = 0;
          for (int64_t px = 0; px < pixels; ++px) {
            const float* row = out.floats() + px * ps.out_pixel_stride;
            if (std::memcmp(row + before, dense.data() + px * c.p.out_channels,
                            static_cast<size_t>(c.p.out_channels) * sizeof(float)) != 0)
              ++wrong;
            for (int64_t k = 0; k < before; ++k) touched += row[k] != kSentinel;
            for (int64_t k = before + c.p.out_channels; k < ps.out_pixel_stride; ++k) touched += row[k] != kSentinel;
          }
          CHECK_MESSAGE(wrong == 0, wrong, " pixels differ from the dense output");
          CHECK_MESSAGE(touched == 0, touched, " floats written outside the slice");
        }
      }
    }
  }
  for (const char* name : {"im2win", "indirect", "im2col", "direct", "winograd"}) CHECK(strided.count(name) == 1);
}

TEST_CASE("conv strided output: a stride below out_channels is invalid params") {
  ConvParams p = Conv(1, 4, 5, 5, 8).p;
  p.out_pixel_stride = 7;
  CHECK_FALSE(p.is_valid());
  p.out_pixel_stride = 8;
  CHECK(p.is_valid());
  CHECK(p.out_stride() == 8);
  p.out_pixel_stride = 0;
  CHECK(p.out_stride() == 8);
}

}  // namespace
}  // namespace winfer
