// The fast im2win GEMM (kernels/cuda/im2win_gemm.cuh) in every tile shape, with vector and scalar
// loads, on shapes that divide none of the tiles (M, N and K), against the float64 reference;
// the tile heuristic, batch chunks and the fallbacks for unaligned pointers. Runs in the emulator
// (CI) and natively.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../kernels/reference.h"
#include "../kernels/test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/conv_algorithm.h"
#include "kernels/cuda/conv_internal.h"
#include "kernels/cuda/im2win_tiles.cuh"

namespace winfer {
namespace {

using test::DeviceArray;

ConvParams conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t co, int64_t k, int64_t stride = 1, int64_t pad = 0,
                int64_t dilation = 1, int64_t groups = 1) {
  ConvParams p;
  p.batch = n;
  p.in_channels = c;
  p.in_h = h;
  p.in_w = w;
  p.out_channels = co;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.dilation_h = p.dilation_w = dilation;
  p.groups = groups;
  return p;
}

// Restores the heuristic whatever happens in a test.
struct ForcedPlan {
  ForcedPlan(int tile, bool scalar, int64_t budget = -1) {
    cuda::im2win_force_tile(tile);
    cuda::im2win_force_scalar(scalar);
    cuda::im2win_set_window_budget(budget);
  }
  ~ForcedPlan() {
    cuda::im2win_force_tile(-1);
    cuda::im2win_force_scalar(false);
    cuda::im2win_set_window_budget(-1);
  }
};

struct TileCase {
  ConvParams p;
  const char* why;
};

// M = N*Ho*Wo, N = Co/g, K = Kh*Kw*Cg: none a multiple of 64 (M, N) or 8 (K) unless said.
std::vector<TileCase> tile_cases() {
  return {
      {conv(1, 8, 13, 15, 72, 3), "vector A and B; M 143, N 72, K 72 (9 steps)"},
      {conv(2, 5, 9, 10, 70, 3, 2, 1), "scalar A (K 45, not a multiple of 4) and B (N 70); stride, padding"},
      {conv(1, 16, 11, 9, 24, 3, 1, 2, 2, 2), "groups 2 (Cg 8: vector A, k not contiguous), dilation 2, N 12"},
      {conv(1, 9, 8, 7, 6, 3, 1, 1, 1, 3), "groups 3, Cg 3, N 2: scalar everything"},
      {conv(1, 12, 7, 9, 20, 1), "1x1: the window is the input, vector loads from it"},
      {conv(1, 3, 6, 5, 4, 1), "K 3: less than one step"},
      {conv(1, 4, 12, 12, 130, 3, 1, 0, 2), "dilation with vector A; N 130: three 64-wide tiles, two 128-wide"},
      {conv(1, 3, 23, 25, 10, 7, 2), "C 3 as the paper's first layers: scalar A, N 10"},
      {conv(1, 40, 5, 6, 8, 3, 1, 1), "K 360 (45 steps), M 30, N 8"},
  };
}

std::vector<float> run_im2win(const ConvParams& p, const std::vector<float>& input, const std::vector<float>& weight,
                              const std::vector<float>& bias, Activation act, int out_offset = 0, int in_offset = 0) {
  const cuda::ConvAlgorithm* algo = cuda::find_conv_algorithm("im2win");
  REQUIRE(algo != nullptr);
  std::vector<float> packed_host(algo->packed_weight_bytes(p) / sizeof(float));
  algo->pack_weights(p, weight.data(), packed_host.data());
  // NaN after the weights too: a weight row past K that is not masked turns a result into NaN
  // (the A side is zero there, and 0 * NaN shows where 0 * x would not).
  packed_host.insert(packed_host.end(), static_cast<size_t>(8 * p.out_channels), std::nanf(""));
  // NaN around the input: where the GEMM reads the input as its window (1x1), a load past K or
  // M that is not masked would turn a result into NaN (0 * NaN) instead of passing unseen.
  std::vector<float> in_host(static_cast<size_t>(in_offset), std::nanf(""));
  in_host.insert(in_host.end(), input.begin(), input.end());
  in_host.insert(in_host.end(), 16, std::nanf(""));
  DeviceArray in(in_host), packed(packed_host), b(bias);
  const size_t ws_bytes = algo->workspace_bytes(p);
  DeviceArray ws((ws_bytes + sizeof(float) - 1) / sizeof(float));
  const size_t out_count = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
  DeviceArray out(out_count + static_cast<size_t>(out_offset));
  REQUIRE_CUDA_OK(algo->run(test::ctx(), p, in.data() + in_offset, packed.data(), b.data(), out.data() + out_offset,
                            ws_bytes ? ws.data() : nullptr, act));
  std::vector<float> result = out.download();
  CHECK_MESSAGE(ws.canary_intact(), "im2win wrote past its workspace");
  CHECK_MESSAGE(out.canary_intact(), "im2win wrote past the output");
  return std::vector<float>(result.begin() + out_offset, result.end());
}

void check_case(const ConvParams& p, uint32_t seed, Activation act, int out_offset = 0, int in_offset = 0) {
  REQUIRE(p.is_valid());
  const auto input = test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels), seed);
  const auto weight = test::random_floats(
      static_cast<size_t>(p.out_channels * p.in_channels_per_group() * p.kernel_h * p.kernel_w), seed + 1);
  const auto bias = test::random_floats(static_cast<size_t>(p.out_channels), seed + 2);
  const ref::Result want = ref::conv2d(p, input, weight, bias.data(), act);
  const std::vector<float> got = run_im2win(p, input, weight, bias, act, out_offset, in_offset);
  test::check_close(got.data(), want.value, want.abs_sum, want.terms, "im2win vs reference");
}

TEST_CASE("cuda im2win GEMM: every tile shape, vector and scalar loads, shapes that divide no tile") {
  int runs = 0;
  uint32_t seed = 7000;
  for (int tile = 0; tile < cuda::kIm2winTileCount; ++tile) {
    for (bool scalar : {false, true}) {
      ForcedPlan forced(tile, scalar);
      for (const TileCase& c : tile_cases()) {
        INFO("tile ", std::string(cuda::im2win_tile_name(static_cast<cuda::Im2winTile>(tile))),
             scalar ? " scalar" : " vector", ": ", c.p.to_string(), " (", c.why, ")");
        const cuda::Im2winPlan plan = cuda::im2win_plan(c.p);
        const bool full_vector = !scalar && c.p.in_channels_per_group() % 4 == 0 &&
                                 c.p.out_channels_per_group() % 4 == 0 && c.p.groups == 1 && c.p.dilation_w == 1;
        const bool downgraded = tile == static_cast<int>(cuda::Im2winTile::k128x128) && !full_vector;
        CHECK(static_cast<int>(plan.tile) == (downgraded ? static_cast<int>(cuda::Im2winTile::k128x64) : tile));
        CHECK(plan.vector_a == (!scalar && c.p.in_channels_per_group() % 4 == 0));
        CHECK(plan.vector_b == (!scalar && c.p.out_channels_per_group() % 4 == 0));
        check_case(c.p, seed += 10, runs % 3 == 0 ? Activation::kRelu : Activation::kNone);
        ++runs;
      }
    }
  }
  MESSAGE(runs << " im2win runs: " << cuda::kIm2winTileCount << " tiles x vector/scalar x " << tile_cases().size()
               << " shapes");
}

TEST_CASE("cuda im2win falls back to scalar loads and stores on unaligned pointers") {
  ForcedPlan forced(static_cast<int>(cuda::Im2winTile::k128x64), false);
  // Output one float past an aligned address: 16-byte stores would fault on the GPU (and are
  // checked here by the results). The 1x1 case reads the window from the (unaligned) input.
  check_case(conv(1, 8, 9, 11, 16, 3), 7500, Activation::kNone, /*out_offset=*/1);
  check_case(conv(1, 12, 7, 9, 20, 1), 7510, Activation::kRelu, /*out_offset=*/3, /*in_offset=*/1);
  // 8 bytes off 16 (aligned for 8-byte accesses, not for 16-byte ones): a guard that tested 8-byte
  // alignment would pass the 4-byte offsets above and take the 16-byte paths here.
  check_case(conv(1, 12, 7, 9, 20, 1), 7520, Activation::kNone, /*out_offset=*/2, /*in_offset=*/2);
}

TEST_CASE("cuda im2win processes the batch in chunks when the window exceeds its budget") {
  const ConvParams p = conv(5, 8, 9, 8, 12, 3, 2, 1);
  const cuda::ConvAlgorithm* algo = cuda::find_conv_algorithm("im2win");
  REQUIRE(algo != nullptr);
  const int64_t per_image = cuda::im2win_window_floats(p) / p.batch * static_cast<int64_t>(sizeof(float));
  {
    ForcedPlan whole(-1, false);
    CHECK(cuda::im2win_plan(p).chunk_images == 5);
    CHECK(algo->workspace_bytes(p) == static_cast<size_t>(5 * per_image));
  }
  // A budget of two windows runs chunks of 2, 2 and 1 images; below one window, one at a time.
  for (int64_t budget : {2 * per_image, per_image, per_image / 2}) {
    ForcedPlan forced(-1, false, budget);
    const int64_t want = budget >= 2 * per_image ? 2 : 1;
    INFO("budget ", budget, " bytes, one image's window ", per_image);
    CHECK(cuda::im2win_plan(p).chunk_images == want);
    CHECK(algo->workspace_bytes(p) == static_cast<size_t>(want * per_image));
    check_case(p, 7600 + static_cast<uint32_t>(want), Activation::kRelu6);
  }
}

TEST_CASE("cuda im2win plan on the paper's twelve layers at batch 128 on an H200 (132 SMs)") {
  cuda::im2win_force_tile(-1);
  cuda::im2win_force_sm_count(132);
  struct Layer {
    int64_t c, hw, co, k, s;
    cuda::Im2winTile tile;
    int64_t chunks;
  };
  using T = cuda::Im2winTile;
  // docs/PERFORMANCE_CUDA.md's table: the tile and the number of batch chunks of each layer.
  const Layer layers[] = {
      {3, 227, 96, 11, 4, T::k128x64, 1},   {3, 231, 96, 11, 4, T::k128x64, 1},   {3, 227, 64, 7, 2, T::k128x64, 2},
      {64, 224, 64, 7, 2, T::k128x64, 11},  {96, 24, 256, 5, 1, T::k128x128, 1},  {256, 12, 512, 3, 1, T::k128x128, 1},
      {3, 224, 64, 3, 1, T::k128x64, 1},    {64, 112, 128, 3, 1, T::k128x128, 5}, {64, 56, 64, 3, 1, T::k128x64, 2},
      {128, 28, 128, 3, 1, T::k128x128, 1}, {256, 14, 256, 3, 1, T::k64x64, 1},   {512, 7, 512, 3, 1, T::k128x64, 1}};
  const cuda::ConvAlgorithm* algo = cuda::find_conv_algorithm("im2win");
  REQUIRE(algo != nullptr);
  int index = 0;
  for (const Layer& l : layers) {
    const ConvParams p = conv(128, l.c, l.hw, l.hw, l.co, l.k, l.s);
    INFO("conv", ++index, ": ", p.to_string());
    const cuda::Im2winPlan plan = cuda::im2win_plan(p);
    CHECK(cuda::im2win_tile_name(plan.tile) == std::string(cuda::im2win_tile_name(l.tile)));
    CHECK((128 + plan.chunk_images - 1) / plan.chunk_images == l.chunks);
    CHECK(plan.vector_a == (l.c % 4 == 0));
    CHECK(plan.vector_b);
    // The workspace is one chunk's window: at most 0.5x im2col's (N*Ho*Wo*Kh*Kw*C floats).
    const double im2col_bytes = 128.0 * p.out_h() * p.out_w() * l.k * l.k * l.c * sizeof(float);
    CHECK(static_cast<double>(algo->workspace_bytes(p)) <= 0.5 * im2col_bytes);
  }
  cuda::im2win_force_sm_count(0);
}

}  // namespace
}  // namespace winfer
