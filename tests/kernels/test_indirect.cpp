// indirect: its micro-kernel entry (every tile shape of every ISA the CPU runs, reading through
// per-tap pointers) against a float64 dot product, the algorithm against the float64 reference
// and `direct` on edge shapes under every ISA and 1-3 threads, the indirection buffer's
// contents, its workspace contract (exact size, every pointer written, nothing past it), and
// no stale pointer when the same layer runs on inputs at different addresses.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_indirect.h"
#include "kernels/cpu/ukernel_conv.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::ConvCase;
using test::ConvData;
using test::GuardedBuffer;
using test::kNone;
using test::kRelu;
using test::kRelu6;

const ConvAlgorithm& indirect() { return cpu::indirect_conv_algorithm(); }

// ---- micro-kernel entry ---------------------------------------------------------------------

struct IndirectTile {
  int rows, vecs, cols, col0;
  int64_t taps, seg_len, pixels_stride, offset;
  bool bias;
  Activation act;
};

// One indirect kernel call on random data: `taps` pointer groups `pixels_stride` apart, every
// third pointer at a zero vector, each offset by `offset` floats; outputs checked against a
// float64 sum, the columns past `cols` unchanged.
void check_indirect_tile(const cpu::TileKernels& uk, const IndirectTile& s, uint32_t seed) {
  INFO("isa ", uk.isa, " tile ", s.rows, "x", s.vecs, " cols ", s.cols, " col0 ", s.col0, " taps ", s.taps, "x",
       s.seg_len, " stride ", s.pixels_stride, " offset ", s.offset, s.bias ? " bias" : " nobias", " act ",
       activation_name(s.act));
  const int64_t pixel_floats = s.offset + s.seg_len;
  const int64_t sources = 9;  // distinct input pixels the pointers pick from
  const std::vector<float> input = test::random_floats(static_cast<size_t>(sources * pixel_floats), seed);
  const std::vector<float> zero(static_cast<size_t>(pixel_floats), 0.f);
  const std::vector<float> weights = test::random_floats(static_cast<size_t>(s.taps * s.seg_len * cpu::kPanel), seed + 1);
  const std::vector<float> bias = test::random_floats(cpu::kPanel, seed + 2);
  std::vector<const float*> slots(static_cast<size_t>(s.taps * s.pixels_stride), nullptr);
  for (int64_t t = 0; t < s.taps; ++t)
    for (int m = 0; m < s.rows; ++m) {
      const int64_t k = t * s.pixels_stride + m;
      slots[static_cast<size_t>(k)] = k % 3 == 2 ? zero.data() : input.data() + (k * 5 % sources) * pixel_floats;
    }
  constexpr int64_t kOutStride = cpu::kPanel + 5;
  constexpr float kSentinel = 777.25f;
  std::vector<float> out(static_cast<size_t>(s.rows * kOutStride), kSentinel);

  cpu::TileArgs a;
  a.pixels = slots.data();
  a.segments = s.taps;
  a.seg_len = s.seg_len;
  a.seg_stride = 0;
  a.w_seg_stride = s.seg_len * cpu::kPanel;
  a.weights = weights.data() + s.col0;
  a.bias = s.bias ? bias.data() + s.col0 : nullptr;
  a.out = out.data();
  a.out_stride = kOutStride;
  a.cols = s.cols;
  a.clip = cpu::activation_clamp(s.act);
  a.pixels_stride = s.pixels_stride;
  a.pixel_offset = s.offset;
  REQUIRE(static_cast<bool>(uk.indirect[s.rows][s.vecs]));
  uk.indirect[s.rows][s.vecs](a);

  std::vector<double> want(static_cast<size_t>(s.cols)), abs_sum(want.size());
  for (int m = 0; m < s.rows; ++m) {
    for (int j = 0; j < s.cols; ++j) {
      double sum = s.bias ? bias[static_cast<size_t>(s.col0 + j)] : 0.0, abs = std::abs(sum);
      for (int64_t t = 0; t < s.taps; ++t)
        for (int64_t l = 0; l < s.seg_len; ++l) {
          const double x = slots[static_cast<size_t>(t * s.pixels_stride + m)][s.offset + l];
          const double w = weights[static_cast<size_t>((t * s.seg_len + l) * cpu::kPanel + s.col0 + j)];
          sum += x * w;
          abs += std::abs(x * w);
        }
      want[static_cast<size_t>(j)] = ref::activate(sum, s.act);
      abs_sum[static_cast<size_t>(j)] = abs;
    }
    INFO("pixel ", m);
    test::check_close(out.data() + m * kOutStride, want, abs_sum, s.taps * s.seg_len + 1, "indirect tile vs float64");
    for (int64_t j = s.cols; j < kOutStride; ++j) {
      INFO("column ", j);
      CHECK(out[static_cast<size_t>(m * kOutStride + j)] == kSentinel);
    }
  }
}

TEST_CASE("indirect micro-kernels: every tile shape of every runnable ISA") {
  uint32_t seed = 9000;
  for (cpu::Isa isa : test::runnable_isas()) {
    const cpu::TileKernels& uk = cpu::tile_kernels(isa);
    REQUIRE(uk.max_rows <= cpu::kIndirectTile);
    for (int rows = 1; rows <= uk.max_rows; ++rows)
      for (int vecs = 1; vecs <= uk.max_vecs; ++vecs) {
        const int width = vecs * uk.lanes;
        for (int cols : {width, (vecs - 1) * uk.lanes + 1, width - 1}) {
          if (cols < 1) continue;
          const bool odd = (rows + vecs + cols) % 2 == 1;
          // 9 taps of 7 channels in a 14-wide buffer, offset by a group's channels; one tap of
          // 37 channels with the pointers packed tightly; zero taps (bias alone).
          check_indirect_tile(uk, {rows, vecs, cols, 0, 9, 7, cpu::kIndirectTile, odd ? 3 : 0, odd, odd ? kRelu : kNone},
                              seed += 3);
          check_indirect_tile(uk, {rows, vecs, cols, cpu::kPanel - width, 1, 37, rows, 0, !odd, odd ? kNone : kRelu6},
                              seed += 3);
          if (cols == width) check_indirect_tile(uk, {rows, vecs, cols, 0, 0, 5, rows, 0, true, kRelu}, seed += 3);
        }
      }
  }
}

// ---- the algorithm --------------------------------------------------------------------------

// The im2win edge shapes: every padding and stride combination, asymmetric padding, dilation
// along H, W and both, groups 2/3/4, 1x1 (also strided, grouped, padded), 1xK, Co not a multiple
// of the panel nor of any vector width, outputs smaller than a tile and not multiples of it,
// batch 3, C = 1 and 3, 7x7/2 and 11x11/4 stems, windows entirely in the padding, deep K,
// weights past the L2 budget (panel-major order), and a depthwise layer (correct, if slow).
std::vector<ConvCase> indirect_cases() {
  return {
      {Conv(1, 3, 11, 13, 8).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 1, 9, 17, 3).k(3, 3).p, false, kNone},
      {Conv(1, 5, 10, 9, 17).k(3, 3).pad(0, 2, 1, 0).p, true, kRelu6},
      {Conv(1, 4, 13, 15, 1).k(3, 3).s(2, 2).pad(1).p, true, kNone},
      {Conv(1, 6, 12, 14, 33).k(3, 3).pad(2).d(2, 2).p, true, kRelu},
      {Conv(1, 6, 12, 10, 16).k(3, 3).pad(2, 1, 2, 1).d(2, 1).p, false, kNone},
      {Conv(1, 8, 11, 13, 10).k(3, 2).s(1, 2).pad(1, 1, 1, 0).d(1, 2).g(2).p, true, kRelu},
      {Conv(1, 8, 9, 11, 34).k(3, 3).pad(1).g(2).p, true, kRelu},
      {Conv(2, 16, 7, 8, 12).k(3, 3).s(2, 1).pad(1).g(4).p, false, kRelu6},
      {Conv(3, 40, 5, 7, 33).k(1, 1).p, true, kRelu},
      {Conv(1, 16, 9, 9, 17).k(1, 1).s(2, 2).p, false, kNone},
      {Conv(1, 12, 6, 5, 6).k(1, 1).g(3).p, true, kRelu6},
      {Conv(1, 12, 5, 20, 8).k(1, 3).d(1, 2).g(4).p, true, kNone},
      {Conv(1, 6, 5, 7, 3).k(1, 1).pad(1, 0, 0, 1).p, true, kNone},
      {Conv(1, 3, 29, 31, 64).k(7, 7).s(2, 2).pad(3).p, true, kRelu},
      {Conv(1, 3, 47, 43, 20).k(11, 11).s(4, 4).pad(2).p, false, kNone},
      {Conv(3, 9, 8, 6, 35).k(3, 3).pad(1).p, true, kNone},
      {Conv(1, 16, 6, 5, 48).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 8, 3, 29, 64).k(3, 3).pad(1).p, true, kNone},
      {Conv(1, 2, 2, 2, 5).k(3, 3).pad(3).p, true, kRelu6},  // all-padding windows
      {Conv(1, 256, 4, 4, 40).k(3, 3).pad(1).p, true, kNone},
      {Conv(1, 256, 9, 20, 161).k(3, 3).pad(1).p, false, kRelu6},  // 1.5 MB of weights
      {Conv(2, 224, 5, 6, 200).k(3, 3).pad(1).p, true, kRelu},      // 1.6 MB: panel by panel, next one prefetched
      {Conv(1, 8, 7, 9, 8).k(3, 3).pad(1).g(8).p, true, kRelu},      // depthwise
  };
}

TEST_CASE("indirect matches the reference and direct on edge shapes: every ISA, threads 1-3") {
  test::check_on_edge_cases(indirect(), indirect_cases(), 4000);
}

TEST_CASE("indirection buffer: taps, padding at the zero vector, the last tile clamped") {
  // 5x5 input, 3x3/2, padding 1,0,3,3 (asymmetric), dilation 1x2: a 4x2 output = 8 pixels,
  // one tile of 8 with slots 8-13 repeating pixel 7; batch 2.
  const ConvParams p = Conv(2, 3, 5, 5, 4).k(3, 3).s(2, 2).pad(1, 0, 3, 3).d(1, 2).p;
  REQUIRE(p.out_h() == 4);
  REQUIRE(p.out_w() == 2);
  const cpu::IndirectionLayout layout(p);
  CHECK(layout.tiles == 1);
  CHECK(layout.pointers == 2 * 9 * cpu::kIndirectTile);
  std::vector<float> input(static_cast<size_t>(2 * 5 * 5 * 3));
  GuardedBuffer ws(static_cast<size_t>(layout.workspace_bytes(p)));
  cpu::build_indirection(p, layout, input.data(), ws.data_bytes(), 0, 2);
  CHECK(ws.canary_intact());
  const float* const* slots = reinterpret_cast<const float* const*>(ws.data_bytes());
  const float* zero = cpu::zero_vector(layout, ws.data_bytes());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t m = 0; m < cpu::kIndirectTile; ++m) {
      const int64_t px = std::min<int64_t>(m, 7), oy = px / 2, ox = px % 2;
      for (int64_t ky = 0; ky < 3; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx) {
          const int64_t iy = oy * 2 - 1 + ky, ix = ox * 2 + kx * 2;
          const float* want = iy >= 0 && iy < 5 && ix < 5 ? input.data() + ((n * 5 + iy) * 5 + ix) * 3 : zero;
          INFO("n ", n, " slot ", m, " tap ", ky, ",", kx);
          CHECK(slots[(n * 9 + kx * 3 + ky) * cpu::kIndirectTile + m] == want);
        }
    }
}

TEST_CASE("indirect workspace_bytes is exactly the pointers and the zero vector") {
  // 3x3 64->64 56x56: 3136 pixels = 224 tiles of 14, 9 taps: 28224 pointers + 64 floats.
  CHECK(indirect().workspace_bytes(Conv(1, 64, 56, 56, 64).k(3, 3).pad(1).p) == 224u * 9 * 14 * 8 + 64 * 4);
  // 7x7 output = 49 pixels -> 4 tiles (of 12-13), 14 slots each.
  CHECK(indirect().workspace_bytes(Conv(1, 512, 7, 7, 512).k(3, 3).pad(1).p) == 4u * 9 * 14 * 8 + 512 * 4);
  uint32_t seed = 6000;
  for (const ConvCase& c : indirect_cases()) {
    const ConvParams& p = c.p;
    INFO(test::describe(c));
    const int64_t tiles = (p.out_h() * p.out_w() + 13) / 14;
    const size_t bytes = indirect().workspace_bytes(p);
    CHECK(bytes == static_cast<size_t>(p.batch * tiles * p.kernel_h * p.kernel_w * 14 * 8 + p.in_channels * 4));
    const ConvData d = test::make_data(p, seed += 10);
    GuardedBuffer packed(indirect().packed_weight_bytes(p));
    indirect().pack_weights(p, d.weight.data(), packed.floats());
    for (int threads : {1, 3}) {
      INFO("threads ", threads);
      // Every byte written (the size is not over-reported: every pointer slot and every float
      // of the zero vector, which must read as 0) and nothing past it (the canary).
      GuardedBuffer workspace(bytes);
      std::memset(workspace.data_bytes(), 0xFF, bytes);
      std::vector<float> out(static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels));
      indirect().run(p, d.input.data(), packed.floats(), d.bias.data(), out.data(), workspace.data_bytes(), c.act,
                     threads);
      CHECK(workspace.canary_intact());
      // A pointer may contain 0xFF bytes, never eight.
      size_t untouched_words = 0;
      for (size_t i = 0; i + 8 <= bytes - static_cast<size_t>(p.in_channels) * 4; i += 8) {
        uint64_t bits;
        std::memcpy(&bits, workspace.data_bytes() + i, sizeof bits);
        untouched_words += bits == ~uint64_t{0};
      }
      CHECK(untouched_words == 0);
      const float* zero = reinterpret_cast<const float*>(workspace.data_bytes() + bytes - static_cast<size_t>(p.in_channels) * 4);
      for (int64_t i = 0; i < p.in_channels; ++i) CHECK(zero[i] == 0.f);
    }
  }
}

TEST_CASE("indirect: the same layer on inputs at two addresses uses no stale pointer") {
  // One workspace and one packing reused, as a plan does, with the input moved and changed
  // between runs (and back): each output must be that input's convolution.
  for (const ConvParams& p : {Conv(1, 16, 9, 11, 20).k(3, 3).pad(1).p, Conv(2, 8, 6, 7, 12).k(3, 3).s(2, 2).pad(1, 0, 1, 2).g(2).p}) {
    INFO(p.to_string());
    ConvData a = test::make_data(p, 111), b = test::make_data(p, 222);
    b.weight = a.weight;
    b.bias = a.bias;
    REQUIRE(a.input != b.input);
    // What each input gives on a fresh workspace (checked against the reference above).
    const std::vector<float> want_a = test::run_conv(indirect(), p, a, true, kRelu, 1);
    const std::vector<float> want_b = test::run_conv(indirect(), p, b, true, kRelu, 1);
    REQUIRE(!test::bitwise_equal(want_a.data(), want_b.data(), want_a.size()));
    GuardedBuffer packed(indirect().packed_weight_bytes(p));
    indirect().pack_weights(p, a.weight.data(), packed.floats());
    GuardedBuffer workspace(indirect().workspace_bytes(p));
    const size_t out_count = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
    for (int threads : {1, 2}) {
      INFO("threads ", threads);
      for (const ConvData* in : {&a, &b, &a, &b}) {
        std::vector<float> out(out_count);
        indirect().run(p, in->input.data(), packed.floats(), a.bias.data(), out.data(), workspace.data_bytes(), kRelu,
                       threads);
        const std::vector<float>& want = in == &a ? want_a : want_b;
        CHECK(test::bitwise_equal(out.data(), want.data(), out_count));
      }
    }
    CHECK(workspace.canary_intact());
  }
}

TEST_CASE("indirect workspace is far below im2col's for 3x3 and larger kernels") {
  const ConvAlgorithm* im2col = find_conv_algorithm("im2col");
  REQUIRE(im2col != nullptr);
  // Pointers (8 bytes per tap and pixel) vs floats (4 bytes per tap, pixel and channel): C/2
  // times smaller, 1.5x for C = 3; within 2x of that with the last tile's slots and the zero
  // vector (C floats: as large as the pointers on a 7x7 output).
  const std::vector<ConvParams> layers = {
      Conv(1, 64, 56, 56, 64).k(3, 3).pad(1).p,   Conv(1, 256, 14, 14, 256).k(3, 3).pad(1).p,
      Conv(1, 512, 7, 7, 512).k(3, 3).pad(1).p,   Conv(1, 3, 224, 224, 64).k(7, 7).s(2, 2).pad(3).p,
      Conv(1, 96, 24, 24, 256).k(5, 5).p,
  };
  for (const ConvParams& p : layers) {
    INFO(p.to_string());
    const double ratio = static_cast<double>(indirect().workspace_bytes(p)) / static_cast<double>(im2col->workspace_bytes(p));
    CHECK(ratio <= 4.0 / static_cast<double>(p.in_channels));
  }
}

TEST_CASE("indirect packs its weights exactly as im2win does") {
  const ConvAlgorithm* im2win = find_conv_algorithm("im2win");
  REQUIRE(im2win != nullptr);
  for (const ConvParams& p : {Conv(1, 7, 6, 9, 45).k(3, 2).pad(1).p, Conv(1, 8, 6, 9, 70).k(5, 3).g(2).p}) {
    INFO(p.to_string());
    const ConvData d = test::make_data(p, 88);
    REQUIRE(indirect().packed_weight_bytes(p) == im2win->packed_weight_bytes(p));
    std::vector<float> a(indirect().packed_weight_bytes(p) / sizeof(float)), b(a.size());
    indirect().pack_weights(p, d.weight.data(), a.data());
    im2win->pack_weights(p, d.weight.data(), b.data());
    CHECK(a == b);
  }
}

TEST_CASE("indirect is registered") {
  CHECK(find_conv_algorithm("indirect") == &indirect());
}

}  // namespace
}  // namespace winfer
