// indirect: its micro-kernel entry (every tile shape of every ISA the CPU runs, reading through
// per-tap pointers, conv_tile_tester.h) against a float64 dot product, the algorithm against
// the float64 reference and `direct` on edge shapes under every ISA and 1-3 threads, the
// indirection buffer's contents, its workspace contract (exact size, every pointer written,
// nothing past it), and no stale pointer when the same layer runs on inputs at different
// addresses.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "conv_tile_tester.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_indirect.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::ConvCase;
using test::ConvData;
using test::GuardedBuffer;
using test::kRelu;

const ConvAlgorithm& indirect() { return cpu::indirect_conv_algorithm(); }

// ---- micro-kernel entry ---------------------------------------------------------------------

TEST_CASE("indirect micro-kernels: every tile shape of every runnable ISA") {
  test::check_every_tile_shape(/*indirect=*/true, 9000);
}

// ---- the algorithm --------------------------------------------------------------------------

TEST_CASE("indirect matches the reference and direct on edge shapes: every ISA, threads 1-3") {
  test::check_on_edge_cases(indirect(), test::tile_algorithm_cases(), 4000);
}

TEST_CASE("indirect: the same bits whatever L2 size the blockings assume") {
  test::check_same_bits_for_l2_sizes(indirect(), test::tile_algorithm_cases(), 3700);
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
  for (const ConvCase& c : test::tile_algorithm_cases()) {
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
      GuardedBuffer workspace = test::run_on_marked_workspace(indirect(), c, d, packed.floats(), threads);
      CHECK(test::unwritten_words<uint64_t>(workspace.data_bytes(), bytes - static_cast<size_t>(p.in_channels) * 4) ==
            0);
      const float* zero =
          reinterpret_cast<const float*>(workspace.data_bytes() + bytes - static_cast<size_t>(p.in_channels) * 4);
      for (int64_t i = 0; i < p.in_channels; ++i) CHECK(zero[i] == 0.f);
    }
  }
}

TEST_CASE("indirect: the same layer on inputs at two addresses uses no stale pointer") {
  // One workspace and one packing reused, as a plan does, with the input moved and changed
  // between runs (and back): each output must be that input's convolution.
  for (const ConvParams& p :
       {Conv(1, 16, 9, 11, 20).k(3, 3).pad(1).p, Conv(2, 8, 6, 7, 12).k(3, 3).s(2, 2).pad(1, 0, 1, 2).g(2).p}) {
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
      Conv(1, 64, 56, 56, 64).k(3, 3).pad(1).p, Conv(1, 256, 14, 14, 256).k(3, 3).pad(1).p,
      Conv(1, 512, 7, 7, 512).k(3, 3).pad(1).p, Conv(1, 3, 224, 224, 64).k(7, 7).s(2, 2).pad(3).p,
      Conv(1, 96, 24, 24, 256).k(5, 5).p,
  };
  for (const ConvParams& p : layers) {
    INFO(p.to_string());
    const double ratio =
        static_cast<double>(indirect().workspace_bytes(p)) / static_cast<double>(im2col->workspace_bytes(p));
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

TEST_CASE("indirect is registered") { CHECK(find_conv_algorithm("indirect") == &indirect()); }

}  // namespace
}  // namespace winfer
