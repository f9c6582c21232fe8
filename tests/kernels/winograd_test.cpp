// winograd F(2x2, 3x3), F(4x4, 3x3) and F(6x6, 3x3), each tile size forced on every shape: against the
// float64 reference on edge shapes (odd output sizes that leave partial tiles, outputs smaller
// than a tile, every padding 0-2 and asymmetric, channel counts off the vector width and off the
// 32-wide panels, batch 2 and 3, bias or none, every activation, a fused residual), under every
// ISA this machine runs, bitwise equal for 1-3 threads; what it supports; which tile the
// registered algorithm picks; and layers bigger than one block of tiles.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_winograd.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::ConvCase;
using test::kNone;
using test::kRelu;
using test::kRelu6;

const ConvAlgorithm& winograd() {
  const ConvAlgorithm* a = find_conv_algorithm("winograd");
  REQUIRE(a != nullptr);
  return *a;
}

// F(2x2)'s transforms add up to 4 values at each of their three stages, so rounding errors grow
// a few times faster than in a direct sum: the tolerance allows 8x a direct sum's. F(4x4)'s add
// 6 values with coefficients up to 8 (B^T's rows sum to 6.7 in absolute value, A^T's to 18.6):
// 32x. F(6x6)'s add 8 with coefficients up to 32 (B^T's rows sum to 12.5, A^T's to 67; a float32
// simulation put its error at 5x F(4x4)'s): 160x. The test prints the largest errors of all three.
// A missing or doubled term of average size still exceeds each for every shape here.
double transform_growth(int tile) { return tile == 6 ? 160.0 : tile == 4 ? 32.0 : 8.0; }

std::vector<ConvCase> winograd_cases() {
  return {
      {Conv(1, 21, 7, 9, 7).k(3, 3).pad(1).p, true, kRelu},            // odd output: partial tiles
      {Conv(2, 19, 6, 5, 33).k(3, 3).p, true, kNone},                  // no padding, Co off the panel
      {Conv(1, 16, 8, 8, 32).k(3, 3).pad(2).p, false, kRelu6},         // padding 2: tiles of pure padding
      {Conv(1, 24, 9, 6, 70).k(3, 3).pad(0, 1, 2, 0).p, true, kRelu},  // asymmetric padding
      {Conv(2, 64, 14, 14, 64).k(3, 3).pad(1).p, true, kRelu},         // 2 x 49 tiles: more than one block
      {Conv(1, 17, 3, 3, 4).k(3, 3).p, true, kNone},                   // one output pixel
      {Conv(1, 256, 6, 6, 112).k(3, 3).pad(1).p, true, kRelu},         // U streamed, next panel prefetched
      {Conv(3, 32, 11, 13, 40).k(3, 3).pad(1).p, true, kRelu6},        // 11x13: 4+4+3, 4+4+4+1; 3 blocks of F(4x4)
      {Conv(1, 20, 7, 8, 9).k(3, 3).p, false, kNone},                  // 5x6 output: one full F(4x4) tile + edges
      {Conv(3, 32, 26, 27, 48).k(3, 3).pad(1).p, true, kRelu},         // 26x27: 6x4+2, 6x4+3; 75 F(6x6) tiles
  };
}

TEST_CASE("winograd: supports 3x3 stride 1 dense convolutions of 16 or more input channels only") {
  const ConvAlgorithm& w = winograd();
  CHECK(w.supports(Conv(1, 16, 8, 8, 8).k(3, 3).pad(1).p));
  CHECK_FALSE(w.supports(Conv(1, 16, 8, 8, 8).k(3, 3).s(2, 2).pad(1).p));
  CHECK_FALSE(w.supports(Conv(1, 16, 8, 8, 8).k(1, 1).p));
  CHECK_FALSE(w.supports(Conv(1, 16, 8, 8, 8).k(3, 3).d(2, 2).pad(2).p));
  CHECK_FALSE(w.supports(Conv(1, 16, 8, 8, 8).k(3, 3).g(2).pad(1).p));
  CHECK_FALSE(w.supports(Conv(1, 3, 8, 8, 8).k(3, 3).pad(1).p));  // too few input channels to pay off
  CHECK_FALSE(w.can_unpack_weights());                            // G g G^T is not a permutation
}

TEST_CASE("winograd: declines few tiles of weights beyond L2, which a session leaves to im2win") {
  const ConvAlgorithm& w = winograd();
  // 512 -> 512 at 4x4: 4 tiles of 16.8 MB of transformed weights.
  const ConvParams deep = Conv(1, 512, 4, 4, 512).k(3, 3).pad(1).p;
  CHECK(w.supports(deep));
  const std::string why = w.declines(deep);
  INFO(why);
  CHECK(why.find("winograd leaves " + deep.to_string() + " to im2win") == 0);
  CHECK(why.find("16384 KiB of transformed weights") != std::string::npos);
  CHECK(why.find("only 4 tiles") != std::string::npos);
  CHECK(w.declines(Conv(1, 512, 5, 5, 512).k(3, 3).pad(1).p).empty());    // 9 tiles of F(2x2)
  CHECK(w.declines(Conv(1, 512, 7, 7, 512).k(3, 3).pad(1).p).empty());    // 16 tiles of F(2x2)
  CHECK(w.declines(Conv(2, 512, 7, 7, 512).k(3, 3).pad(1).p).empty());    // 8 tiles of F(4x4), 37.7 MB
  CHECK(w.declines(Conv(1, 256, 14, 14, 256).k(3, 3).pad(1).p).empty());  // 16 tiles of F(4x4)
  CHECK(w.declines(Conv(1, 64, 4, 4, 64).k(3, 3).pad(1).p).empty());      // weights in L2
}

TEST_CASE("winograd: F(4x4) where it saves a quarter of the multiplies, and has 8 tiles, its U streamed or not") {
  CHECK(cpu::winograd_tile(Conv(1, 32, 56, 56, 32).k(3, 3).pad(1).p) == 4);  // F(6x6)'s transforms too heavy
  CHECK(cpu::winograd_tile(Conv(1, 64, 7, 30, 64).k(3, 3).pad(1).p) == 4);   // 2 x 8 tiles, 4 x 15 of F(2x2)
  CHECK(cpu::winograd_tile(Conv(1, 64, 10, 10, 64).k(3, 3).pad(1).p) == 2);  // 9 tiles: 27 > 25 of F(2x2)
  CHECK(cpu::winograd_tile(Conv(1, 64, 11, 11, 64).k(3, 3).pad(1).p) == 4);  // 9 tiles: 27 <= 36
  CHECK(cpu::winograd_tile(Conv(1, 64, 8, 8, 64).k(3, 3).pad(1).p) == 2);    // 4 tiles
  CHECK(cpu::winograd_tile(Conv(2, 64, 8, 8, 64).k(3, 3).pad(1).p) == 4);    // 8 tiles
  CHECK(cpu::winograd_tile(Conv(1, 17, 3, 3, 4).k(3, 3).p) == 2);            // one pixel
  // U streamed from memory or not, the same rule: 37.7 MB of U, 4 tiles at batch 1, 8 at batch
  // 2, 32 at batch 8; 9.4 MB, 16 tiles at batch 1.
  CHECK(cpu::winograd_tile(Conv(1, 512, 7, 7, 512).k(3, 3).pad(1).p) == 2);
  CHECK(cpu::winograd_tile(Conv(2, 512, 7, 7, 512).k(3, 3).pad(1).p) == 4);
  CHECK(cpu::winograd_tile(Conv(8, 512, 7, 7, 512).k(3, 3).pad(1).p) == 4);
  CHECK(cpu::winograd_tile(Conv(1, 256, 14, 14, 256).k(3, 3).pad(1).p) == 4);
  // The packed weights serve every tile: 64 positions per kernel, whatever the spatial size.
  const ConvParams small = Conv(1, 40, 5, 5, 33).k(3, 3).pad(1).p, big = Conv(2, 40, 20, 20, 33).k(3, 3).pad(1).p;
  CHECK(winograd().packed_weight_bytes(small) == winograd().packed_weight_bytes(big));
  CHECK(winograd().packed_weight_bytes(small) == 64 * 2 * 40 * 32 * sizeof(float));
  uint32_t seed = 700;
  for (const ConvParams& p : {small, big}) {
    INFO(p.to_string());
    const test::ConvData d = test::make_data(p, seed += 10);
    const std::vector<float> got = test::run_conv(winograd(), p, d, true, kRelu, 2);
    const std::vector<float> want =
        test::run_conv(cpu::winograd_conv_algorithm_with_tile(cpu::winograd_tile(p)), p, d, true, kRelu, 2);
    CHECK(test::bitwise_equal(got.data(), want.data(), got.size()));
  }
}

TEST_CASE("winograd: F(6x6) where F(4x4) runs, on 28x28 outputs and more, 8 tiles, 64 channels, not declined") {
  CHECK(cpu::winograd_tile(Conv(1, 64, 56, 56, 64).k(3, 3).pad(1).p) == 6);    // 100 tiles against 196
  CHECK(cpu::winograd_tile(Conv(1, 64, 224, 224, 64).k(3, 3).pad(1).p) == 6);  // 1444 against 3136
  CHECK(cpu::winograd_tile(Conv(8, 128, 28, 28, 128).k(3, 3).pad(1).p) == 6);  // 200 tiles, U streamed
  CHECK(cpu::winograd_tile(Conv(8, 512, 28, 28, 512).k(3, 3).pad(1).p) == 6);
  CHECK(cpu::winograd_tile(Conv(2, 96, 28, 28, 128).k(3, 3).pad(1).p) == 6);  // 96 -> 128: 7/384 <= 1/32
  // 14x14: 9 tiles of F(6x6) compute 18x18, 64 x 9 = 36 x 16 multiplies: no saving.
  CHECK(cpu::winograd_tile(Conv(8, 64, 14, 14, 64).k(3, 3).pad(1).p) == 4);
  // 11x11: 4 tiles, fewer than 8.
  CHECK(cpu::winograd_tile(Conv(1, 64, 11, 11, 64).k(3, 3).pad(1).p) == 4);
  // Transforms against GEMMs: (C + Co) / (C x Co) > 1/32.
  CHECK(cpu::winograd_tile(Conv(1, 128, 28, 28, 32).k(3, 3).pad(1).p) == 4);
  CHECK(cpu::winograd_tile(Conv(1, 48, 56, 56, 64).k(3, 3).pad(1).p) == 4);
  // U streamed from memory for 25 tiles: F(6x6) all the same (1.03-1.07x F(4x4)'s speed), and
  // not declined.
  const ConvParams streamed = Conv(1, 128, 28, 28, 128).k(3, 3).pad(1).p;
  CHECK(cpu::winograd_tile(streamed) == 6);
  CHECK(winograd().declines(streamed).empty());
  CHECK(cpu::winograd_tile(Conv(1, 512, 28, 28, 512).k(3, 3).pad(1).p) == 6);
}

TEST_CASE(
    "winograd: F(2x2), F(4x4) and F(6x6) match the float64 reference on edge shapes, every ISA, any thread count "
    "bitwise") {
  double worst[7] = {};  // per tile: the largest error / (2^-24 x the sum of |terms|)
  for (int tile : {2, 4, 6}) {
    const ConvAlgorithm& algorithm = cpu::winograd_conv_algorithm_with_tile(tile);
    CAPTURE(tile);
    uint32_t seed = 900;
    for (const ConvCase& c : winograd_cases()) {
      INFO(test::describe(c));
      REQUIRE(algorithm.supports(c.p));
      const test::ConvData d = test::make_data(c.p, seed += 10);
      const size_t out_count = static_cast<size_t>(c.p.batch * c.p.out_h() * c.p.out_w() * c.p.out_channels);
      const std::vector<float> residual = test::random_floats(out_count, seed + 5, -2.f, 2.f);
      for (const float* r : {static_cast<const float*>(nullptr), residual.data()}) {
        INFO(std::string(r != nullptr ? "with residual" : "no residual"));
        const ref::Result want = ref::conv2d(c.p, d.input, d.weight, c.bias ? d.bias.data() : nullptr, c.act, r);
        std::vector<double> abs_sum = want.abs_sum;
        for (double& v : abs_sum) v *= transform_growth(tile);
        for (cpu::Isa isa : test::runnable_isas()) {
          test::IsaCap cap(isa);
          INFO("isa ", test::isa_name(isa));
          const std::vector<float> one = test::run_conv(algorithm, c.p, d, c.bias, c.act, 1, r);
          test::check_close(one.data(), want.value, abs_sum, want.terms, "winograd vs reference");
          for (size_t i = 0; i < one.size(); ++i)
            worst[tile] = std::max(worst[tile], std::abs(one[i] - want.value[i]) * 16777216.0 / want.abs_sum[i]);
          for (int threads : {2, 3}) {
            INFO("threads ", threads);
            const std::vector<float> many = test::run_conv(algorithm, c.p, d, c.bias, c.act, threads, r);
            CHECK(test::bitwise_equal(one.data(), many.data(), one.size()));
          }
        }
      }
    }
  }
  MESSAGE("largest error in units of 2^-24 x sum |terms|: F(2x2) ", worst[2], ", F(4x4) ", worst[4], ", F(6x6) ",
          worst[6]);
}

}  // namespace
}  // namespace winfer
