// Group sets (kernels/cpu/group_sets.h), im2win's layout for groups of 4, 8 or 16 output
// channels: which shapes use it, the lane permutation, the weight packing (round trip, in
// place, absent groups), and the set tiles of every ISA this machine runs (TileKernels::sets:
// every MR, B = 1, 2, 4, each column block of a panel as im2win calls it, taps in the
// left/right padding skipped, absent groups, residual separate and in place, every
// activation) against a float64 sum written from the layout's definition. The whole algorithm
// on grouped shapes is checked in im2win_test (tile_algorithm_cases).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/group_sets.h"
#include "kernels/cpu/ukernel_conv.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;

TEST_CASE("group sets: the shapes that use them and the lane permutation") {
  CHECK(cpu::group_set_width(Conv(1, 48, 8, 8, 48).k(3, 3).g(6).p) == 2);     // RegNet: 8 per group
  CHECK(cpu::group_set_width(Conv(1, 128, 8, 8, 128).k(3, 3).g(32).p) == 4);  // ResNeXt: 4 per group
  CHECK(cpu::group_set_width(Conv(1, 64, 8, 8, 64).k(3, 3).g(4).p) == 1);     // 16 per group
  CHECK(cpu::group_set_width(Conv(1, 24, 8, 8, 48).k(3, 3).g(6).p) == 2);     // Cg 4, Cog 8
  CHECK(cpu::group_set_width(Conv(1, 64, 8, 8, 64).k(3, 3).p) == 0);          // one group
  CHECK(cpu::group_set_width(Conv(1, 64, 8, 8, 64).k(3, 3).g(2).p) == 0);     // 32 per group
  CHECK(cpu::group_set_width(Conv(1, 8, 8, 8, 8).k(3, 3).g(8).p) == 0);       // depthwise
  CHECK(cpu::group_set_width(Conv(1, 30, 8, 8, 30).k(3, 3).g(6).p) == 0);     // 5 per group
  for (int64_t b : {1, 2, 4}) {
    std::set<int> lanes;
    for (int channel = 0; channel < 16; ++channel) lanes.insert(cpu::lane_of(b, channel));
    CHECK(lanes.size() == 16u);
    CHECK(*lanes.rbegin() == 15);
  }
  CHECK(cpu::lane_of(2, 1) == 2);  // group 0, channel 1
  CHECK(cpu::lane_of(2, 8) == 1);  // group 1, channel 0
  CHECK(cpu::lane_of(4, 5) == 5);  // group 1, channel 1: lane 1 * 4 + 1
  CHECK(cpu::lane_of(1, 7) == 7);
}

TEST_CASE("group sets: packed weights by definition, round trip, in place, absent groups") {
  const std::vector<ConvParams> shapes = {
      Conv(1, 48, 5, 5, 48).k(3, 3).g(6).p,   // B = 2: one whole panel and one of 2 groups
      Conv(1, 40, 5, 5, 40).k(3, 3).g(10).p,  // B = 4: 8 + 2 groups
      Conv(1, 48, 5, 5, 48).k(3, 3).g(3).p,   // B = 1: 2 + 1 groups
      Conv(1, 64, 5, 5, 64).k(3, 3).g(8).p,   // B = 2, whole panels: packs in place
      Conv(1, 24, 5, 5, 48).k(1, 3).g(6).p,   // Cg 4, Cog 8, 1x3
  };
  const ConvAlgorithm* im2win = find_conv_algorithm("im2win");
  REQUIRE(im2win != nullptr);
  uint32_t seed = 900;
  for (const ConvParams& p : shapes) {
    INFO(p.to_string());
    const cpu::GroupSets s(p);
    const int64_t taps = p.kernel_h * p.kernel_w, oihw_floats = p.out_channels * s.cg * taps;
    const std::vector<float> oihw = test::random_floats(static_cast<size_t>(oihw_floats), seed += 7);
    REQUIRE(im2win->packed_weight_bytes(p) == static_cast<size_t>(s.weight_floats()) * sizeof(float));
    std::vector<float> packed(static_cast<size_t>(s.weight_floats()), -7.f);
    im2win->pack_weights(p, oihw.data(), packed.data());
    // Every packed float from its definition: panel q, K step (kw, kh, c), lane L = s*16 + o*B + h
    // holds output channel (q*2B + s*B + h) * Cog + o, or 0 for an absent group.
    for (int64_t q = 0; q < s.panels; ++q)
      for (int64_t kw = 0; kw < p.kernel_w; ++kw)
        for (int64_t kh = 0; kh < p.kernel_h; ++kh)
          for (int64_t c = 0; c < s.cg; ++c)
            for (int lane = 0; lane < 32; ++lane) {
              const int64_t set = lane / 16, o = (lane % 16) / s.b, h = lane % 16 % s.b;
              const int64_t group = q * s.per_panel + set * s.b + h;
              const int64_t l = (kw * p.kernel_h + kh) * s.cg + c;
              const float got = packed[static_cast<size_t>((q * s.k + l) * 32 + lane)];
              const float want =
                  group < p.groups
                      ? oihw[static_cast<size_t>(((group * s.cog + o) * s.cg + c) * taps + kh * p.kernel_w + kw)]
                      : 0.f;
              if (got != want) {
                INFO("panel ", q, " step ", l, " lane ", lane);
                CHECK(got == want);
                return;
              }
            }
    std::vector<float> back(oihw.size());
    im2win->unpack_weights(p, packed.data(), back.data());
    CHECK(back == oihw);
    std::vector<float> in_place = oihw;
    const bool whole_panels = p.groups % s.per_panel == 0;
    CHECK(im2win->pack_weights_in_place(p, in_place.data()) == whole_panels);
    if (whole_panels)
      CHECK(in_place == packed);
    else
      CHECK(in_place == oihw);  // untouched
  }
}

// One set tile call as im2win makes it (conv_im2win.cpp, compute_set_tile), checked against
// the float64 sum over the layout's definition.
struct SetTileCase {
  int64_t b = 2;
  int rows = 1;
  int64_t present = 32;  // output channels of the panel that exist (absent groups beyond)
  int64_t k = 7;         // K steps
  int64_t skip_first = 0, skip_last = 0;
  bool bias = true, residual = false, residual_in_place = false;
  Activation act = Activation::kNone;
  uint32_t seed = 1;
};

void check_set_tile(const cpu::TileKernels& uk, const SetTileCase& c) {
  INFO("isa ", std::string(uk.isa), " B ", c.b, " rows ", c.rows, " present ", c.present, " K ", c.k, " skip ",
       c.skip_first, "/", c.skip_last, c.bias ? " bias" : "",
       c.residual ? (c.residual_in_place ? " residual in place" : " residual") : "", " act ",
       std::string(activation_name(c.act)));
  const int64_t step = 2 * c.b, pixel_step = 3 * step + 1;  // runs overlap, as in a window
  const std::vector<float> input =
      test::random_floats(static_cast<size_t>((c.rows - 1) * pixel_step + c.k * step + 32), c.seed);
  // 32 floats past K: with K = 0 the blocks' pointers (data() + col, + pixel offsets) still
  // point into a buffer (UBSan: a null vector's data() + 64 is undefined).
  const std::vector<float> weights = test::random_floats(static_cast<size_t>(c.k * 32 + 32), c.seed + 1);
  const std::vector<float> bias = test::random_floats(32, c.seed + 2);
  std::vector<float> lane_bias(32, 0.f);
  const cpu::GroupSets sets(Conv(1, 32 / c.b * 2, 1, 1, 32).k(1, 1).g(2 * c.b).p);
  REQUIRE(sets.b == c.b);
  cpu::lane_bias(sets, 0, c.bias ? bias.data() : nullptr, lane_bias.data());
  for (int lane = 0; lane < 32; ++lane) {  // lane_bias against the permutation
    const int channel = lane / 16 * 16 + [&] {
      for (int ch = 0; ch < 16; ++ch)
        if (cpu::lane_of(c.b, ch) == lane % 16) return ch;
      return -1;
    }();
    CHECK(lane_bias[static_cast<size_t>(lane)] == (c.bias ? bias[static_cast<size_t>(channel)] : 0.f));
  }
  const int64_t out_stride = 32 + 5;
  constexpr float kSentinel = 1234.5f;
  std::vector<float> out(static_cast<size_t>(c.rows * out_stride), kSentinel);
  const std::vector<float> residual = test::random_floats(out.size(), c.seed + 3, -2.f, 2.f);
  if (c.residual_in_place)
    for (int m = 0; m < c.rows; ++m)
      std::copy_n(residual.begin() + m * out_stride, c.present, out.begin() + m * out_stride);
  std::vector<const float*> pixels;
  for (int m = 0; m < c.rows; ++m) pixels.push_back(input.data() + m * pixel_step);

  cpu::TileArgs a;
  a.pixels = pixels.data();
  a.segments = 1;
  a.seg_len = c.k;
  a.seg_stride = c.k * step;
  a.w_row_stride = cpu::kPanel;
  a.w_seg_stride = c.k * cpu::kPanel;
  a.out_stride = out_stride;
  a.clip = cpu::activation_clamp(c.act);
  a.skip_first = c.skip_first;
  a.skip_last = c.skip_last;
  const int b_index = c.b == 1 ? 0 : c.b == 2 ? 1 : 2;
  const int block = uk.max_vecs * uk.lanes;
  // As compute_set_tile: a panel whose groups all lie in its first set takes the one-vector
  // tiles where the ISA has them (AVX-512).
  const cpu::TileFn one_set = block >= 32 && c.present <= 16 ? uk.sets_one_vector[b_index][c.rows] : nullptr;
  const cpu::TileFn fn = one_set != nullptr ? one_set : uk.sets[b_index][c.rows];
  for (int col = 0; col < 32; col += block) {  // as compute_set_tile
    const int set = col / 16;
    const bool whole = block >= 32 || c.b == 1;
    const int64_t first = whole ? col : set * 16;
    const int64_t cols = std::min<int64_t>(whole ? block : 16, c.present - first);
    if (cols <= 0) continue;
    a.cols = static_cast<int>(cols);
    a.set_lane0 = whole ? 0 : col % 16;
    a.pixel_offset = block >= 32 ? 0 : set * c.b;
    a.weights = weights.data() + col;
    a.bias = lane_bias.data() + col;
    a.out = out.data() + first;
    a.residual = !c.residual ? nullptr : c.residual_in_place ? out.data() + first : residual.data() + first;
    fn(a);
  }

  const int64_t cog = 16 / c.b;
  for (int m = 0; m < c.rows; ++m) {
    INFO("pixel ", m);
    std::vector<double> want(static_cast<size_t>(c.present)), abs_sum(want.size());
    for (int64_t ch = 0; ch < c.present; ++ch) {
      const int64_t set = ch / 16, h = ch % 16 / cog, o = ch % 16 % cog, lane = set * 16 + o * c.b + h;
      double sum = c.bias ? bias[static_cast<size_t>(ch)] : 0.0, abs = std::abs(sum);
      for (int64_t l = 0; l < c.k; ++l) {
        if (m == 0 && l < c.skip_first) continue;
        if (m == c.rows - 1 && l >= c.k - c.skip_last) continue;
        const double xw = static_cast<double>(input[static_cast<size_t>(m * pixel_step + l * step + set * c.b + h)]) *
                          weights[static_cast<size_t>(l * 32 + lane)];
        sum += xw;
        abs += std::abs(xw);
      }
      if (c.residual) {
        const double r = residual[static_cast<size_t>(m * out_stride + ch)];
        sum += r;
        abs += std::abs(r);
      }
      want[static_cast<size_t>(ch)] = ref::activate(sum, c.act);
      abs_sum[static_cast<size_t>(ch)] = abs;
    }
    test::check_close(out.data() + m * out_stride, want, abs_sum, c.k + 2, "set tile vs float64");
    for (int64_t j = c.present; j < out_stride; ++j) {
      INFO("column ", j);
      CHECK(out[static_cast<size_t>(m * out_stride + j)] == kSentinel);
    }
  }
  if (c.residual && !c.residual_in_place) CHECK(residual == test::random_floats(out.size(), c.seed + 3, -2.f, 2.f));
}

TEST_CASE("group-set tiles: every MR and B of every runnable ISA") {
  constexpr Activation kActs[] = {Activation::kNone, Activation::kRelu, Activation::kRelu6};
  uint32_t seed = 4000;
  for (cpu::Isa isa : test::runnable_isas()) {
    const cpu::TileKernels& uk = cpu::tile_kernels(isa);
    // One-vector set tiles exactly where a vector is a whole set.
    CHECK((uk.lanes == 16) == (uk.sets_one_vector[1][uk.max_rows] != nullptr));
    for (int64_t b : {1, 2, 4})
      for (int rows = 1; rows <= uk.max_rows; ++rows) {
        const int64_t cog = 16 / b;
        SetTileCase c;
        c.b = b;
        c.rows = rows;
        c.act = kActs[(rows + b) % 3];
        // A whole panel, K of 3 taps of 3 steps with the left/right taps skipped.
        c.k = 9;
        c.skip_first = 3;
        c.skip_last = rows % 2 == 0 ? 3 : 0;
        c.seed = seed += 5;
        check_set_tile(uk, c);
        // A last panel with one group (into the first set) and one with one group fewer than
        // full (the second set partial), with residuals; no bias.
        SetTileCase last = c;
        last.skip_first = last.skip_last = 0;
        last.k = 13;
        last.present = cog;
        last.bias = false;
        last.residual = true;
        last.seed = seed += 5;
        check_set_tile(uk, last);
        last.present = 32 - cog;
        last.residual_in_place = true;
        last.bias = true;
        last.act = kActs[(rows + b + 1) % 3];
        last.seed = seed += 5;
        check_set_tile(uk, last);
        // The first set whole, the second absent (RegNet-Y's 6 groups of 8: the last panel), with
        // the first and last pixels' skipped taps.
        SetTileCase first_set = c;
        first_set.present = 16;
        first_set.residual = true;
        first_set.seed = seed += 5;
        check_set_tile(uk, first_set);
        // No K step at all (a window entirely in the padding): the bias alone.
        SetTileCase empty = c;
        empty.k = 0;
        empty.skip_first = empty.skip_last = 0;
        empty.seed = seed += 5;
        check_set_tile(uk, empty);
      }
  }
}

}  // namespace
}  // namespace winfer
