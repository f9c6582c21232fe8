// Max, average and adaptive average pooling against the float64 reference (PyTorch semantics).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/pooling.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

struct PoolCase {
  int64_t n, c, h, w, k, s, pad, d;
  bool ceil_mode;
};

PoolParams make_params(const PoolCase& pc) {
  return ref::pool_params(pc.n, pc.c, pc.h, pc.w, pc.k, pc.s, pc.pad, pc.d, pc.ceil_mode);
}

std::string describe(const PoolParams& p, bool ceil_mode) {
  return "N" + std::to_string(p.batch) + " C" + std::to_string(p.channels) + " " + std::to_string(p.in_h) + "x" +
         std::to_string(p.in_w) + " -> " + std::to_string(p.out_h) + "x" + std::to_string(p.out_w) + " k" +
         std::to_string(p.kernel_h) + " s" + std::to_string(p.stride_h) + " p" + std::to_string(p.pad_top) + " d" +
         std::to_string(p.dilation_h) + (ceil_mode ? " ceil" : " floor");
}

std::vector<float> run_max(const PoolParams& p, const std::vector<float>& in, int threads) {
  std::vector<float> out(static_cast<size_t>(p.batch * p.out_h * p.out_w * p.channels), NAN);
  maxpool2d_nhwc(p, in.data(), out.data(), threads);
  return out;
}

std::vector<float> run_avg(const PoolParams& p, bool include_pad, const std::vector<float>& in, int threads) {
  std::vector<float> out(static_cast<size_t>(p.batch * p.out_h * p.out_w * p.channels), NAN);
  avgpool2d_nhwc(p, include_pad, in.data(), out.data(), threads);
  return out;
}

TEST_CASE("pooling output sizes of the test helper follow PyTorch") {
  // The ceil-mode cases below rely on these: the last window hangs past the padding.
  CHECK(ref::pool_out_size(8, 3, 2, 1, 1, true) == 5);  // last window rows 7..9, in + pad = 9
  CHECK(ref::pool_out_size(8, 3, 2, 1, 1, false) == 4);
  CHECK(ref::pool_out_size(7, 2, 2, 0, 1, true) == 4);  // last window rows 6..7, 7 past the input
  CHECK(ref::pool_out_size(5, 2, 2, 1, 1, true) == 3);  // a 4th window would start in the padding: dropped
  CHECK(ref::pool_out_size(112, 3, 2, 1, 1, false) == 56);
}

TEST_CASE("maxpool2d matches the reference - padding never wins") {
  const std::vector<PoolCase> cases = {
      {2, 5, 9, 8, 3, 2, 1, 1, false},    {2, 5, 9, 8, 3, 2, 1, 1, true},   {1, 3, 7, 7, 2, 2, 0, 1, true},
      {1, 17, 8, 11, 3, 2, 1, 1, true},   {1, 4, 11, 9, 3, 1, 1, 2, false}, {3, 1, 5, 5, 5, 1, 2, 1, false},
      {1, 70, 13, 11, 3, 2, 1, 1, false},
  };
  for (cpu::Isa isa : test::runnable_isas()) {  // the kernel is compiled per ISA
    test::IsaCap cap(isa);
    uint32_t seed = 10;
    for (const PoolCase& pc : cases) {
      const PoolParams p = make_params(pc);
      INFO(test::isa_name(isa), " ", describe(p, pc.ceil_mode));
      // All-negative data: a kernel that let a zero padding tap win would show it.
      const auto in =
          test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.channels), seed++, -2.f, -0.5f);
      const auto want = ref::maxpool2d(p, in);
      const auto got = run_max(p, in, 1);
      test::check_close_simple(got.data(), want, 0.0, 0.0, "maxpool");  // exact: no arithmetic
      CHECK(test::bitwise_equal(got.data(), run_max(p, in, 3).data(), got.size()));
    }
  }
}

TEST_CASE("maxpool2d propagates NaN in vector lanes and in the channel tail, on every ISA") {
  for (cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    INFO(test::isa_name(isa));
    PoolParams p = make_params({1, 37, 4, 4, 2, 2, 0, 1, false});  // 37 channels: 2 x 16 + a tail of 5
    std::vector<float> in(static_cast<size_t>(p.in_h * p.in_w * p.channels), 1.f);
    in[3] = NAN;                           // pixel (0,0), channel 3: a vector lane, first window
    in[36] = NAN;                          // pixel (0,0), channel 36: the tail, first window
    in[(1 * p.in_w + 1) * 37 + 20] = NAN;  // pixel (1,1), channel 20, first window, not its first tap
    const auto got = run_max(p, in, 1);
    for (int64_t c = 0; c < 37; ++c) {
      INFO("channel ", c);
      CHECK(std::isnan(got[static_cast<size_t>(c)]) == (c == 3 || c == 36 || c == 20));
      CHECK_FALSE(std::isnan(got[static_cast<size_t>(37 + c)]));  // the second window has none
    }
  }
}

// Bit for bit what the reference (PyTorch's rule: the first maximal tap, a NaN wins) gives:
// the sign of a zero included; any NaN for a NaN.
void check_same_bits(const PoolParams& p, const std::vector<float>& in) {
  const auto want = ref::maxpool2d(p, in);
  const auto got = run_max(p, in, 1);
  int64_t wrong = 0, first_wrong = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    const float w = static_cast<float>(want[i]);
    const bool same = std::isnan(w) ? std::isnan(got[i]) : std::memcmp(&w, &got[i], sizeof w) == 0;
    if (!same && wrong++ == 0) first_wrong = static_cast<int64_t>(i);
  }
  INFO("first wrong output ", first_wrong, " of ", want.size());
  CHECK(wrong == 0);
  CHECK(test::bitwise_equal(got.data(), run_max(p, in, 3).data(), got.size()));
}

TEST_CASE("maxpool2d: ties keep the first tap (+0 / -0 as PyTorch gives them) and NaN wins, every ISA and window") {
  // Inputs drawn from {-1, -0, +0, 0.5, NaN}: most windows tie, so any other order of
  // comparing the taps, or a max that returns the later of two equal taps, changes a zero's
  // sign somewhere; NaN lands in every tap position of some window (first, middle, last, in a
  // row after the first). Windows: the stems' 3x3/2 (unrolled in the interior), VGG's 2x2/2,
  // and the general loop (5x5, dilation, ceil mode, 3x2); channels below, at and past a vector.
  struct Shape {
    int64_t c, h, w, kh, kw, s, pad, d;
    bool ceil_mode;
  };
  const std::vector<Shape> shapes = {
      {24, 11, 13, 3, 3, 2, 1, 1, false}, {64, 9, 9, 3, 3, 2, 1, 1, true}, {1, 8, 10, 3, 3, 2, 1, 1, false},
      {37, 8, 8, 2, 2, 2, 0, 1, false},   {16, 7, 9, 2, 2, 2, 0, 1, true}, {8, 9, 9, 5, 5, 1, 2, 1, false},
      {17, 10, 11, 3, 3, 1, 1, 2, false}, {7, 9, 8, 3, 3, 1, 1, 1, false}, {40, 9, 10, 3, 2, 1, 1, 1, false},
  };
  for (cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    uint32_t seed = 70;
    for (const Shape& s : shapes) {
      PoolParams p = ref::pool_params(2, s.c, s.h, s.w, s.kh, s.s, s.pad, s.d, s.ceil_mode);
      p.kernel_w = s.kw;
      p.out_w = ref::pool_out_size(s.w, s.kw, s.s, s.pad, s.d, s.ceil_mode);
      INFO(test::isa_name(isa), " ", describe(p, s.ceil_mode), " kw", p.kernel_w);
      const auto u = test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.channels), seed++, 0.f, 1.f);
      std::vector<float> in(u.size());
      for (size_t i = 0; i < u.size(); ++i)
        in[i] = u[i] < 0.02f ? NAN : u[i] < 0.3f ? -1.f : u[i] < 0.6f ? -0.f : u[i] < 0.9f ? 0.f : 0.5f;
      check_same_bits(p, in);
    }
  }
}

TEST_CASE("maxpool2d propagates NaN like PyTorch") {
  PoolParams p = make_params({1, 2, 4, 4, 2, 2, 0, 1, false});
  auto in = test::random_floats(32, 7);
  in[0] = NAN;  // pixel (0,0) channel 0, in the first window only
  const auto got = run_max(p, in, 1);
  CHECK(std::isnan(got[0]));
  CHECK_FALSE(std::isnan(got[1]));
  CHECK_FALSE(std::isnan(got[2]));
}

TEST_CASE("avgpool2d matches the reference with and without count_include_pad, every ISA") {
  const std::vector<PoolCase> cases = {
      {2, 5, 9, 8, 3, 2, 1, 1, false},    {2, 5, 8, 8, 3, 2, 1, 1, true}, {1, 6, 7, 5, 2, 2, 0, 1, false},
      {1, 6, 7, 5, 2, 2, 0, 1, true},     {1, 9, 6, 7, 3, 3, 1, 1, true}, {3, 20, 5, 5, 5, 1, 2, 1, false},
      {1, 33, 13, 11, 3, 1, 1, 1, false},
  };
  for (cpu::Isa isa : test::runnable_isas()) {  // the kernel is compiled per ISA
    test::IsaCap cap(isa);
    uint32_t seed = 40;
    for (const PoolCase& pc : cases) {
      const PoolParams p = make_params(pc);
      const auto in = test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.channels), seed++);
      for (bool include_pad : {true, false}) {
        INFO(test::isa_name(isa), " ", describe(p, pc.ceil_mode), " count_include_pad=", include_pad);
        const auto want = ref::avgpool2d(p, include_pad, in);
        const auto got = run_avg(p, include_pad, in, 1);
        // A sum of at most k*k values in [-1, 1] and one division: float32 rounding only.
        test::check_close_simple(got.data(), want, 1e-6, 1e-6, "avgpool");
        CHECK(test::bitwise_equal(got.data(), run_avg(p, include_pad, in, 2).data(), got.size()));
      }
    }
  }
}

TEST_CASE("avgpool2d divisor at a ceil-mode window hanging past the padding") {
  // 1 channel, 8x8 of ones, k3 s2 p1 ceil: the last window covers rows 7 (input), 8 (padding)
  // and 9 (past the padding). With count_include_pad PyTorch divides by the 2 rows up to the
  // padded edge: the corner output is (1*1) / (2*2) = 0.25; without, by the 1 input tap = 1.
  PoolParams p = make_params({1, 1, 8, 8, 3, 2, 1, 1, true});
  REQUIRE(p.out_h == 5);
  const std::vector<float> ones(64, 1.f);
  CHECK(run_avg(p, true, ones, 1).back() == doctest::Approx(0.25));
  CHECK(run_avg(p, false, ones, 1).back() == doctest::Approx(1.0));
  // The first output: rows/cols -1..1, one padding row and column: 4 of 9 taps in the input.
  CHECK(run_avg(p, true, ones, 1).front() == doctest::Approx(4.0 / 9.0));
}

TEST_CASE("adaptive_avgpool2d matches the reference, including non-divisible, even bins and global, every ISA") {
  struct Case {
    int64_t n, c, h, w, oh, ow;
  };
  const std::vector<Case> cases = {{1, 5, 7, 5, 3, 2},
                                   {2, 3, 5, 5, 3, 3},
                                   {1, 17, 13, 11, 4, 5},
                                   {3, 8, 7, 7, 1, 1},
                                   {1, 4, 3, 3, 5, 5},
                                   {1, 64, 7, 7, 1, 1},
                                   {1, 6, 6, 6, 6, 6},
                                   // Even bins (an average pooling of kernel = stride = in/out, per ISA).
                                   {2, 37, 14, 12, 7, 4},
                                   {1, 20, 8, 8, 2, 4}};
  for (const cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    uint32_t seed = 70;
    for (const Case& c : cases) {
      INFO(test::isa_name(isa), " ", c.h, "x", c.w, " -> ", c.oh, "x", c.ow, " C", c.c);
      const auto in = test::random_floats(static_cast<size_t>(c.n * c.h * c.w * c.c), seed++);
      const auto want = ref::adaptive_avgpool2d(c.n, c.c, c.h, c.w, c.oh, c.ow, in);
      std::vector<float> got(want.size(), NAN);
      adaptive_avgpool2d_nhwc(c.n, c.c, c.h, c.w, c.oh, c.ow, in.data(), got.data(), 1);
      test::check_close_simple(got.data(), want, 1e-6, 1e-6, "adaptive avgpool");
      std::vector<float> got3(want.size(), NAN);
      adaptive_avgpool2d_nhwc(c.n, c.c, c.h, c.w, c.oh, c.ow, in.data(), got3.data(), 3);
      CHECK(test::bitwise_equal(got.data(), got3.data(), got.size()));
    }
  }
}

// The 1x1 output's own kernel (global_avgpool_nhwc): whole vectors of every ISA, the channels
// past them, blocks of 4 vectors and fewer, an odd pixel count (the even/odd chains' last
// pixel), a block split for threads, bitwise the same on 1-3 threads.
TEST_CASE("adaptive_avgpool2d to 1x1 on every ISA: vector blocks, channel tails, odd pixels, threads") {
  struct Case {
    int64_t n, c, h, w;
  };
  const std::vector<Case> cases = {{2, 32, 15, 15}, {1, 24, 9, 7}, {3, 200, 7, 7}, {1, 1152, 7, 7},
                                   {2, 68, 1, 1},   {1, 16, 2, 1}, {1, 3, 5, 5},   {4, 130, 3, 6}};
  uint32_t seed = 170;
  for (const cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    for (const Case& c : cases) {
      INFO(test::isa_name(isa), ", N", c.n, " C", c.c, " ", c.h, "x", c.w);
      const auto in = test::random_floats(static_cast<size_t>(c.n * c.h * c.w * c.c), seed++);
      const auto want = ref::adaptive_avgpool2d(c.n, c.c, c.h, c.w, 1, 1, in);
      std::vector<float> got(want.size(), NAN);
      adaptive_avgpool2d_nhwc(c.n, c.c, c.h, c.w, 1, 1, in.data(), got.data(), 1);
      test::check_close_simple(got.data(), want, 1e-6, 1e-6, "global avgpool");
      for (int threads : {2, 3}) {
        std::vector<float> again(want.size(), NAN);
        adaptive_avgpool2d_nhwc(c.n, c.c, c.h, c.w, 1, 1, in.data(), again.data(), threads);
        CHECK(test::bitwise_equal(got.data(), again.data(), got.size()));
      }
    }
  }
}

TEST_CASE("pooling threads > 1 on a large tensor") {
  PoolParams p = make_params({2, 64, 56, 56, 3, 2, 1, 1, false});
  const auto in = test::random_floats(static_cast<size_t>(2 * 56 * 56 * 64), 99);
  CHECK(test::bitwise_equal(run_max(p, in, 1).data(), run_max(p, in, 2).data(),
                            static_cast<size_t>(2 * p.out_h * p.out_w * 64)));
  CHECK(test::bitwise_equal(run_avg(p, true, in, 1).data(), run_avg(p, true, in, 2).data(),
                            static_cast<size_t>(2 * p.out_h * p.out_w * 64)));
  test::check_close_simple(run_max(p, in, 2).data(), ref::maxpool2d(p, in), 0.0, 0.0, "maxpool threads=2");
}

}  // namespace
}  // namespace winfer
