// Convolution + max pooling computed band by band (kernels/cpu/conv_pool.h) against the float64
// reference and against the same algorithm's whole convolution pooled afterwards (bitwise: the
// bands compute every convolution row once, with the same taps; im2col within tolerance, its
// BLAS blocks products of fewer rows differently), for bands of one pooled row
// (the most shared rows), a few rows, and the whole image. Winograd: against the reference
// (a band's tiles start at its first row), and its bands' sizes (ConvAlgorithm::band_rows).
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_bands.h"
#include "kernels/cpu/conv_pool.h"
#include "kernels/cpu/conv_winograd.h"
#include "kernels/cpu/ukernel_conv.h"
#include "kernels/cpu/pooling.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;

struct PoolShape {
  int64_t k, s, pad, d;
  bool ceil_mode;
};

struct ConvPoolCase {
  ConvParams conv;
  PoolShape pool;
  Activation act;
};

PoolParams pool_params(const ConvParams& c, const PoolShape& s) {
  return ref::pool_params(c.batch, c.out_channels, c.out_h(), c.out_w(), s.k, s.s, s.pad, s.d, s.ceil_mode);
}

std::vector<ConvPoolCase> cases() {
  const Activation relu = Activation::kRelu, none = Activation::kNone;
  return {
      {Conv(2, 5, 9, 11, 16).k(3, 3).pad(1).p, {2, 2, 0, 1, false}, relu},           // VGG, odd sizes, batch 2
      {Conv(1, 3, 17, 15, 40).k(7, 7).s(2, 2).pad(3).p, {3, 2, 1, 1, false}, relu},  // ResNet stem
      {Conv(1, 6, 12, 10, 8).k(3, 3).pad(1).p, {3, 2, 1, 1, true}, none},            // ceil mode
      {Conv(2, 4, 11, 9, 7).k(3, 3).pad(1).p, {3, 1, 2, 2, false}, relu},            // dilated pool: many shared rows
      {Conv(1, 8, 13, 12, 33).k(3, 2).s(2, 1).d(2, 1).pad(2, 1, 0, 2).p, {2, 1, 0, 1, false}, none},
      {Conv(1, 24, 10, 10, 24).k(1, 1).p, {3, 2, 1, 1, false}, relu},          // 1x1
      {Conv(1, 8, 9, 9, 12).k(3, 3).g(2).pad(1).p, {2, 2, 0, 1, true}, relu},  // groups, ceil
      {Conv(3, 6, 8, 8, 16).k(1, 1).p, {2, 2, 0, 1, false}, relu},             // batch 3: bands of whole images
      // GoogLeNet's stem and conv3 at 64x64, batch 3 (ceil mode): bands of whole images, one
      // lane per image on 2 threads, each image's rows cut in two ranges.
      {Conv(3, 3, 64, 64, 64).k(7, 7).s(2, 2).pad(3).p, {3, 2, 0, 1, true}, relu},
      {Conv(3, 64, 16, 16, 192).k(3, 3).pad(1).p, {3, 2, 0, 1, true}, relu},
  };
}

// The whole convolution, then the pooling.
std::vector<float> conv_then_pool(const ConvAlgorithm& a, const ConvPoolCase& c, const test::ConvData& d,
                                  const PoolParams& pool) {
  const std::vector<float> conv = test::run_conv(a, c.conv, d, true, c.act, 1);
  std::vector<float> out(static_cast<size_t>(pool.batch * pool.out_h * pool.out_w * pool.channels));
  maxpool2d_nhwc(pool, conv.data(), out.data(), 1);
  return out;
}

std::vector<float> banded(const ConvAlgorithm& a, const ConvPoolCase& c, const test::ConvData& d,
                          const PoolParams& pool, int64_t band_bytes, int threads, int sized_threads) {
  const ConvPool fused(a, c.conv, pool, BandSizing{sized_threads, band_bytes});
  std::vector<float> packed(a.packed_weight_bytes(c.conv) / sizeof(float));
  a.pack_weights(c.conv, d.weight.data(), packed.data());
  test::GuardedBuffer workspace(fused.workspace_bytes());
  const size_t count = static_cast<size_t>(pool.batch * pool.out_h * pool.out_w * pool.channels);
  test::GuardedBuffer out(count * sizeof(float));
  fused.run(d.input.data(), packed.data(), d.bias.data(), out.floats(), workspace.data_bytes(), c.act, threads);
  CHECK_MESSAGE(workspace.canary_intact(), a.name(), " + maxpool wrote past its workspace");
  CHECK_MESSAGE(out.canary_intact(), a.name(), " + maxpool wrote past the output");
  return std::vector<float>(out.floats(), out.floats() + count);
}

TEST_CASE("conv + maxpool in bands: equal to the whole convolution pooled, and to the float64 reference") {
  uint32_t seed = 500;
  for (const ConvPoolCase& c : cases()) {
    const PoolParams pool = pool_params(c.conv, c.pool);
    INFO(c.conv.to_string(), " pool k", c.pool.k, " s", c.pool.s, " p", c.pool.pad, " d", c.pool.d,
         std::string(c.pool.ceil_mode ? " ceil" : ""), " -> ", pool.out_h, "x", pool.out_w);
    const test::ConvData d = test::make_data(c.conv, seed += 3);
    const ref::Result conv = ref::conv2d(c.conv, d.input, d.weight, d.bias.data(), c.act);
    const std::vector<float> conv_f(conv.value.begin(), conv.value.end());
    const std::vector<double> want = ref::maxpool2d(pool, conv_f);
    const std::vector<double> window_abs_sum =
        ref::maxpool2d(pool, std::vector<float>(conv.abs_sum.begin(), conv.abs_sum.end()));
    const int64_t row_bytes = c.conv.out_w() * c.conv.out_channels * 4;
    for (const char* name : {"im2win", "indirect", "im2col", "direct"}) {
      const ConvAlgorithm* a = find_conv_algorithm(name);
      REQUIRE(a != nullptr);
      INFO(std::string(name));
      const std::vector<float> whole = conv_then_pool(*a, c, d, pool);
      // The max of values each within the convolution's tolerance is within the largest of
      // their tolerances: bound each output by the window's largest sum of |terms|.
      test::check_close(whole.data(), want, window_abs_sum, conv.terms, "conv then pool vs reference");
      for (int64_t band_bytes : {int64_t{1}, 3 * row_bytes * c.pool.s, int64_t{1} << 30}) {
        INFO("band bytes ", band_bytes);
        // Sized for the threads that run it (2: lanes), and sized for 1 but run on 2 (no lanes in
        // the workspace: each band split between the threads).
        for (const std::pair<int, int>& run : {std::pair{1, 1}, std::pair{2, 2}, std::pair{2, 1}}) {
          const int threads = run.first, sized = run.second;
          INFO("threads ", threads, ", sized for ", sized);
          const std::vector<float> got = banded(*a, c, d, pool, band_bytes, threads, sized);
          // im2col's GEMM (OpenBLAS) may block a product of fewer rows differently: close, not
          // bitwise. The others compute each output with the same loop whatever the rows.
          if (std::string(name) == "im2col")
            test::check_close(got.data(), want, window_abs_sum, conv.terms, "banded im2col vs reference");
          else
            CHECK(test::bitwise_equal(got.data(), whole.data(), got.size()));
        }
      }
    }
  }
}

// VGG's shapes for winograd under a 2x2 pooling: U in L2 (64 -> 40) and U streamed from memory
// (112 -> 112: 1.8 MB of transformed weights), 64 rows so that the streamed layer takes two bands.
std::vector<ConvPoolCase> winograd_cases() {
  return {
      {Conv(2, 64, 18, 14, 40).k(3, 3).pad(1).p, {2, 2, 0, 1, false}, Activation::kRelu},
      {Conv(1, 112, 64, 28, 112).k(3, 3).pad(1).p, {2, 2, 0, 1, false}, Activation::kRelu},
  };
}

TEST_CASE("conv + maxpool in bands, winograd: bands of whole tile rows, a block of tiles where U streams") {
  const ConvAlgorithm& winograd = *find_conv_algorithm("winograd");
  for (const ConvPoolCase& c : winograd_cases()) {
    INFO(c.conv.to_string());
    REQUIRE(winograd.supports(c.conv));
    const int tile = cpu::winograd_tile(c.conv);
    const ConvAlgorithm::BandRows want = winograd.band_rows(c.conv);
    CHECK(want.multiple == tile);
    // Where U streams, a band's tiles fill a block of micro-kernel calls (4 x its rows) or the image.
    const bool streams = winograd.packed_weight_bytes(c.conv) > size_t{3} << 19;
    const int64_t tiles_per_row = (c.conv.out_w() + tile - 1) / tile;
    const int64_t block_rows = (4 * cpu::tile_kernels(cpu::cpu_isa()).max_rows + tiles_per_row - 1) / tiles_per_row;
    CHECK(want.min_rows == (streams ? std::min(c.conv.out_h(), block_rows * tile) : tile));
    const RowWindow pool{c.pool.k, c.pool.s, c.pool.pad, c.pool.d, pool_params(c.conv, c.pool).out_h};
    for (int64_t band_bytes : {int64_t{1}, int64_t{1} << 20}) {
      INFO("band bytes ", band_bytes);
      const ConvBands bands(winograd, c.conv, pool, BandSizing{2, band_bytes});
      auto check_band = [&](const ConvBands::Band& b) {
        INFO("band of pooled rows ", b.o0, "..", b.o1, ": convolution rows ", b.kept, "..", b.r1);
        CHECK(b.kept % tile == 0);  // its tiles start on the whole layer's tile grid
        if (b.r1 < c.conv.out_h()) CHECK(b.r1 - b.kept >= want.min_rows);  // only the image's last may be short
      };
      bands.for_each_band(check_band);
      bands.for_each_lane_band(check_band);
    }
  }
}

TEST_CASE("conv + maxpool in bands, winograd: within the transforms' tolerance of the float64 reference") {
  const ConvAlgorithm& winograd = *find_conv_algorithm("winograd");
  uint32_t seed = 800;
  for (const ConvPoolCase& c : winograd_cases()) {
    const PoolParams pool = pool_params(c.conv, c.pool);
    INFO(c.conv.to_string());
    const test::ConvData d = test::make_data(c.conv, seed += 3);
    const ref::Result conv = ref::conv2d(c.conv, d.input, d.weight, d.bias.data(), c.act);
    const std::vector<double> want = ref::maxpool2d(pool, std::vector<float>(conv.value.begin(), conv.value.end()));
    std::vector<double> abs_sum = ref::maxpool2d(pool, std::vector<float>(conv.abs_sum.begin(), conv.abs_sum.end()));
    for (double& v : abs_sum) v *= 32.0;  // F(4x4)'s transforms (winograd_test.cpp)
    for (int64_t band_bytes : {int64_t{1}, int64_t{1} << 20, int64_t{1} << 30}) {
      INFO("band bytes ", band_bytes);
      for (int threads : {1, 2}) {
        INFO("threads ", threads);
        const std::vector<float> got = banded(winograd, c, d, pool, band_bytes, threads, threads);
        test::check_close(got.data(), want, abs_sum, conv.terms, "banded winograd vs reference");
      }
    }
  }
}

}  // namespace
}  // namespace winfer
