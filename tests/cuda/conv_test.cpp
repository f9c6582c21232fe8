// CUDA convolution algorithms against the float64 reference (tests/kernels/reference.h), their
// lowering steps against host lowering, and their contracts (registry, supports, workspace, no
// writes outside the buffers, every output written).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../kernels/conv_test_util.h"
#include "../kernels/reference.h"
#include "../kernels/test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/conv_algorithm.h"
#include "kernels/cuda/conv_internal.h"

namespace winfer {
namespace {

using test::DeviceArray;

// The CPU convolution tests' shape builder and case type (tests/kernels/conv_test_util.h).
using test::Conv;
using test::ConvCase;
using test::describe;
using test::kNone;
using test::kRelu;
using test::kRelu6;

// Small shapes (the emulator runs every GPU thread as a fiber) that still reach every edge of the
// tiled im2win GEMM (64 pixels x 64 channels x 8 taps per tile): M, N and K that are not
// multiples of the tile, several tiles in each direction, K below one step. And the convolution
// edges: batch 2 and 3, stride 2 and 4, dilation, asymmetric padding, windows partly or wholly in
// the padding, groups (multiplier 1 and 2), 1x1 with and without the no-copy path, non-square
// kernels, every activation, bias and no bias, depthwise.
std::vector<ConvCase> conv_cases() {
  return {
      {Conv(1, 3, 7, 5, 8).k(3, 3).pad(1).p, true, kRelu},
      {Conv(2, 16, 13, 11, 24).k(3, 3).s(2, 2).pad(1).p, true, kRelu6},
      {Conv(1, 8, 9, 9, 16).k(3, 3).pad(2, 1, 0, 2).p, true, kNone},
      {Conv(1, 8, 11, 13, 12).k(3, 3).pad(2).d(2, 2).p, false, kRelu},
      {Conv(1, 8, 10, 9, 12).k(3, 3).pad(1).g(2).p, true, kRelu},
      {Conv(2, 16, 7, 9, 20).k(3, 3).s(2, 2).pad(1).g(4).p, true, kNone},
      {Conv(1, 40, 10, 10, 70).k(3, 3).pad(1).p, true, kNone},         // 2x2 tiles, 45 K steps
      {Conv(3, 5, 6, 7, 130).k(3, 3).pad(1).d(1, 2).p, false, kRelu},  // 3 channel tiles, batch 3
      {Conv(1, 32, 7, 5, 40).k(1, 1).p, true, kRelu},                  // im2win/im2col read the input directly
      {Conv(2, 24, 5, 6, 36).k(1, 1).g(2).p, false, kRelu6},
      {Conv(1, 16, 9, 9, 16).k(1, 1).s(2, 2).p, true, kNone},
      {Conv(1, 6, 5, 7, 10).k(1, 1).pad(1, 0, 0, 1).p, true, kNone},
      {Conv(1, 5, 8, 8, 7).k(1, 3).p, false, kRelu},  // 1xK without padding: no window copy
      {Conv(1, 3, 23, 21, 17).k(7, 7).s(2, 2).pad(3).p, true, kRelu},
      {Conv(1, 3, 35, 39, 10).k(11, 11).s(4, 4).p, false, kNone},
      {Conv(1, 5, 8, 8, 7).k(1, 3).pad(0, 1, 0, 1).p, false, kNone},
      {Conv(1, 6, 9, 8, 9).k(3, 1).s(2, 1).pad(1, 0, 1, 0).p, true, kRelu6},
      {Conv(1, 4, 12, 12, 4).k(5, 5).s(2, 2).pad(2, 2, 1, 1).d(2, 2).p, true, kNone},
      {Conv(1, 4, 3, 2, 6).k(5, 5).pad(2).p, true, kNone},
      {Conv(1, 2, 4, 4, 3).k(3, 3).pad(3).p, true, kRelu6},
      {Conv(1, 8, 7, 7, 16).k(3, 3).pad(1).g(8).p, true, kRelu},  // grouped, multiplier 2
      // depthwise (groups == C == Co)
      {Conv(1, 16, 9, 9, 16).k(3, 3).pad(1).g(16).p, true, kRelu},
      {Conv(2, 24, 10, 11, 24).k(3, 3).s(2, 2).pad(1).g(24).p, false, kNone},
      {Conv(1, 70, 7, 7, 70).k(5, 5).pad(2, 1, 2, 3).g(70).p, true, kRelu6},
      {Conv(1, 19, 13, 11, 19).k(3, 3).pad(2).d(2, 2).g(19).p, true, kNone},
      {Conv(3, 3, 8, 6, 3).k(3, 2).s(1, 2).pad(0, 1, 2, 0).g(3).p, false, kRelu},
  };
}

struct ConvData {
  std::vector<float> input, weight, bias;
};

ConvData make_data(const ConvParams& p, uint32_t seed) {
  ConvData d;
  d.input = test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels), seed);
  d.weight = test::random_floats(
      static_cast<size_t>(p.out_channels * p.in_channels_per_group() * p.kernel_h * p.kernel_w), seed + 1);
  d.bias = test::random_floats(static_cast<size_t>(p.out_channels), seed + 2);
  return d;
}

// Packs, uploads and runs `algo`, with canaries after the workspace and the output; the output
// starts as NaN so an element the algorithm forgets shows up.
std::vector<float> run_conv(const cuda::ConvAlgorithm& algo, const ConvParams& p, const ConvData& d, bool with_bias,
                            Activation act) {
  REQUIRE_CUDA_OK(algo.tune(test::ctx(), p));
  std::vector<float> packed_host(algo.packed_weight_bytes(p) / sizeof(float));
  algo.pack_weights(p, d.weight.data(), packed_host.data());
  DeviceArray input(d.input), packed(packed_host), bias(d.bias);
  const size_t ws_bytes = algo.workspace_bytes(p);
  DeviceArray workspace((ws_bytes + sizeof(float) - 1) / sizeof(float));
  DeviceArray out(static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels));
  REQUIRE_CUDA_OK(algo.run(test::ctx(), p, input.data(), packed.data(), with_bias ? bias.data() : nullptr, out.data(),
                           ws_bytes ? workspace.data() : nullptr, act));
  std::vector<float> result = out.download();
  CHECK_MESSAGE(workspace.canary_intact(), algo.name(), " wrote past workspace_bytes");
  CHECK_MESSAGE(out.canary_intact(), algo.name(), " wrote past the output");
  return result;
}

// Host im2row of one group (the layout documented in conv_internal.h).
std::vector<float> host_im2row(const ConvParams& p, int64_t g, const std::vector<float>& in) {
  const int64_t cg = p.in_channels_per_group();
  std::vector<float> rows;
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oh = 0; oh < p.out_h(); ++oh)
      for (int64_t ow = 0; ow < p.out_w(); ++ow)
        for (int64_t kh = 0; kh < p.kernel_h; ++kh)
          for (int64_t kw = 0; kw < p.kernel_w; ++kw)
            for (int64_t c = 0; c < cg; ++c) {
              const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
              const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              const bool inside = ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w;
              rows.push_back(
                  inside ? in[static_cast<size_t>(((n * p.in_h + ih) * p.in_w + iw) * p.in_channels + g * cg + c)]
                         : 0.f);
            }
  return rows;
}

// Host window tensor [N][Ho][Ww][Kh][C] (conv_im2win.cu).
std::vector<float> host_window(const ConvParams& p, const std::vector<float>& in) {
  const int64_t window_w = (p.out_w() - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
  std::vector<float> win;
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oh = 0; oh < p.out_h(); ++oh)
      for (int64_t x = 0; x < window_w; ++x)
        for (int64_t kh = 0; kh < p.kernel_h; ++kh)
          for (int64_t c = 0; c < p.in_channels; ++c) {
            const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h, iw = x - p.pad_left;
            const bool inside = ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w;
            win.push_back(inside ? in[static_cast<size_t>(((n * p.in_h + ih) * p.in_w + iw) * p.in_channels + c)]
                                 : 0.f);
          }
  return win;
}

TEST_CASE("cuda conv registry lists direct, im2col, depthwise, im2win (and cudnn) in a fixed order") {
  const auto& algos = cuda::conv_algorithms();
  REQUIRE(algos.size() >= 4);
  CHECK(std::string(algos[0]->name()) == "direct");
  CHECK(std::string(algos[1]->name()) == "im2col");
  CHECK(std::string(algos[2]->name()) == "depthwise");
  CHECK(std::string(algos[3]->name()) == "im2win");
  if (algos.size() > 4) CHECK(std::string(algos[4]->name()) == "cudnn");
  if (test::kEmulated) CHECK(algos.size() == 4);
  for (const cuda::ConvAlgorithm* a : algos) CHECK(cuda::find_conv_algorithm(a->name()) == a);
  CHECK(cuda::find_conv_algorithm("no-such-algorithm") == nullptr);
}

TEST_CASE("cuda conv algorithms match the float64 reference") {
  uint32_t seed = 500;
  int checked = 0, skipped = 0;
  for (const ConvCase& c : conv_cases()) {
    INFO(describe(c));
    REQUIRE(c.p.is_valid());
    const ConvData d = make_data(c.p, seed += 10);
    const ref::Result want = ref::conv2d(c.p, d.input, d.weight, c.bias ? d.bias.data() : nullptr, c.act);
    for (const cuda::ConvAlgorithm* algo : cuda::conv_algorithms()) {
      INFO("algorithm ", std::string(algo->name()));
      if (std::string(algo->name()) == "depthwise") CHECK(algo->supports(c.p) == c.p.is_depthwise());
      if (!algo->supports(c.p)) continue;
      if (!test::ctx().libraries && (std::string(algo->name()) == "im2col" || std::string(algo->name()) == "cudnn")) {
        ++skipped;
        continue;
      }
      const std::vector<float> got = run_conv(*algo, c.p, d, c.bias, c.act);
      test::check_close(got.data(), want.value, want.abs_sum, want.terms, "vs reference");
      ++checked;
    }
  }
  MESSAGE(checked << " algorithm x shape runs checked over " << conv_cases().size() << " shapes"
                  << (skipped ? ", " + std::to_string(skipped) +
                                    " im2col runs skipped (cuBLAS: " + test::test_device().no_libraries_reason + ")"
                              : std::string()));
  CHECK(checked >= static_cast<int>(conv_cases().size()) * 2);
}

TEST_CASE("cuda im2row and im2win window tensors equal the host lowering") {
  uint32_t seed = 900;
  int checked = 0;
  for (const ConvCase& c : conv_cases()) {
    INFO(describe(c));
    const std::vector<float> input = make_data(c.p, seed += 10).input;
    DeviceArray in(input);
    const std::vector<float> want_win = host_window(c.p, input);
    REQUIRE(static_cast<int64_t>(want_win.size()) == cuda::im2win_window_floats(c.p));
    DeviceArray win(want_win.size());
    REQUIRE_CUDA_OK(cuda::im2win_window(c.p, in.data(), win.data(), test::ctx().stream));
    CHECK(test::bitwise_equal(win.download().data(), want_win.data(), want_win.size()));
    CHECK(win.canary_intact());
    for (int64_t g : {int64_t{0}, c.p.groups - 1}) {
      const std::vector<float> want_rows = host_im2row(c.p, g, input);
      REQUIRE(static_cast<int64_t>(want_rows.size()) == cuda::im2row_floats(c.p));
      DeviceArray rows(want_rows.size());
      REQUIRE_CUDA_OK(cuda::im2row(c.p, g, in.data(), rows.data(), test::ctx().stream));
      CHECK(test::bitwise_equal(rows.download().data(), want_rows.data(), want_rows.size()));
      CHECK(rows.canary_intact());
    }
    ++checked;
  }
  MESSAGE(checked << " shapes lowered both ways");
}

TEST_CASE("cuda conv workspace: im2win below im2col, no copy where the window is the input") {
  const cuda::ConvAlgorithm* im2win = cuda::find_conv_algorithm("im2win");
  const cuda::ConvAlgorithm* im2col = cuda::find_conv_algorithm("im2col");
  REQUIRE(im2win != nullptr);
  REQUIRE(im2col != nullptr);
  // ResNet 3x3, stride 1: window 56 x 58 x 3 x C per image vs im2col 56 x 56 x 9 x C.
  const ConvParams r = Conv(2, 64, 56, 56, 64).k(3, 3).pad(1).p;
  CHECK(im2win->workspace_bytes(r) == size_t{2} * 56 * 58 * 3 * 64 * sizeof(float));
  CHECK(im2col->workspace_bytes(r) == size_t{2} * 56 * 56 * 9 * 64 * sizeof(float));
  // Pointwise: neither copies.
  const ConvParams pw = Conv(2, 64, 14, 14, 128).k(1, 1).p;
  CHECK(im2win->workspace_bytes(pw) == 0);
  CHECK(im2col->workspace_bytes(pw) == 0);
  // Strided 1x1 and padded 1x1 need a window copy (rows are skipped or padded).
  CHECK(im2win->workspace_bytes(Conv(1, 16, 9, 9, 16).k(1, 1).s(2, 2).p) > 0);
  CHECK(im2win->workspace_bytes(Conv(1, 6, 5, 7, 10).k(1, 1).pad(1, 0, 0, 1).p) > 0);
  for (const cuda::ConvAlgorithm* a : {cuda::find_conv_algorithm("direct"), cuda::find_conv_algorithm("depthwise")})
    CHECK(a->workspace_bytes(r) == 0);
}

TEST_CASE("cuda conv supports() rejects what an algorithm cannot run, run() says so") {
  const cuda::ConvAlgorithm* depthwise = cuda::find_conv_algorithm("depthwise");
  const cuda::ConvAlgorithm* im2win = cuda::find_conv_algorithm("im2win");
  REQUIRE(depthwise != nullptr);
  REQUIRE(im2win != nullptr);
  CHECK(depthwise->supports(Conv(1, 8, 5, 5, 8).k(3, 3).g(8).p));
  CHECK_FALSE(depthwise->supports(Conv(1, 8, 5, 5, 8).k(3, 3).p));
  CHECK_FALSE(depthwise->supports(Conv(1, 8, 5, 5, 16).k(3, 3).g(8).p));
  ConvParams invalid = Conv(1, 8, 5, 5, 8).k(7, 7).p;  // kernel larger than the input
  CHECK_FALSE(im2win->supports(invalid));
  const cuda::Status s = im2win->run(test::ctx(), invalid, nullptr, nullptr, nullptr, nullptr, nullptr, kNone);
  CHECK(s.code() == cuda::StatusCode::kInvalidArgument);
  CHECK(s.message().find("im2win") != std::string::npos);
  // cuDNN's descriptor has symmetric padding only.
  if (const cuda::ConvAlgorithm* cudnn = cuda::find_conv_algorithm("cudnn")) {
    CHECK(cudnn->supports(Conv(1, 8, 9, 9, 8).k(3, 3).pad(1).p));
    CHECK_FALSE(cudnn->supports(Conv(1, 8, 9, 9, 8).k(3, 3).pad(1, 1, 0, 0).p));
  }
}

TEST_CASE("cuda im2col without cuBLAS reports kUnsupported") {
  const cuda::ConvAlgorithm* im2col = cuda::find_conv_algorithm("im2col");
  REQUIRE(im2col != nullptr);
  const ConvParams p = Conv(1, 3, 5, 5, 4).k(3, 3).p;
  cuda::Context no_libraries = test::ctx();
  no_libraries.libraries = nullptr;
  DeviceArray ws(im2col->workspace_bytes(p) / sizeof(float)), x(75), w(108), y(36);
  const cuda::Status s = im2col->run(no_libraries, p, x.data(), w.data(), nullptr, y.data(), ws.data(), kNone);
  CHECK(s.code() == cuda::StatusCode::kUnsupported);
  CHECK(s.message().find("cuBLAS") != std::string::npos);
}

}  // namespace
}  // namespace winfer
