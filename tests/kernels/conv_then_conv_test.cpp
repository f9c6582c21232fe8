// A convolution and the convolution reading its output, computed band by band
// (kernels/cpu/conv_then_conv.h), against the two whole convolutions run one after the other
// (bitwise: every row of the first is computed once by the same algorithm; the second reads
// the same taps; im2col within tolerance, its BLAS may block a product of fewer rows
// differently) and against the float64 reference of the pair, for bands of one output row
// (the most shared rows), a few rows, and the whole image; with a pointwise function after either
// convolution (EfficientNet's SiLU, MobileNetV3's Hardswish), applied band by band, against the
// unfused layers' pass over the whole output (the same code per element: the same bits).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_then_conv.h"
#include "kernels/cpu/pointwise.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;

struct PairCase {
  ConvParams first, second;
  Activation first_act, second_act;
  const char* second_algorithm;
  std::optional<PointwiseFn> first_fn, second_fn;  // after the activation (which is then none)
};

// second's input is first's output.
ConvParams reading(const ConvParams& first, Conv second) {
  second.p.batch = first.batch;
  second.p.in_channels = first.out_channels;
  second.p.in_h = first.out_h();
  second.p.in_w = first.out_w();
  return second.p;
}

std::vector<PairCase> cases() {
  const Activation relu = Activation::kRelu, relu6 = Activation::kRelu6, none = Activation::kNone;
  std::vector<PairCase> out;
  const auto add = [&](const ConvParams& first, Conv second, Activation a1, Activation a2, const char* algorithm) {
    out.push_back({first, reading(first, second), a1, a2, algorithm, std::nullopt, std::nullopt});
  };
  // ShuffleNet's pointwise -> depthwise 3x3, stride 1 and 2, odd sizes, batch 2.
  const ConvParams pw = Conv(2, 7, 13, 11, 24).p;
  add(pw, Conv(0, 0, 0, 0, 24).k(3, 3).pad(1).g(24), relu, none, "depthwise");
  add(pw, Conv(0, 0, 0, 0, 24).k(3, 3).s(2, 2).pad(1).g(24), relu, none, "depthwise");
  // MobileNetV2's relu6 on both; a 5x5 depthwise with dilation 2 and its largest padding.
  add(Conv(1, 5, 12, 9, 19).p, Conv(0, 0, 0, 0, 19).k(5, 5).d(2, 2).pad(8).g(19), relu6, relu6, "depthwise");
  // Asymmetric padding, stride larger than the kernel (rows the second never reads).
  add(Conv(1, 4, 15, 10, 16).p, Conv(0, 0, 0, 0, 16).k(2, 3).s(3, 1).pad(0, 1, 1, 1).g(16), none, relu, "depthwise");
  // Batch 3 with bands of whole images (the two largest band bytes below): the same, rows the
  // second never reads and input rows the first never reads (1x1 stride 2 on an even height), so
  // each band holds one image; and a pair whose bands hold two images and then one.
  add(Conv(3, 4, 15, 10, 16).p, Conv(0, 0, 0, 0, 16).k(2, 3).s(3, 1).pad(0, 1, 1, 1).g(16), none, relu, "depthwise");
  add(Conv(3, 5, 10, 9, 8).s(2, 2).p, Conv(0, 0, 0, 0, 8).k(3, 3).pad(1).g(8), relu, none, "depthwise");
  add(Conv(3, 6, 7, 7, 20).p, Conv(0, 0, 0, 0, 20).k(3, 3).pad(1).g(20), relu, relu6, "depthwise");
  // A first convolution with a window of its own (3x3 stride 2, groups) and a dense second.
  add(Conv(2, 6, 17, 14, 12).k(3, 3).s(2, 2).pad(1).g(2).p, Conv(0, 0, 0, 0, 10).k(3, 3).pad(1), relu, none, "direct");
  add(Conv(1, 8, 10, 10, 16).k(3, 3).pad(1).p, Conv(0, 0, 0, 0, 16).k(1, 1), relu, relu, "im2win");
  // RegNet's 1x1 -> grouped 3x3 (group width 8, stride 2 and 1), batch 3 and 5: bands of whole
  // images, one lane per image on 2 threads (each image cut in two ranges at batch 3).
  add(Conv(3, 6, 13, 11, 24).p, Conv(0, 0, 0, 0, 24).k(3, 3).s(2, 2).pad(1).g(3), relu, relu, "im2win");
  add(Conv(5, 8, 9, 9, 16).p, Conv(0, 0, 0, 0, 16).k(3, 3).pad(1).g(2), relu, none, "im2win");
  // Pointwise functions: EfficientNet's expand 1x1 + SiLU -> depthwise 3x3 / 5x5 stride 2 + SiLU,
  // MobileNetV3's Hardswish on both, sigmoid and hardsigmoid; batch 3 in bands of whole images
  // (one call computes and applies the function to several images' rows).
  const auto add_fns = [&](const ConvParams& first, Conv second, std::optional<PointwiseFn> f1,
                           std::optional<PointwiseFn> f2) {
    out.push_back({first, reading(first, second), none, none, "depthwise", f1, f2});
  };
  const PointwiseFn silu = PointwiseFn::kSilu, hardswish = PointwiseFn::kHardSwish;
  add_fns(Conv(2, 6, 11, 9, 24).p, Conv(0, 0, 0, 0, 24).k(3, 3).pad(1).g(24), silu, silu);
  add_fns(Conv(1, 5, 13, 12, 20).p, Conv(0, 0, 0, 0, 20).k(5, 5).s(2, 2).pad(2).g(20), silu, silu);
  add_fns(Conv(2, 7, 9, 10, 16).p, Conv(0, 0, 0, 0, 16).k(3, 3).s(2, 2).pad(1).g(16), hardswish, hardswish);
  add_fns(Conv(1, 4, 8, 7, 12).p, Conv(0, 0, 0, 0, 12).k(3, 3).pad(1).g(12), PointwiseFn::kSigmoid,
          PointwiseFn::kHardSigmoid);
  add_fns(Conv(3, 6, 7, 7, 20).p, Conv(0, 0, 0, 0, 20).k(3, 3).pad(1).g(20), silu, std::nullopt);
  add_fns(Conv(3, 6, 7, 7, 20).p, Conv(0, 0, 0, 0, 20).k(3, 3).pad(1).g(20), std::nullopt, hardswish);
  // Batch 5 with bands of one whole image (band bytes = an image's): a lane per thread, each
  // taking whole images, the last thread one image fewer.
  add_fns(Conv(5, 6, 9, 8, 20).p, Conv(0, 0, 0, 0, 20).k(5, 5).pad(2).g(20), silu, silu);
  return out;
}

// PyTorch's definitions, in float64.
double exact_fn(PointwiseFn fn, double x) {
  const double hard = std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0;
  switch (fn) {
    case PointwiseFn::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case PointwiseFn::kSilu: return x / (1.0 + std::exp(-x));
    case PointwiseFn::kHardSigmoid: return hard;
    case PointwiseFn::kHardSwish: return x * hard;
  }
  return NAN;
}

// The reference after the function: value fn(value); the bound (abs_sum) carried through it, as
// its slope is at most 1.5 (hardswish at 3; silu 1.1), plus |fn(value)| for the function's own
// rounding (the tolerance is at least 8 ulp of abs_sum: the kernel is within 4, pointwise_test).
void apply_exact(std::optional<PointwiseFn> fn, ref::Result* r) {
  if (!fn) return;
  for (size_t i = 0; i < r->value.size(); ++i) {
    r->value[i] = exact_fn(*fn, r->value[i]);
    r->abs_sum[i] = 1.5 * r->abs_sum[i] + std::abs(r->value[i]);
  }
}

void apply_fn(std::optional<PointwiseFn> fn, std::vector<float>* v) {
  if (fn) pointwise_activation(v->data(), v->data(), static_cast<int64_t>(v->size()), *fn, 1);
}

struct Packed {
  std::vector<float> first, second;
};

Packed pack(const ConvAlgorithm& a, const ConvAlgorithm& b, const PairCase& c, const test::ConvData& d1,
            const test::ConvData& d2) {
  Packed p;
  p.first.resize(a.packed_weight_bytes(c.first) / sizeof(float) + 1);
  a.pack_weights(c.first, d1.weight.data(), p.first.data());
  p.second.resize(b.packed_weight_bytes(c.second) / sizeof(float) + 1);
  b.pack_weights(c.second, d2.weight.data(), p.second.data());
  return p;
}

std::vector<float> banded(const ConvAlgorithm& a, const ConvAlgorithm& b, const PairCase& c, const test::ConvData& d1,
                          const test::ConvData& d2, int64_t band_bytes, int threads, int sized_threads) {
  const ConvThenConv pair(a, c.first, b, c.second, BandSizing{sized_threads, band_bytes});
  const Packed packed = pack(a, b, c, d1, d2);
  test::GuardedBuffer workspace(pair.workspace_bytes());
  const size_t count =
      static_cast<size_t>(c.second.batch * c.second.out_h() * c.second.out_w() * c.second.out_channels);
  test::GuardedBuffer out(count * sizeof(float));
  std::memset(out.data_bytes(), 0xFF, count * sizeof(float));  // NaN: a row never written shows
  pair.run(d1.input.data(), ConvStage{&a, packed.first.data(), d1.bias.data(), c.first_act, c.first_fn},
           ConvStage{&b, packed.second.data(), d2.bias.data(), c.second_act, c.second_fn}, out.floats(),
           workspace.data_bytes(), threads);
  CHECK_MESSAGE(workspace.canary_intact(), a.name(), " then ", b.name(), " wrote past its workspace");
  CHECK_MESSAGE(out.canary_intact(), a.name(), " then ", b.name(), " wrote past the output");
  return std::vector<float>(out.floats(), out.floats() + count);
}

TEST_CASE("conv then conv in bands: equal to the two whole convolutions, and to the float64 reference") {
  uint32_t seed = 900;
  for (const PairCase& c : cases()) {
    REQUIRE(c.first.is_valid());
    REQUIRE(c.second.is_valid());
    INFO(c.first.to_string(), " then ", c.second.to_string());
    const test::ConvData d1 = test::make_data(c.first, seed += 5);
    test::ConvData d2 = test::make_data(c.second, seed += 5);
    // The reference of the pair: the first in float64, rounded to float, then the second. Its
    // error bound adds the first's, carried through the second's weights (sum |w| * bound).
    ref::Result y = ref::conv2d(c.first, d1.input, d1.weight, d1.bias.data(), c.first_act);
    apply_exact(c.first_fn, &y);
    ref::Result want = ref::conv2d(c.second, std::vector<float>(y.value.begin(), y.value.end()), d2.weight,
                                   d2.bias.data(), c.second_act);
    std::vector<float> abs_w(d2.weight);
    for (float& w : abs_w) w = std::abs(w);
    const ref::Result carried = ref::conv2d(c.second, std::vector<float>(y.abs_sum.begin(), y.abs_sum.end()), abs_w,
                                            nullptr, Activation::kNone);
    std::vector<double> bound(want.abs_sum);
    for (size_t i = 0; i < bound.size(); ++i) bound[i] += carried.value[i];
    want.abs_sum = bound;
    apply_exact(c.second_fn, &want);
    bound = want.abs_sum;
    const int64_t terms = y.terms + want.terms;

    const ConvAlgorithm* second = find_conv_algorithm(c.second_algorithm);
    REQUIRE(second != nullptr);
    const int64_t row_bytes = c.first.out_w() * c.first.out_channels * 4;
    for (const char* name : {"im2win", "indirect", "im2col", "direct"}) {
      const ConvAlgorithm* first = find_conv_algorithm(name);
      REQUIRE(first != nullptr);
      INFO(std::string(name), " then ", std::string(second->name()));
      std::vector<float> y_alg = test::run_conv(*first, c.first, d1, true, c.first_act, 1);
      apply_fn(c.first_fn, &y_alg);
      test::ConvData d2_alg = d2;
      d2_alg.input = y_alg;
      std::vector<float> whole = test::run_conv(*second, c.second, d2_alg, true, c.second_act, 1);
      apply_fn(c.second_fn, &whole);
      test::check_close(whole.data(), want.value, bound, terms, "whole convolutions vs reference");
      const int64_t image_bytes = row_bytes * c.first.out_h();
      for (int64_t band_bytes :
           {int64_t{1}, 3 * row_bytes * c.second.stride_h, image_bytes, 2 * image_bytes, int64_t{1} << 30}) {
        INFO("band bytes ", band_bytes);
        // Sized for the threads that run it (2: lanes), and sized for 1 but run on 2.
        for (const std::pair<int, int>& run : {std::pair{1, 1}, std::pair{2, 2}, std::pair{2, 1}}) {
          const int threads = run.first, sized = run.second;
          INFO("threads ", threads, ", sized for ", sized);
          const std::vector<float> got = banded(*first, *second, c, d1, d2, band_bytes, threads, sized);
          if (std::string(name) == "im2col")
            test::check_close(got.data(), want.value, bound, terms, "banded im2col vs reference");
          else
            CHECK(test::bitwise_equal(got.data(), whole.data(), got.size()));
        }
      }
    }
  }
}

TEST_CASE("conv bands: whole images per band only where a batch of them keeps the image strides") {
  const ConvAlgorithm* im2win = find_conv_algorithm("im2win");
  REQUIRE(im2win != nullptr);
  const auto images = [&](const ConvParams& first, const Conv& second, int64_t band_bytes) {
    const ConvParams q = reading(first, second);
    return ConvBands(*im2win, first, RowWindow{q.kernel_h, q.stride_h, q.pad_top, q.dilation_h, q.out_h()},
                     BandSizing{2, band_bytes})
        .images_per_band();
  };
  const ConvParams small = Conv(3, 6, 7, 7, 20).p;  // one image's output: 7 x 7 x 20 floats
  const int64_t image_bytes = 7 * 7 * 20 * 4;
  const Conv depthwise = Conv(0, 0, 0, 0, 20).k(3, 3).pad(1).g(20);
  CHECK(images(small, depthwise, 1) == 1);
  CHECK(images(small, depthwise, image_bytes) == 1);
  CHECK(images(small, depthwise, 2 * image_bytes) == 2);
  CHECK(images(small, depthwise, int64_t{1} << 30) == 2);  // at most half the batch, rounded up
  CHECK(images(Conv(8, 6, 7, 7, 20).p, depthwise, int64_t{1} << 30) == 4);
  CHECK(images(Conv(8, 6, 7, 7, 20).p, depthwise, 3 * image_bytes) == 3);
  // Input rows the first never reads (1x1 stride 2, even height); rows the second never reads.
  CHECK(images(Conv(3, 5, 10, 9, 8).s(2, 2).p, Conv(0, 0, 0, 0, 8).k(3, 3).pad(1).g(8), int64_t{1} << 30) == 1);
  CHECK(images(Conv(3, 4, 15, 10, 16).p, Conv(0, 0, 0, 0, 16).k(2, 3).s(3, 1).pad(0, 1, 1, 1).g(16),
               int64_t{1} << 30) == 1);
}

TEST_CASE("conv bands: a band of one whole image gets a lane per thread where each thread takes whole images") {
  const ConvAlgorithm* im2win = find_conv_algorithm("im2win");
  REQUIRE(im2win != nullptr);
  const Conv depthwise = Conv(0, 0, 0, 0, 20).k(3, 3).pad(1).g(20);
  const int64_t image_bytes = 7 * 7 * 20 * 4;
  const auto workspace = [&](int64_t batch, int threads) {
    const ConvParams first = Conv(batch, 6, 7, 7, 20).p, q = reading(first, depthwise);
    const ConvBands bands(*im2win, first, RowWindow{q.kernel_h, q.stride_h, q.pad_top, q.dilation_h, q.out_h()},
                          BandSizing{threads, image_bytes});
    REQUIRE(bands.images_per_band() == 1);
    return bands.workspace_bytes();
  };
  // Batch 3 on 2 threads would cut images into ranges: one band, split between the threads.
  // From batch 4 each of 2 threads takes whole images: two lanes of an image each.
  CHECK(workspace(3, 2) >= size_t(image_bytes));
  CHECK(workspace(3, 2) < size_t(2 * image_bytes));
  CHECK(workspace(4, 2) >= size_t(2 * image_bytes));
  CHECK(workspace(8, 2) == workspace(4, 2));
  CHECK(workspace(8, 4) == workspace(4, 4));
  // A session of one thread runs no lanes, and holds none.
  CHECK(workspace(4, 1) == workspace(3, 2));
  CHECK(workspace(8, 1) == workspace(3, 2));
}

TEST_CASE("conv bands: bands one thread runs alone are smaller, and the lanes no more than the threads") {
  const ConvAlgorithm* im2win = find_conv_algorithm("im2win");
  REQUIRE(im2win != nullptr);
  // A 112x112 3x3 convolution (16 -> 96, 43 KiB a row; im2win needs window slots) under a 3x3
  // depthwise of stride 2.
  const ConvParams first = Conv(1, 16, 112, 112, 96).k(3, 3).pad(1).p;
  const ConvParams q = reading(first, Conv(0, 0, 0, 0, 96).k(3, 3).s(2, 2).pad(1).g(96));
  const RowWindow window{q.kernel_h, q.stride_h, q.pad_top, q.dilation_h, q.out_h()};
  const int64_t row_bytes = 112 * 96 * 4;
  const auto band_rows = [&](const ConvBands& bands) {
    int64_t most = 0;
    bands.for_each_band([&](const ConvBands::Band& b) { most = std::max(most, b.r1 - b.r0); });
    return most;
  };
  const ConvBands one(*im2win, first, window, BandSizing{1});
  const ConvBands two(*im2win, first, window, BandSizing{2});
  const ConvBands four(*im2win, first, window, BandSizing{4});
  // A band holds the rows its consumer rows read: at most the band bytes, plus one window's overlap.
  CHECK(band_rows(one) * row_bytes <= ConvBands::kOneThreadBandBytes + row_bytes);
  CHECK(band_rows(one) * row_bytes > ConvBands::kOneThreadBandBytes / 2);
  CHECK(band_rows(two) * row_bytes <= ConvBands::kSharedBandBytes + row_bytes);
  CHECK(band_rows(two) * row_bytes > ConvBands::kSharedBandBytes / 2);
  CHECK(band_rows(four) == band_rows(two));
  // One thread: one band and its scratch. Lanes (a quarter of a band each, with a scratch each):
  // two on 2 threads, four on 4.
  CHECK(one.workspace_bytes() < size_t(ConvBands::kOneThreadBandBytes + row_bytes) + im2win->workspace_bytes(first));
  CHECK(two.workspace_bytes() < four.workspace_bytes());
}

}  // namespace
}  // namespace winfer
