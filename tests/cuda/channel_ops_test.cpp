// CUDA channel ops (concat, split, shuffle) and layout conversion: exact copies, so results must
// be bitwise equal to host versions.
#include <doctest/doctest.h>

#include <vector>

#include "../kernels/test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/channel_ops.h"
#include "kernels/cuda/layout.h"

namespace winfer {
namespace {

using test::DeviceArray;

TEST_CASE("cuda concat and split along channels are inverse, exact copies") {
  const int64_t pixels = 37;
  const std::vector<int64_t> channels = {3, 5, 8, 1};
  const int64_t width = 17;
  std::vector<std::vector<float>> parts;
  std::vector<DeviceArray> inputs;
  for (size_t i = 0; i < channels.size(); ++i) {
    parts.push_back(test::random_floats(static_cast<size_t>(pixels * channels[i]), 100 + static_cast<uint32_t>(i)));
    inputs.emplace_back(parts.back());
  }
  std::vector<float> want(static_cast<size_t>(pixels * width));
  for (int64_t p = 0, offset = 0; p < pixels; ++p, offset = 0)
    for (size_t i = 0; i < channels.size(); offset += channels[i], ++i)
      for (int64_t c = 0; c < channels[i]; ++c)
        want[static_cast<size_t>(p * width + offset + c)] = parts[i][static_cast<size_t>(p * channels[i] + c)];

  std::vector<const float*> in_ptrs;
  for (DeviceArray& a : inputs) in_ptrs.push_back(a.data());
  DeviceArray out(want.size());
  REQUIRE_CUDA_OK(cuda::concat_channels_nhwc(pixels, static_cast<int>(channels.size()), in_ptrs.data(), channels.data(),
                                             out.data(), test::ctx().stream));
  CHECK(test::bitwise_equal(out.download().data(), want.data(), want.size()));
  CHECK(out.canary_intact());

  std::vector<DeviceArray> outputs;
  std::vector<float*> out_ptrs;
  for (int64_t c : channels) outputs.emplace_back(static_cast<size_t>(pixels * c));
  for (DeviceArray& a : outputs) out_ptrs.push_back(a.data());
  REQUIRE_CUDA_OK(cuda::split_channels_nhwc(pixels, out.data(), static_cast<int>(channels.size()), channels.data(),
                                            out_ptrs.data(), test::ctx().stream));
  for (size_t i = 0; i < channels.size(); ++i) {
    INFO("part ", i);
    CHECK(test::bitwise_equal(outputs[i].download().data(), parts[i].data(), parts[i].size()));
    CHECK(outputs[i].canary_intact());
  }
}

TEST_CASE("cuda channel_shuffle matches PyTorch's definition, copy and in place") {
  const int64_t pixels = 29;
  int checked = 0;
  for (int64_t groups : {1, 2, 3, 4}) {
    for (int64_t per_group : {1, 5, 58}) {
      const int64_t channels = groups * per_group;
      INFO("groups ", groups, " channels ", channels);
      const std::vector<float> input = test::random_floats(static_cast<size_t>(pixels * channels), 7);
      std::vector<float> want(input.size());
      for (int64_t p = 0; p < pixels; ++p)
        for (int64_t i = 0; i < groups; ++i)
          for (int64_t j = 0; j < per_group; ++j)
            want[static_cast<size_t>(p * channels + j * groups + i)] =
                input[static_cast<size_t>(p * channels + i * per_group + j)];
      DeviceArray in(input), out(input.size());
      REQUIRE_CUDA_OK(cuda::channel_shuffle_nhwc(pixels, channels, groups, in.data(), out.data(), test::ctx().stream));
      CHECK(test::bitwise_equal(out.download().data(), want.data(), want.size()));
      REQUIRE_CUDA_OK(cuda::channel_shuffle_nhwc(pixels, channels, groups, in.data(), in.data(), test::ctx().stream));
      CHECK(test::bitwise_equal(in.download().data(), want.data(), want.size()));
      CHECK(out.canary_intact());
      CHECK(in.canary_intact());
      checked += 2;
    }
  }
  MESSAGE(checked << " shuffles checked");
  DeviceArray big(static_cast<size_t>(2 * (cuda::kMaxInPlaceShuffleChannels + 2)));
  CHECK(
      cuda::channel_shuffle_nhwc(2, cuda::kMaxInPlaceShuffleChannels + 2, 2, big.data(), big.data(), test::ctx().stream)
          .code() == cuda::StatusCode::kInvalidArgument);
  CHECK(cuda::channel_shuffle_nhwc(2, 7, 2, big.data(), big.data(), test::ctx().stream).code() ==
        cuda::StatusCode::kInvalidArgument);
}

TEST_CASE("cuda nchw_to_nhwc and nhwc_to_nchw are exact transposes (tile edges included)") {
  struct Shape {
    int64_t n, c, h, w;
  };
  for (const Shape& s : {Shape{2, 37, 5, 7}, Shape{1, 3, 33, 65}, Shape{3, 64, 4, 8}, Shape{1, 1, 1, 1}}) {
    INFO(s.n, "x", s.c, "x", s.h, "x", s.w);
    const std::vector<float> nchw = test::random_floats(static_cast<size_t>(s.n * s.c * s.h * s.w), 3);
    std::vector<float> nhwc(nchw.size());
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t y = 0; y < s.h; ++y)
          for (int64_t x = 0; x < s.w; ++x)
            nhwc[static_cast<size_t>(((n * s.h + y) * s.w + x) * s.c + c)] =
                nchw[static_cast<size_t>(((n * s.c + c) * s.h + y) * s.w + x)];
    DeviceArray a(nchw), b(nchw.size()), back(nchw.size());
    REQUIRE_CUDA_OK(cuda::nchw_to_nhwc(s.n, s.c, s.h, s.w, a.data(), b.data(), test::ctx().stream));
    CHECK(test::bitwise_equal(b.download().data(), nhwc.data(), nhwc.size()));
    REQUIRE_CUDA_OK(cuda::nhwc_to_nchw(s.n, s.c, s.h, s.w, b.data(), back.data(), test::ctx().stream));
    CHECK(test::bitwise_equal(back.download().data(), nchw.data(), nchw.size()));
    CHECK(b.canary_intact());
    CHECK(back.canary_intact());
  }
}

}  // namespace
}  // namespace winfer
