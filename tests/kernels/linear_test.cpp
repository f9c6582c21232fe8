// Fully connected layer and row softmax against the float64 reference.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

TEST_CASE("linear matches the reference (bias, activations, both GEMM paths)") {
  struct Case {
    int64_t rows, in_features, out_features;
    bool bias;
    Activation act;
  };
  const std::vector<Case> cases = {{1, 7, 1, true, Activation::kNone},
                                   {3, 300, 10, false, Activation::kRelu},
                                   {5, 64, 1000, true, Activation::kNone},
                                   {2, 513, 33, true, Activation::kRelu6},
                                   {1, 1, 5, true, Activation::kRelu},
                                   // big enough to split over threads: by rows, by outputs
                                   {300, 40, 21, true, Activation::kRelu6},
                                   {4, 130, 700, false, Activation::kRelu}};
  uint32_t seed = 300;
  for (bool portable : {false, true}) {
    gemm_force_portable_for_testing(portable);
    for (const Case& c : cases) {
      INFO("rows ", c.rows, " in ", c.in_features, " out ", c.out_features, " bias ", c.bias, " act ",
           std::string(activation_name(c.act)), " portable gemm ", portable);
      const auto in = test::random_floats(static_cast<size_t>(c.rows * c.in_features), seed++);
      const auto weight = test::random_floats(static_cast<size_t>(c.out_features * c.in_features), seed++);
      const auto bias = test::random_floats(static_cast<size_t>(c.out_features), seed++);
      // The reference: a 1x1 convolution over `rows` pixels is exactly a linear layer.
      ConvParams p;
      p.batch = c.rows;
      p.in_channels = c.in_features;
      p.in_h = p.in_w = 1;
      p.out_channels = c.out_features;
      const ref::Result want = ref::conv2d(p, in, weight, c.bias ? bias.data() : nullptr, c.act);
      std::vector<float> out(static_cast<size_t>(c.rows * c.out_features), NAN);
      linear(in.data(), weight.data(), c.bias ? bias.data() : nullptr, out.data(), c.rows, c.in_features,
             c.out_features, c.act, 2);
      test::check_close(out.data(), want.value, want.abs_sum, want.terms, "linear");
      std::vector<float> out1(out.size(), NAN);
      linear(in.data(), weight.data(), c.bias ? bias.data() : nullptr, out1.data(), c.rows, c.in_features,
             c.out_features, c.act, 1);
      test::check_close(out1.data(), want.value, want.abs_sum, want.terms, "linear, 1 thread");
    }
  }
  gemm_force_portable_for_testing(false);
}

TEST_CASE("linear with few rows (matrix-vector path) matches the reference on every ISA") {
  // Up to 8 rows the kernel streams the weights itself (no GEMM; 9 rows use sgemm): blocks of 8 outputs for 1 row,
  // and on AVX-512 for up to 4 rows or where an 8-row block exceeds half of L2 (here with L2 set to 16 KiB, so that
  // K = 1000 takes them at 5 and 8 rows too), else blocks of 4; output counts that are and are not multiples of the
  // blocks, K with and without a vector tail, 1 and 3 threads.
  uint32_t seed = 900;
  for (cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    for (int64_t rows : {1, 2, 3, 4, 5, 8, 9})
      for (int64_t l2 : {int64_t{0}, int64_t{16} << 10}) {
        const test::L2Override l2_override(l2);  // 0: the machine's
        for (int64_t k : {3, 64, 1000}) {
          const int64_t n = 8 * 20 + 4 + 3;  // blocks of 8, of 4, and single outputs
          INFO("isa ", test::isa_name(isa), " rows ", rows, " in ", k, " out ", n, " L2 override ", l2);
          const auto in = test::random_floats(static_cast<size_t>(rows * k), seed++);
          const auto weight = test::random_floats(static_cast<size_t>(n * k), seed++);
          const auto bias = test::random_floats(static_cast<size_t>(n), seed++);
          ConvParams p;
          p.batch = rows;
          p.in_channels = k;
          p.in_h = p.in_w = 1;
          p.out_channels = n;
          const ref::Result want = ref::conv2d(p, in, weight, bias.data(), Activation::kRelu);
          for (int threads : {1, 3}) {
            std::vector<float> out(static_cast<size_t>(rows * n), NAN);
            linear(in.data(), weight.data(), bias.data(), out.data(), rows, k, n, Activation::kRelu, threads);
            test::check_close(out.data(), want.value, want.abs_sum, want.terms, "linear");
          }
        }
      }
  }
}

TEST_CASE("softmax_rows: stable for large values, rows sum to 1, in place") {
  const int64_t cols = 37;
  std::vector<float> in = test::random_floats(static_cast<size_t>(6 * cols), 77, -5.f, 5.f);
  for (int64_t c = 0; c < cols; ++c) {
    in[static_cast<size_t>(1 * cols + c)] += 1000.f;                   // row 1: values ~1000 (exp overflows)
    in[static_cast<size_t>(2 * cols + c)] -= 10000.f;                  // row 2: values ~-10000 (exp underflows)
    in[static_cast<size_t>(3 * cols + c)] = c % 2 ? 3000.f : -3000.f;  // row 3: extremes
    in[static_cast<size_t>(4 * cols + c)] = 88.f + 0.01f * c;          // row 4: around exp's float limit
  }
  // Row 5 stays moderate. A single-column input is all ones.
  const auto want = ref::softmax_rows(in, 6, cols);
  for (int threads : {1, 2}) {
    INFO("threads ", threads);
    std::vector<float> out(in.size(), NAN);
    softmax_rows(in.data(), out.data(), 6, cols, threads);
    test::check_close_simple(out.data(), want, 1e-5, 1e-7, "softmax");
    for (int64_t r = 0; r < 6; ++r) {
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += out[static_cast<size_t>(r * cols + c)];
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    }
    std::vector<float> inplace = in;
    softmax_rows(inplace.data(), inplace.data(), 6, cols, threads);
    CHECK(test::bitwise_equal(inplace.data(), out.data(), out.size()));
  }
  std::vector<float> one = {12345.f, -3.f};
  softmax_rows(one.data(), one.data(), 2, 1, 1);
  CHECK(one == std::vector<float>{1.f, 1.f});
}

TEST_CASE("softmax_rows on many rows with threads") {
  const int64_t rows = 2000, cols = 100;
  const auto in = test::random_floats(static_cast<size_t>(rows * cols), 78, -20.f, 20.f);
  std::vector<float> a(in.size()), b(in.size());
  softmax_rows(in.data(), a.data(), rows, cols, 1);
  softmax_rows(in.data(), b.data(), rows, cols, 2);
  CHECK(test::bitwise_equal(a.data(), b.data(), a.size()));
  test::check_close_simple(a.data(), ref::softmax_rows(in, rows, cols), 1e-5, 1e-7, "softmax");
}

}  // namespace
}  // namespace winfer
