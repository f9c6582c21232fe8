// Convolution algorithms against the float64 reference, against each other, and their
// contracts (supports, workspace size, no writes outside the given buffers, threads).
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/gemm.h"
#include "conv_test_util.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::ConvCase;
using test::ConvData;
using test::describe;
using test::GuardedBuffer;
using test::kNone;
using test::kRelu;
using test::kRelu6;
using test::make_data;
using test::run_conv;

// Shapes chosen to hit the edges: odd sizes, C = 1 and 3, Co not a multiple of 8/16, batch 3,
// stride 2 and 4, dilation 2, asymmetric padding, groups 2 and 4, 1x1 (with and without the
// im2col fast path), non-square kernels and strides, 7x7 and 11x11, windows that lie partly or
// entirely in the padding, output 1x1, depthwise with channel tails, every activation, bias
// null and non-null.
std::vector<ConvCase> conv_cases() {
  return {
      {Conv(1, 3, 7, 5, 8).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 1, 13, 11, 5).k(3, 3).p, false, kNone},
      {Conv(3, 16, 13, 11, 24).k(3, 3).s(2, 2).pad(1).p, true, kRelu6},
      {Conv(1, 8, 9, 9, 16).k(3, 3).pad(2, 1, 0, 2).p, true, kNone},
      {Conv(1, 8, 11, 13, 12).k(3, 3).pad(2).d(2, 2).p, false, kRelu},
      {Conv(1, 8, 10, 9, 12).k(3, 3).pad(1).g(2).p, true, kRelu},
      {Conv(2, 16, 7, 9, 20).k(3, 3).s(2, 2).pad(1).g(4).p, true, kNone},
      {Conv(1, 32, 7, 5, 40).k(1, 1).p, true, kRelu},
      {Conv(3, 24, 5, 6, 36).k(1, 1).g(2).p, false, kRelu6},
      {Conv(1, 16, 9, 9, 16).k(1, 1).s(2, 2).p, true, kNone},
      {Conv(1, 6, 5, 7, 10).k(1, 1).pad(1, 0, 0, 1).p, true, kNone},
      {Conv(1, 3, 23, 21, 17).k(7, 7).s(2, 2).pad(3).p, true, kRelu},
      {Conv(1, 3, 35, 39, 10).k(11, 11).s(4, 4).p, false, kNone},
      {Conv(1, 3, 35, 35, 8).k(11, 11).s(4, 4).pad(2).p, true, kRelu},
      {Conv(1, 64, 14, 14, 64).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 70, 6, 7, 100).k(3, 3).pad(1).p, true, kNone},
      {Conv(1, 5, 8, 8, 7).k(1, 3).pad(0, 1, 0, 1).p, false, kNone},
      {Conv(1, 6, 9, 8, 9).k(3, 1).s(2, 1).pad(1, 0, 1, 0).p, true, kRelu6},
      {Conv(1, 4, 12, 12, 4).k(5, 5).s(2, 2).pad(2, 2, 1, 1).d(2, 2).p, true, kNone},
      {Conv(1, 4, 3, 2, 6).k(5, 5).pad(2).p, true, kNone},
      {Conv(1, 8, 5, 5, 8).k(5, 5).p, true, kRelu},
      {Conv(1, 2, 4, 4, 3).k(3, 3).pad(3).p, true, kRelu6},
      {Conv(1, 8, 6, 5, 4).k(3, 3).pad(1).g(4).p, false, kNone},
      {Conv(1, 8, 7, 7, 16).k(3, 3).pad(1).g(8).p, true, kRelu},  // grouped, multiplier 2
      // im2win's edges (tile_algorithm_cases() in conv_test_util.h has many more): Co = 33 (a 1-channel
      // tail past a full 32-channel panel), a row narrower than every tile shape, dilation
      // along W only, a window split into several row blocks (row of 62*3*64 floats, 10 rows
      // per block, 23 output rows: 8 + 8 + 7).
      {Conv(1, 5, 6, 9, 33).k(3, 3).pad(1).p, true, kRelu6},
      {Conv(2, 7, 9, 3, 17).k(3, 3).pad(0, 1, 2, 1).p, false, kRelu},
      {Conv(1, 6, 7, 12, 10).k(2, 3).pad(1).d(1, 3).p, true, kNone},
      {Conv(1, 64, 23, 60, 5).k(3, 3).pad(1).p, true, kNone},
      // 3x3 windows on 3 channels per group: a stride-2 stem at batch 2 (im2win reads its last pixel exactly), and
      // groups of 3 with asymmetric padding and dilation along H.
      {Conv(2, 3, 11, 10, 24).k(3, 3).s(2, 2).pad(1).p, true, kRelu},
      {Conv(1, 6, 9, 8, 10).k(3, 3).pad(1, 2, 0, 1).d(2, 1).g(2).p, false, kNone},
      // The same for 7x7 windows (ResNet's stem, gathered column by column): stride 2 at batch 2,
      // and groups of 3 with asymmetric padding.
      {Conv(2, 3, 19, 17, 24).k(7, 7).s(2, 2).pad(3).p, true, kRelu},
      {Conv(1, 6, 12, 13, 10).k(7, 7).pad(3, 2, 1, 3).g(2).p, false, kNone},
      // depthwise (groups == C == Co)
      {Conv(1, 16, 9, 9, 16).k(3, 3).pad(1).g(16).p, true, kRelu},
      {Conv(2, 24, 10, 11, 24).k(3, 3).s(2, 2).pad(1).g(24).p, false, kNone},
      {Conv(1, 100, 7, 7, 100).k(5, 5).pad(2, 1, 2, 3).g(100).p, true, kRelu6},
      {Conv(1, 19, 13, 11, 19).k(3, 3).pad(2).d(2, 2).g(19).p, true, kNone},
      {Conv(3, 3, 8, 6, 3).k(3, 2).s(1, 2).pad(0, 1, 2, 0).g(3).p, false, kRelu},
  };
}

TEST_CASE("valid_taps matches a brute-force scan") {
  for (int64_t size = 1; size <= 6; ++size)
    for (int64_t kernel = 1; kernel <= 5; ++kernel)
      for (int64_t dilation = 1; dilation <= 3; ++dilation)
        for (int64_t start = -12; start <= 8; ++start) {
          int64_t first, last;
          cpu::valid_taps(start, dilation, kernel, size, &first, &last);
          // The in-bounds taps, found by trying every tap, must be exactly [first, last).
          std::vector<int64_t> inside;
          for (int64_t t = 0; t < kernel; ++t)
            if (start + t * dilation >= 0 && start + t * dilation < size) inside.push_back(t);
          INFO("size ", size, " kernel ", kernel, " dilation ", dilation, " start ", start);
          REQUIRE(last >= first);
          CHECK(last - first == static_cast<int64_t>(inside.size()));
          if (!inside.empty()) {
            CHECK(first == inside.front());
            CHECK(last == inside.back() + 1);
          }
        }
}

TEST_CASE("conv registry lists direct, im2col, depthwise, im2win in a fixed order") {
  const auto& algos = conv_algorithms();
  REQUIRE(algos.size() >= 4);
  CHECK(std::string(algos[0]->name()) == "direct");
  CHECK(std::string(algos[1]->name()) == "im2col");
  CHECK(std::string(algos[2]->name()) == "depthwise");
  CHECK(std::string(algos[3]->name()) == "im2win");
  for (const ConvAlgorithm* a : algos) CHECK(find_conv_algorithm(a->name()) == a);
  CHECK(find_conv_algorithm("no-such-algorithm") == nullptr);
  CHECK(find_conv_algorithm("") == nullptr);
}

TEST_CASE("conv registry: a user may select every algorithm but depthwise, which layers take by shape") {
  std::vector<const ConvAlgorithm*> expected;
  for (const ConvAlgorithm* a : conv_algorithms()) {
    CHECK(a->user_selectable() == (std::string(a->name()) != "depthwise"));
    if (a->user_selectable()) expected.push_back(a);
  }
  CHECK(selectable_conv_algorithms() == expected);  // the same order
  CHECK(selectable_conv_algorithms().size() + 1 == conv_algorithms().size());
}

TEST_CASE("conv algorithms match the float64 reference and direct") {
  const ConvAlgorithm* direct = find_conv_algorithm("direct");
  REQUIRE(direct != nullptr);
  uint32_t seed = 100;
  int checked_depthwise = 0;
  for (const ConvCase& c : conv_cases()) {
    INFO(describe(c));
    REQUIRE(c.p.is_valid());
    const ConvData d = make_data(c.p, seed += 10);
    const ref::Result want = ref::conv2d(c.p, d.input, d.weight, c.bias ? d.bias.data() : nullptr, c.act);
    if (c.p.is_depthwise()) ++checked_depthwise;
    for (cpu::Isa isa : test::runnable_isas()) {
      test::IsaCap cap(isa);
      INFO("isa ", test::isa_name(isa));
      REQUIRE(direct->supports(c.p));
      const std::vector<float> base = run_conv(*direct, c.p, d, c.bias, c.act, 1);
      test::check_close(base.data(), want.value, want.abs_sum, want.terms, "direct vs reference");

      for (const ConvAlgorithm* algo : conv_algorithms()) {
        if (algo == direct) continue;
        INFO("algorithm ", std::string(algo->name()));
        if (std::string(algo->name()) == "depthwise") CHECK(algo->supports(c.p) == c.p.is_depthwise());
        if (!algo->supports(c.p)) continue;
        const std::vector<float> got = run_conv(*algo, c.p, d, c.bias, c.act, 1);
        test::check_close(got.data(), want.value, want.abs_sum, want.terms, "vs reference");
        // Both are float32 results within the tolerance of the exact value, so they are within
        // twice that of each other.
        std::vector<double> base_d(base.begin(), base.end());
        std::vector<double> twice(want.abs_sum);
        for (double& v : twice) v *= 2;
        test::check_close(got.data(), base_d, twice, want.terms, "vs direct");
      }
    }
  }
  CHECK(checked_depthwise == 5);
}

TEST_CASE("conv supports() rejects what an algorithm cannot run") {
  const ConvAlgorithm* depthwise = find_conv_algorithm("depthwise");
  REQUIRE(depthwise != nullptr);
  CHECK(depthwise->supports(Conv(1, 8, 5, 5, 8).k(3, 3).g(8).p));
  CHECK_FALSE(depthwise->supports(Conv(1, 8, 5, 5, 8).k(3, 3).p));        // dense
  CHECK_FALSE(depthwise->supports(Conv(1, 8, 5, 5, 16).k(3, 3).g(8).p));  // multiplier 2
  CHECK_FALSE(depthwise->supports(Conv(1, 8, 5, 5, 8).k(3, 3).g(4).p));   // grouped
  CHECK_FALSE(depthwise->supports(Conv(1, 1, 5, 5, 1).k(3, 3).p));        // C = 1, groups 1

  // Invalid params: every algorithm says no.
  const std::vector<ConvParams> invalid = {
      Conv(1, 6, 5, 5, 8).k(3, 3).g(4).p,     // C not divisible by groups
      Conv(1, 8, 5, 5, 6).k(3, 3).g(4).p,     // Co not divisible by groups
      Conv(1, 4, 2, 2, 4).k(3, 3).p,          // kernel larger than the input
      Conv(1, 4, 2, 5, 4).k(3, 3).s(2, 2).p,  // ditto; out_h() alone would say 1
      Conv(1, 4, 5, 5, 4).k(3, 3).s(0, 1).p,  // stride 0
      Conv(0, 4, 5, 5, 4).k(3, 3).p,          // empty batch
      Conv(1, 4, 5, 5, 4).k(3, 3).pad(-1).p,  // negative padding
      Conv(1, 4, 5, 5, 4).k(3, 3).d(0, 1).p,  // dilation 0
  };
  for (const ConvParams& p : invalid) {
    INFO(p.to_string());
    CHECK_FALSE(p.is_valid());
    for (const ConvAlgorithm* a : conv_algorithms()) CHECK_FALSE(a->supports(p));
  }
}

TEST_CASE("im2col workspace_bytes is exactly the buffer it uses") {
  const ConvAlgorithm* im2col = find_conv_algorithm("im2col");
  REQUIRE(im2col != nullptr);
  uint32_t seed = 900;
  for (const ConvCase& c : conv_cases()) {
    const ConvParams& p = c.p;
    INFO(describe(c));
    const bool pointwise = p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                           p.pad_top + p.pad_left + p.pad_bottom + p.pad_right == 0;
    const size_t expected =
        pointwise ? 0
                  : static_cast<size_t>(p.out_h() * p.out_w() * p.kernel_h * p.kernel_w * p.in_channels_per_group()) *
                        sizeof(float);
    CHECK(im2col->workspace_bytes(p) == expected);

    // Fill the workspace with a pattern no input value or zero has (an all-ones NaN); after a
    // run every float must have been overwritten (the size is not over-reported) and the
    // canary after it untouched (not under-reported).
    const ConvData d = make_data(p, seed += 10);
    GuardedBuffer packed(im2col->packed_weight_bytes(p));
    im2col->pack_weights(p, d.weight.data(), packed.floats());
    GuardedBuffer workspace = test::run_on_marked_workspace(*im2col, c, d, packed.floats(), 2);
    CHECK(test::unwritten_words<uint32_t>(workspace.data_bytes(), workspace.bytes()) == 0);
  }
}

TEST_CASE("conv algorithms: threads > 1 give the same result as threads = 1") {
  // Big enough that every kernel really splits the work (tiny work runs on one thread).
  const std::vector<ConvCase> cases = {
      {Conv(2, 32, 17, 19, 48).k(3, 3).s(1, 1).pad(1).p, true, kRelu},
      {Conv(1, 24, 21, 20, 40).k(3, 3).s(2, 2).pad(1, 0, 1, 1).g(2).p, false, kNone},
      {Conv(1, 64, 28, 28, 96).k(1, 1).p, true, kRelu6},
      {Conv(2, 64, 28, 27, 64).k(3, 3).pad(1).g(64).p, true, kRelu},
  };
  uint32_t seed = 500;
  for (const ConvCase& c : cases) {
    INFO(describe(c));
    const ConvData d = make_data(c.p, seed += 10);
    const ref::Result want = ref::conv2d(c.p, d.input, d.weight, c.bias ? d.bias.data() : nullptr, c.act);
    for (const ConvAlgorithm* algo : conv_algorithms()) {
      if (!algo->supports(c.p)) continue;
      INFO("algorithm ", std::string(algo->name()));
      const std::vector<float> one = run_conv(*algo, c.p, d, c.bias, c.act, 1);
      test::check_close(one.data(), want.value, want.abs_sum, want.terms, "threads=1 vs reference");
      for (int threads : {2, 3}) {
        INFO("threads ", threads);
        const std::vector<float> many = run_conv(*algo, c.p, d, c.bias, c.act, threads);
        if (std::string(algo->name()) == "im2col") {
          // OpenBLAS may pick different blockings for different thread counts: same within
          // rounding, not necessarily bitwise.
          test::check_close(many.data(), want.value, want.abs_sum, want.terms, "threads>1 vs reference");
        } else {
          // Our kernels split output rows between threads; each element is computed by the
          // same code in the same order whatever the split.
          CHECK(test::bitwise_equal(one.data(), many.data(), one.size()));
        }
      }
    }
  }
}

TEST_CASE("conv run() is safe to call concurrently") {
  // Two threads run the same algorithm on the same packed weights at once (distinct outputs
  // and workspaces), each call on 1 or 2 threads (each caller its own pool workers), and must
  // all produce the single-threaded result.
  const ConvParams p = Conv(1, 16, 15, 13, 24).k(3, 3).s(1, 1).pad(1).p;
  const ConvData d = make_data(p, 4242);
  for (const ConvAlgorithm* algo : conv_algorithms()) {
    if (!algo->supports(p)) continue;
    INFO("algorithm ", std::string(algo->name()));
    const std::vector<float> want = run_conv(*algo, p, d, true, kRelu, 1);
    std::vector<float> packed(algo->packed_weight_bytes(p) / sizeof(float) + 16);
    algo->pack_weights(p, d.weight.data(), packed.data());
    const size_t out_count = want.size();
    std::vector<std::vector<float>> outs(4, std::vector<float>(out_count));
    std::vector<std::vector<unsigned char>> workspaces(4, std::vector<unsigned char>(algo->workspace_bytes(p)));
    auto calls = [&](int first) {
      for (int i = first; i < 4; i += 2)
        algo->run(p, d.input.data(), packed.data(), d.bias.data(), outs[i].data(),
                  workspaces[i].empty() ? nullptr : workspaces[i].data(), kRelu, 1 + i / 2);
    };
    std::thread other(calls, 1);
    calls(0);
    other.join();
    // Against the same thread count run alone: OpenBLAS' Haswell/Zen sgemm (AVX2 machines) rounds
    // a row block differently from the whole, so im2col's 2-thread split is not bitwise its
    // 1-thread result (that is "threads > 1" above, to a tolerance); concurrency must change nothing.
    const std::vector<float> want2 = run_conv(*algo, p, d, true, kRelu, 2);
    for (int i = 0; i < 4; ++i) {
      INFO("call ", i, " on ", 1 + i / 2, " threads");
      CHECK(test::bitwise_equal(outs[i].data(), (i < 2 ? want : want2).data(), out_count));
    }
  }
}

}  // namespace
}  // namespace winfer
