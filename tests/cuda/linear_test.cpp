// CUDA softmax and linear (emulated and native). linear() takes the one-warp-per-output kernel
// for few rows or without cuBLAS (the emulator), cuBLAS above kLinearRowsWithoutBlas rows.
#include <doctest/doctest.h>

#include <vector>

#include "../kernels/reference.h"
#include "../kernels/test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/linear.h"

namespace winfer {
namespace {

using test::DeviceArray;

TEST_CASE("cuda softmax_rows matches the reference, in place too, large magnitudes") {
  struct Shape {
    int64_t rows, cols;
    float range;
  };
  int checked = 0;
  for (const Shape& s : {Shape{3, 1000, 5.f}, Shape{5, 7, 1.f}, Shape{2, 300, 80.f}, Shape{1, 1, 1.f}}) {
    INFO(s.rows, " x ", s.cols, " range ", s.range);
    const std::vector<float> input = test::random_floats(static_cast<size_t>(s.rows * s.cols), 5, -s.range, s.range);
    const std::vector<double> want = ref::softmax_rows(input, s.rows, s.cols);
    DeviceArray in(input), out(input.size());
    REQUIRE_CUDA_OK(cuda::softmax_rows(in.data(), out.data(), s.rows, s.cols, test::ctx().stream));
    test::check_close_simple(out.download().data(), want, 1e-5, 1e-9, "softmax");
    REQUIRE_CUDA_OK(cuda::softmax_rows(in.data(), in.data(), s.rows, s.cols, test::ctx().stream));
    test::check_close_simple(in.download().data(), want, 1e-5, 1e-9, "softmax in place");
    CHECK(out.canary_intact());
    checked += 2;
  }
  MESSAGE(checked << " softmax runs checked");
}

TEST_CASE("cuda linear matches the reference GEMM (warp kernel, and cuBLAS natively above 16 rows)") {
  struct Shape {
    int64_t rows, in, out;
    bool bias;
    Activation act;
  };
  int checked = 0;
  for (const Shape& s : {Shape{2, 512, 10, true, Activation::kNone}, Shape{3, 37, 129, false, Activation::kRelu},
                         Shape{1, 1000, 7, true, Activation::kRelu6}, Shape{1, 31, 3, true, Activation::kNone},
                         Shape{cuda::kLinearRowsWithoutBlas + 5, 70, 33, true, Activation::kRelu}}) {
    INFO(s.rows, " x ", s.in, " -> ", s.out);
    const std::vector<float> x = test::random_floats(static_cast<size_t>(s.rows * s.in), 1);
    const std::vector<float> w = test::random_floats(static_cast<size_t>(s.out * s.in), 2);
    const std::vector<float> b = test::random_floats(static_cast<size_t>(s.out), 3);
    // out = x * w^T (+ bias): the reference GEMM with C initialised to the bias rows, beta 1.
    std::vector<float> c0(static_cast<size_t>(s.rows * s.out), 0.f);
    if (s.bias)
      for (int64_t r = 0; r < s.rows; ++r)
        for (int64_t o = 0; o < s.out; ++o) c0[static_cast<size_t>(r * s.out + o)] = b[static_cast<size_t>(o)];
    ref::Result want = ref::gemm(false, true, s.rows, s.out, s.in, 1.0, x, s.in, w, s.in, 1.0, c0, s.out);
    for (double& v : want.value) v = ref::activate(v, s.act);
    DeviceArray dx(x), dw(w), db(b), out(static_cast<size_t>(s.rows * s.out));
    REQUIRE_CUDA_OK(cuda::linear(dx.data(), dw.data(), s.bias ? db.data() : nullptr, out.data(), s.rows, s.in, s.out,
                                 s.act, test::ctx()));
    test::check_close(out.download().data(), want.value, want.abs_sum, want.terms, "linear");
    CHECK(out.canary_intact());
    // The warp kernel directly, whatever linear() picked for this size.
    DeviceArray out2(static_cast<size_t>(s.rows * s.out));
    REQUIRE_CUDA_OK(cuda::linear_rows(dx.data(), dw.data(), s.bias ? db.data() : nullptr, out2.data(), s.rows, s.in,
                                      s.out, s.act, test::ctx().stream));
    test::check_close(out2.download().data(), want.value, want.abs_sum, want.terms, "linear_rows");
    CHECK(out2.canary_intact());
    checked += 2;
  }
  MESSAGE(checked << " linear runs checked");
}

}  // namespace
}  // namespace winfer
