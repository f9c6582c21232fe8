// CUDA element-wise kernels against double references: every activation, in place and not,
// NaN handling, sizes that leave partial blocks.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../kernels/reference.h"
#include "../kernels/test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/elementwise.h"

namespace winfer {
namespace {

using test::DeviceArray;

constexpr Activation kActivations[] = {Activation::kNone, Activation::kRelu, Activation::kRelu6};

TEST_CASE("cuda activation: copy and in place, every activation, NaN passes through") {
  std::vector<float> input = test::random_floats(1037, 7, -8.f, 8.f);  // both sides of 0 and 6
  input[5] = std::numeric_limits<float>::quiet_NaN();
  int checked = 0;
  for (Activation act : kActivations) {
    INFO("act ", std::string(activation_name(act)));
    std::vector<double> want(input.size());
    for (size_t i = 0; i < input.size(); ++i) want[i] = ref::activate(input[i], act);
    want[5] = std::numeric_limits<double>::quiet_NaN();
    DeviceArray in(input), out(input.size());
    REQUIRE_CUDA_OK(cuda::activation_inplace_or_copy(in.data(), out.data(), static_cast<int64_t>(input.size()), act,
                                                     test::ctx().stream));
    std::vector<float> got = out.download();
    CHECK(std::isnan(got[5]));
    got[5] = 0.f;
    want[5] = 0.0;
    test::check_close_simple(got.data(), want, 0.0, 0.0, "copy");
    REQUIRE_CUDA_OK(cuda::activation_inplace_or_copy(in.data(), in.data(), static_cast<int64_t>(input.size()), act,
                                                     test::ctx().stream));
    got = in.download();
    got[5] = 0.f;
    test::check_close_simple(got.data(), want, 0.0, 0.0, "in place");
    CHECK(out.canary_intact());
    checked += 2;
  }
  MESSAGE(checked << " activation runs checked");
}

TEST_CASE("cuda add with fused activation, in place into either operand") {
  const std::vector<float> a = test::random_floats(777, 11, -5.f, 5.f), b = test::random_floats(777, 12, -5.f, 5.f);
  for (Activation act : kActivations) {
    INFO("act ", std::string(activation_name(act)));
    std::vector<double> want(a.size());
    for (size_t i = 0; i < a.size(); ++i) want[i] = ref::activate(double(a[i] + b[i]), act);
    DeviceArray da(a), db(b), out(a.size());
    REQUIRE_CUDA_OK(
        cuda::add(da.data(), db.data(), out.data(), static_cast<int64_t>(a.size()), act, test::ctx().stream));
    test::check_close_simple(out.download().data(), want, 0.0, 0.0, "add");
    REQUIRE_CUDA_OK(
        cuda::add(da.data(), db.data(), db.data(), static_cast<int64_t>(a.size()), act, test::ctx().stream));
    test::check_close_simple(db.download().data(), want, 0.0, 0.0, "add in place");
    CHECK(out.canary_intact());
  }
}

TEST_CASE("cuda scale_shift_channels_nhwc and bias_activation_rows") {
  const int64_t pixels = 53, channels = 19;
  const std::vector<float> x = test::random_floats(static_cast<size_t>(pixels * channels), 21, -4.f, 4.f);
  const std::vector<float> scale = test::random_floats(static_cast<size_t>(channels), 22, 0.5f, 2.f);
  const std::vector<float> shift = test::random_floats(static_cast<size_t>(channels), 23, -3.f, 3.f);
  for (Activation act : kActivations) {
    INFO("act ", std::string(activation_name(act)));
    std::vector<double> want_affine(x.size()), want_bias(x.size()), want_act_only(x.size());
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c = 0; c < channels; ++c) {
        const size_t i = static_cast<size_t>(p * channels + c);
        want_affine[i] =
            ref::activate(double(x[i]) * scale[static_cast<size_t>(c)] + shift[static_cast<size_t>(c)], act);
        want_bias[i] = ref::activate(double(x[i]) + shift[static_cast<size_t>(c)], act);
        want_act_only[i] = ref::activate(x[i], act);
      }
    DeviceArray in(x), s(scale), t(shift), out(x.size());
    REQUIRE_CUDA_OK(cuda::scale_shift_channels_nhwc(in.data(), s.data(), t.data(), out.data(), pixels, channels, act,
                                                    test::ctx().stream));
    test::check_close_simple(out.download().data(), want_affine, 1e-6, 1e-6, "scale_shift");
    DeviceArray rows(x);
    REQUIRE_CUDA_OK(cuda::bias_activation_rows(rows.data(), pixels, channels, t.data(), act, test::ctx().stream));
    test::check_close_simple(rows.download().data(), want_bias, 1e-6, 1e-6, "bias_activation");
    DeviceArray rows_no_bias(x);
    REQUIRE_CUDA_OK(
        cuda::bias_activation_rows(rows_no_bias.data(), pixels, channels, nullptr, act, test::ctx().stream));
    test::check_close_simple(rows_no_bias.download().data(), want_act_only, 0.0, 0.0, "activation only");
    CHECK(out.canary_intact());
    CHECK(rows.canary_intact());
  }
}

TEST_CASE("cuda element-wise kernels reject bad arguments and accept empty tensors") {
  CHECK(cuda::add(nullptr, nullptr, nullptr, 0, Activation::kRelu, test::ctx().stream).ok());
  CHECK(cuda::add(nullptr, nullptr, nullptr, 5, Activation::kRelu, test::ctx().stream).code() ==
        cuda::StatusCode::kInvalidArgument);
  CHECK(cuda::activation_inplace_or_copy(nullptr, nullptr, -1, Activation::kNone, test::ctx().stream).code() ==
        cuda::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace winfer
