// CUDA pooling kernels against the float64 references (PyTorch semantics): padding, stride,
// dilation, ceil-mode output sizes, windows hanging past the input, NaN, adaptive bins that
// overlap or repeat.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../kernels/reference.h"
#include "../kernels/test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/pooling.h"

namespace winfer {
namespace {

using test::DeviceArray;

// PoolParams with PyTorch's output size (floor or ceil mode) and symmetric padding.
PoolParams pool(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad, int64_t dilation,
                bool ceil_mode) {
  return ref::pool_params(n, c, h, w, k, s, pad, dilation, ceil_mode);
}

std::vector<PoolParams> pool_cases() {
  return {
      pool(2, 16, 13, 11, 3, 2, 1, 1, false),  // ResNet stem
      pool(1, 5, 9, 9, 2, 2, 0, 1, true),      // ceil mode: last window hangs past the input
      pool(1, 7, 12, 10, 3, 2, 1, 1, true),   pool(1, 3, 11, 11, 3, 1, 1, 2, false),  // dilation (max only)
      pool(1, 33, 6, 6, 3, 3, 0, 1, true),    pool(2, 4, 4, 5, 3, 1, 1, 1, false),
  };
}

TEST_CASE("cuda maxpool2d matches the reference") {
  uint32_t seed = 40;
  for (const PoolParams& p : pool_cases()) {
    INFO("pool ", p.in_h, "x", p.in_w, " k", p.kernel_h, " s", p.stride_h, " p", p.pad_top, " d", p.dilation_h);
    std::vector<float> input = test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.channels), seed++);
    input[3] = std::numeric_limits<float>::quiet_NaN();  // a NaN tap wins
    std::vector<double> want = ref::maxpool2d(p, input);
    DeviceArray in(input), out(want.size());
    REQUIRE_CUDA_OK(cuda::maxpool2d_nhwc(p, in.data(), out.data(), test::ctx().stream));
    std::vector<float> got = out.download();
    size_t nans = 0;
    for (size_t i = 0; i < want.size(); ++i)
      if (std::isnan(want[i])) {
        CHECK(std::isnan(got[i]));
        got[i] = 0.f;
        want[i] = 0.0;
        ++nans;
      }
    CHECK(nans > 0);
    test::check_close_simple(got.data(), want, 0.0, 0.0, "maxpool");
    CHECK(out.canary_intact());
  }
}

TEST_CASE("cuda avgpool2d matches the reference with and without count_include_pad") {
  uint32_t seed = 60;
  int checked = 0;
  for (PoolParams p : pool_cases()) {
    p.dilation_h = p.dilation_w = 1;  // AvgPool2d has no dilation
    p.out_h = ref::pool_out_size(p.in_h, p.kernel_h, p.stride_h, p.pad_top, 1, true);
    p.out_w = ref::pool_out_size(p.in_w, p.kernel_w, p.stride_w, p.pad_left, 1, true);
    const std::vector<float> input =
        test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.channels), seed++);
    for (bool include_pad : {false, true}) {
      INFO("pool ", p.in_h, "x", p.in_w, " k", p.kernel_h, " s", p.stride_h, " p", p.pad_top, " include_pad ",
           include_pad);
      const std::vector<double> want = ref::avgpool2d(p, include_pad, input);
      DeviceArray in(input), out(want.size());
      REQUIRE_CUDA_OK(cuda::avgpool2d_nhwc(p, include_pad, in.data(), out.data(), test::ctx().stream));
      test::check_close_simple(out.download().data(), want, 1e-6, 1e-6, "avgpool");
      CHECK(out.canary_intact());
      ++checked;
    }
  }
  MESSAGE(checked << " avgpool runs checked");
}

TEST_CASE("cuda adaptive_avgpool2d matches the reference (overlapping and repeated bins)") {
  struct Shape {
    int64_t n, c, h, w, oh, ow;
  };
  uint32_t seed = 80;
  for (const Shape& s :
       {Shape{2, 9, 7, 7, 1, 1}, Shape{1, 5, 5, 7, 3, 3}, Shape{1, 3, 2, 3, 5, 4}, Shape{1, 17, 10, 9, 7, 7}}) {
    INFO(s.h, "x", s.w, " -> ", s.oh, "x", s.ow);
    const std::vector<float> input = test::random_floats(static_cast<size_t>(s.n * s.h * s.w * s.c), seed++);
    const std::vector<double> want = ref::adaptive_avgpool2d(s.n, s.c, s.h, s.w, s.oh, s.ow, input);
    DeviceArray in(input), out(want.size());
    REQUIRE_CUDA_OK(
        cuda::adaptive_avgpool2d_nhwc(s.n, s.c, s.h, s.w, s.oh, s.ow, in.data(), out.data(), test::ctx().stream));
    test::check_close_simple(out.download().data(), want, 1e-6, 1e-6, "adaptive avgpool");
    CHECK(out.canary_intact());
  }
}

}  // namespace
}  // namespace winfer
