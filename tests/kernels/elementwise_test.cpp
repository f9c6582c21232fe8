// Element-wise kernels (also in place), channel concat/split/shuffle and layout conversion.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/channel_ops.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/layout.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

const Activation kActivations[] = {Activation::kNone, Activation::kRelu, Activation::kRelu6};

// Data in [-8, 8] so relu6 clips on both sides.
std::vector<float> wide_random(size_t count, uint32_t seed) { return test::random_floats(count, seed, -8.f, 8.f); }

TEST_CASE("activation: copy and in place, every activation") {
  for (int64_t count : {1, 7, 100003}) {
    const auto in = wide_random(static_cast<size_t>(count), 3);
    for (Activation act : kActivations) {
      INFO("count ", count, " act ", std::string(activation_name(act)));
      std::vector<double> want(in.size());
      for (size_t i = 0; i < in.size(); ++i) want[i] = ref::activate(in[i], act);
      std::vector<float> out(in.size(), NAN);
      activation_inplace_or_copy(in.data(), out.data(), count, act, 1);
      test::check_close_simple(out.data(), want, 0.0, 0.0, "copy");
      std::vector<float> inplace = in;
      activation_inplace_or_copy(inplace.data(), inplace.data(), count, act, 2);
      test::check_close_simple(inplace.data(), want, 0.0, 0.0, "in place, 2 threads");
    }
  }
}

TEST_CASE("add: separate output and in place on either operand") {
  for (int64_t count : {1, 13, 70001}) {
    const auto a = wide_random(static_cast<size_t>(count), 5);
    const auto b = wide_random(static_cast<size_t>(count), 6);
    for (Activation act : kActivations) {
      INFO("count ", count, " act ", std::string(activation_name(act)));
      // float + float is correctly rounded; the double sum rounded to float is the same value.
      std::vector<double> want(a.size());
      for (size_t i = 0; i < a.size(); ++i) want[i] = ref::activate(static_cast<float>(double(a[i]) + b[i]), act);
      std::vector<float> out(a.size(), NAN);
      add(a.data(), b.data(), out.data(), count, act, 1);
      test::check_close_simple(out.data(), want, 0.0, 0.0, "add");
      std::vector<float> in_a = a, in_b = b;
      add(in_a.data(), b.data(), in_a.data(), count, act, 2);
      add(a.data(), in_b.data(), in_b.data(), count, act, 3);
      test::check_close_simple(in_a.data(), want, 0.0, 0.0, "add in place on a");
      test::check_close_simple(in_b.data(), want, 0.0, 0.0, "add in place on b");
    }
  }
}

TEST_CASE("scale_shift_channels_nhwc, in place, every activation") {
  const int64_t pixels = 3 * 7 * 5, channels = 19;
  const auto in = wide_random(static_cast<size_t>(pixels * channels), 8);
  const auto scale = test::random_floats(channels, 9, -2.f, 2.f);
  const auto shift = test::random_floats(channels, 10);
  for (Activation act : kActivations) {
    INFO("act ", std::string(activation_name(act)));
    std::vector<double> want(in.size());
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c = 0; c < channels; ++c) {
        const size_t i = static_cast<size_t>(p * channels + c);
        want[i] = ref::activate(double(in[i]) * scale[c] + shift[c], act);
      }
    std::vector<float> out(in.size(), NAN);
    scale_shift_channels_nhwc(in.data(), scale.data(), shift.data(), out.data(), pixels, channels, act, 1);
    // One multiply and one add (possibly fused): a couple of float32 roundings of |x*s| + |t| <= 26.
    test::check_close_simple(out.data(), want, 2e-7, 1e-5, "scale_shift");
    std::vector<float> inplace = in;
    scale_shift_channels_nhwc(inplace.data(), scale.data(), shift.data(), inplace.data(), pixels, channels, act, 2);
    CHECK(test::bitwise_equal(inplace.data(), out.data(), out.size()));
  }
}

TEST_CASE("concat and split channels: index formula and round trip") {
  const int64_t pixels = 2 * 7 * 5;
  const std::vector<int64_t> channels = {3, 5, 1, 16};
  const int64_t width = 25;
  std::vector<std::vector<float>> parts;
  for (size_t i = 0; i < channels.size(); ++i)
    parts.push_back(test::random_floats(static_cast<size_t>(pixels * channels[i]), 20 + static_cast<uint32_t>(i)));
  std::vector<const float*> inputs;
  for (const auto& part : parts) inputs.push_back(part.data());

  for (int threads : {1, 3}) {
    INFO("threads ", threads);
    std::vector<float> cat(static_cast<size_t>(pixels * width), NAN);
    concat_channels_nhwc(pixels, 4, inputs.data(), channels.data(), cat.data(), threads);
    bool ok = true;
    for (int64_t p = 0; p < pixels; ++p) {
      int64_t offset = 0;
      for (size_t i = 0; i < channels.size(); ++i) {
        for (int64_t c = 0; c < channels[i]; ++c)
          ok &= cat[static_cast<size_t>(p * width + offset + c)] == parts[i][static_cast<size_t>(p * channels[i] + c)];
        offset += channels[i];
      }
    }
    CHECK(ok);

    std::vector<std::vector<float>> back(channels.size());
    std::vector<float*> outputs;
    for (size_t i = 0; i < channels.size(); ++i) {
      back[i].assign(static_cast<size_t>(pixels * channels[i]), NAN);
      outputs.push_back(back[i].data());
    }
    split_channels_nhwc(pixels, cat.data(), 4, channels.data(), outputs.data(), threads);
    for (size_t i = 0; i < channels.size(); ++i) CHECK(back[i] == parts[i]);
  }
}

TEST_CASE("channel shuffle equals PyTorch's view/transpose rule") {
  struct Case {
    int64_t pixels, channels, groups;
  };
  // Two groups of 58 and 31 channels: the interleave's 16-, 8- and 4-lane loops and its scalar tail.
  for (const cpu::Isa isa : test::runnable_isas())
    for (const Case& c :
         {Case{35, 12, 3}, Case{35, 12, 2}, Case{6, 116, 2}, Case{7, 62, 2}, Case{3000, 48, 4}, Case{5, 7, 7}}) {
      test::IsaCap cap(isa);
      INFO(test::isa_name(isa), ": C ", c.channels, " groups ", c.groups);
      const auto in = test::random_floats(static_cast<size_t>(c.pixels * c.channels), 31);
      // PyTorch: x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, C, H, W). Output channel k
      // sits at position (j, i) of the transposed (C/g, g) view, k = j*g + i, and holds the
      // element (i, j) of the (g, C/g) view of the input, i.e. input channel i*(C/g) + j.
      const int64_t per_group = c.channels / c.groups;
      std::vector<double> want(in.size());
      for (int64_t p = 0; p < c.pixels; ++p)
        for (int64_t k = 0; k < c.channels; ++k) {
          const int64_t j = k / c.groups, i = k % c.groups;
          want[static_cast<size_t>(p * c.channels + k)] = in[static_cast<size_t>(p * c.channels + i * per_group + j)];
        }
      std::vector<float> out(in.size(), NAN);
      channel_shuffle_nhwc(c.pixels, c.channels, c.groups, in.data(), out.data(), 1);
      test::check_close_simple(out.data(), want, 0.0, 0.0, "shuffle");
      std::vector<float> inplace = in;
      channel_shuffle_nhwc(c.pixels, c.channels, c.groups, inplace.data(), inplace.data(), 2);
      test::check_close_simple(inplace.data(), want, 0.0, 0.0, "shuffle in place");
    }
}

TEST_CASE("channel shuffle then split in one pass: pieces at any channel, strided outputs, threads, every ISA") {
  struct Case {
    int64_t pixels, groups;
    std::vector<int64_t> pieces;
  };
  // ShuffleNetV2's halves (58 + 58), halves at an odd channel (57 + 59: the second piece starts
  // on the other group), one channel then the rest, three pieces, three and four groups.
  const std::vector<Case> cases = {{300, 2, {58, 58}}, {9, 2, {57, 59}}, {9, 2, {1, 61}},    {40, 2, {10, 31, 21}},
                                   {50, 3, {6, 6}},    {17, 4, {5, 11}}, {2000, 2, {24, 24}}};
  for (const cpu::Isa isa : test::runnable_isas())
    for (const Case& c : cases) {
      test::IsaCap cap(isa);
      int64_t width = 0;
      for (int64_t p : c.pieces) width += p;
      INFO(test::isa_name(isa), ": C ", width, " groups ", c.groups, " pieces ", c.pieces.size(), " first ",
           c.pieces[0]);
      const auto in = test::random_floats(static_cast<size_t>(c.pixels * width), 33);
      std::vector<float> shuffled(in.size(), NAN);
      channel_shuffle_nhwc(c.pixels, width, c.groups, in.data(), shuffled.data(), 1);
      // Piece 0 written into a wider row (a concat's slice, 3 floats of padding per pixel that
      // must stay untouched), the others dense.
      const int n = static_cast<int>(c.pieces.size());
      std::vector<std::vector<float>> outs(c.pieces.size());
      std::vector<float*> targets;
      std::vector<int64_t> strides;
      for (int i = 0; i < n; ++i) {
        const int64_t stride = i == 0 ? c.pieces[0] + 3 : 0;
        outs[i].assign(static_cast<size_t>(c.pixels * (stride > 0 ? stride : c.pieces[i])), -7.f);
        targets.push_back(outs[i].data());
        strides.push_back(stride);
      }
      for (int threads : {1, 2}) {
        channel_shuffle_split_nhwc(c.pixels, c.groups, in.data(), n, c.pieces.data(), targets.data(), strides.data(),
                                   threads);
        int64_t offset = 0, wrong = 0;
        for (int i = 0; i < n; ++i) {
          const int64_t row = strides[i] > 0 ? strides[i] : c.pieces[i];
          for (int64_t p = 0; p < c.pixels; ++p)
            for (int64_t k = 0; k < row; ++k) {
              const float got = outs[i][static_cast<size_t>(p * row + k)];
              const float want = k < c.pieces[i] ? shuffled[static_cast<size_t>(p * width + offset + k)] : -7.f;
              wrong += got != want;
            }
          offset += c.pieces[i];
        }
        CHECK_MESSAGE(wrong == 0, threads << " thread(s)");
      }
    }
}

TEST_CASE("layout NCHW <-> NHWC: index formula, round trip, threads, every ISA") {
  struct Case {
    int64_t n, c, h, w;
  };
  // Thin (C <= 16 or H*W <= 16) and tiled shapes, partial tiles, and sizes big enough to be
  // split between threads; RGB images (C = 3, their own vector path) with whole vectors and a
  // rest of pixels on every ISA, and one of fewer pixels than a vector.
  for (const cpu::Isa isa : test::runnable_isas())
    for (const Case& s :
         {Case{2, 3, 7, 5}, Case{1, 70, 33, 35}, Case{1, 1, 4, 4}, Case{3, 64, 1, 1}, Case{1, 33, 1, 65},
          Case{2, 3, 200, 200}, Case{2, 20000, 2, 2}, Case{2, 96, 45, 41}, Case{1, 3, 3, 2}, Case{3, 3, 17, 9}}) {
      test::IsaCap cap(isa);
      INFO(test::isa_name(isa), ": N", s.n, " C", s.c, " H", s.h, " W", s.w);
      const size_t count = static_cast<size_t>(s.n * s.c * s.h * s.w);
      const auto nchw = test::random_floats(count, 41);
      std::vector<float> nhwc(count, NAN), back(count, NAN);
      nchw_to_nhwc(s.n, s.c, s.h, s.w, nchw.data(), nhwc.data(), 1);
      bool ok = true;
      for (int64_t n = 0; n < s.n; ++n)
        for (int64_t c = 0; c < s.c; ++c)
          for (int64_t y = 0; y < s.h; ++y)
            for (int64_t x = 0; x < s.w; ++x)
              ok &= nhwc[static_cast<size_t>(((n * s.h + y) * s.w + x) * s.c + c)] ==
                    nchw[static_cast<size_t>(((n * s.c + c) * s.h + y) * s.w + x)];
      CHECK(ok);
      nhwc_to_nchw(s.n, s.c, s.h, s.w, nhwc.data(), back.data(), 1);
      CHECK(back == nchw);
      std::vector<float> nhwc3(count, NAN), back3(count, NAN);
      nchw_to_nhwc(s.n, s.c, s.h, s.w, nchw.data(), nhwc3.data(), 3);
      nhwc_to_nchw(s.n, s.c, s.h, s.w, nhwc3.data(), back3.data(), 3);
      CHECK(nhwc3 == nhwc);
      CHECK(back3 == nchw);
    }
}

}  // namespace
}  // namespace winfer
