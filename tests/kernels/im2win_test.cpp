// im2win: its micro-kernels (every tile shape of every ISA the CPU runs, conv_tile_tester.h)
// against a float64 dot product, the algorithm against the float64 reference and `direct` on
// edge shapes under every ISA and 1-3 threads, and its workspace contract (exact size, every
// float used, at most half of im2col's for kernels of 3x3 and larger).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "conv_tile_tester.h"
#include "kernels/cpu/conv_algorithm.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::ConvCase;
using test::ConvData;
using test::GuardedBuffer;

const ConvAlgorithm& im2win() {
  const ConvAlgorithm* a = find_conv_algorithm("im2win");
  REQUIRE(a != nullptr);
  return *a;
}

// ---- micro-kernels ----------------------------------------------------------------------------

TEST_CASE("im2win micro-kernels: every tile shape of every runnable ISA") {
  test::check_every_tile_shape(/*indirect=*/false, 7000);
}

// ---- the algorithm --------------------------------------------------------------------------

TEST_CASE("im2win matches the reference and direct on edge shapes: every ISA, threads 1-3") {
  test::check_on_edge_cases(im2win(), test::tile_algorithm_cases(), 3000);
}

TEST_CASE("im2win: the same bits whatever L2 size the blockings assume") {
  test::check_same_bits_for_l2_sizes(im2win(), test::tile_algorithm_cases(), 3500);
}

TEST_CASE("im2win packed weights do not depend on the ISA") {
  // A session packs once; the kernels of every ISA must read the same layout.
  const ConvParams p = Conv(1, 7, 6, 9, 45).k(3, 3).pad(1).p;
  const ConvData d = test::make_data(p, 77);
  std::vector<std::vector<float>> packs;
  for (cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    std::vector<float> packed(im2win().packed_weight_bytes(p) / sizeof(float));
    im2win().pack_weights(p, d.weight.data(), packed.data());
    packs.push_back(packed);
  }
  for (const auto& pk : packs) CHECK(pk == packs.front());
}

// The window block's size, computed independently of the implementation from its documented
// rule: R = the largest row count within 128 KiB when one group's packed weights fit in 3/4
// of L2 (cpu_caches.h); otherwise within L2 (at least 2 MiB for weights beyond 2 MiB) less two
// 32-channel weight panels and 128 KiB, but at least 512 KiB; at least 4, at most Ho, evened
// out over the image.
size_t expected_workspace(const ConvParams& p) {
  // Groups of 4, 8 or 16 output channels (not depthwise) run in group sets: a window holds
  // the 32 / Cog groups of a 32-lane panel, and is never the input itself.
  const int64_t cog_in = p.out_channels_per_group();
  const bool sets = p.groups > 1 && !p.is_depthwise() && (cog_in == 4 || cog_in == 8 || cog_in == 16);
  const bool in_place = !sets && p.kernel_h == 1 && p.pad_top + p.pad_left + p.pad_bottom + p.pad_right == 0;
  if (in_place) return 0;
  // Other groups of fewer than 16 output channels run merged, G of them at a time (the largest G
  // with G * Cog <= 16 that divides the groups): their windows hold G groups' channels.
  int64_t merged = 1;
  for (int64_t g = 2; g * p.out_channels_per_group() <= 16 && g <= p.groups; ++g)
    if (p.groups % g == 0) merged = g;
  if (sets) merged = 32 / cog_in;
  const int64_t cg = merged * p.in_channels_per_group(), cog = sets ? 32 : merged * p.out_channels_per_group();
  const int64_t wp = (p.out_w() - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
  const int64_t row_bytes = wp * p.kernel_h * cg * 4;
  // A K step of a group-set window reads 32 / Cog floats (one per group): K is Kh*Kw*Cg steps.
  const int64_t k = p.kernel_h * p.kernel_w * (sets ? p.in_channels_per_group() : cg);
  const int64_t weight_bytes = cog * k * 4;
  const int64_t panel_bytes = 32 * k * 4;
  const int64_t l2 = weight_bytes > (2 << 20) ? std::max<int64_t>(2 << 20, cpu::l2_bytes()) : cpu::l2_bytes();
  const int64_t budget = weight_bytes <= cpu::l2_bytes() / 4 * 3
                             ? 128 << 10
                             : std::max<int64_t>(512 << 10, l2 - 2 * panel_bytes - (128 << 10));
  const int64_t max_rows = std::max<int64_t>(4, budget / row_bytes);
  const int64_t blocks = (p.out_h() + max_rows - 1) / max_rows;
  const int64_t rows = (p.out_h() + blocks - 1) / blocks;
  return static_cast<size_t>(rows * row_bytes);
}

TEST_CASE("im2win workspace_bytes is exactly the window block it fills") {
  // Four sizes worked out by hand: 3x3 256->256 on 14x14 (Wp = 16, a row is 16*3*256 floats =
  // 49152 bytes; weights 2.4 MB, panels 295 KB, so a block of 2 MiB - 2 panels - 128 KiB =
  // 1344 KiB: all 14 rows fit, one block); 3x3/2 512->512 on 14x14 (Wp = 15, rows of 92160
  // bytes; panels 590 KB: 768 KiB, 8 rows fit, all 7 in one block); 3x3 512->512 on 28x28
  // (Wp = 30, rows of 184320 bytes: 768 KiB holds 4, 28 rows -> 7 blocks of 4); and 3x3
  // 64->64 on 56x56 (58*3*64 floats = 44544 bytes; weights 147 KB, so a 128 KiB block: 2 rows
  // fit, raised to the minimum of 4).
  // All with a 2 MiB L2, and the same on 512 KiB (weights beyond 2 MiB keep the 2 MiB block; the
  // 64->64 weights fit 3/4 of either).
  for (int64_t l2 : {int64_t{2} << 20, int64_t{512} << 10}) {
    test::L2Override cache(l2);
    INFO("L2 ", l2);
    CHECK(im2win().workspace_bytes(Conv(1, 256, 14, 14, 256).k(3, 3).pad(1).p) == 14 * 49152u);
    CHECK(im2win().workspace_bytes(Conv(1, 512, 14, 14, 512).k(3, 3).s(2, 2).pad(1).p) == 7 * 92160u);
    CHECK(im2win().workspace_bytes(Conv(1, 512, 28, 28, 512).k(3, 3).pad(1).p) == 4 * 184320u);
    CHECK(im2win().workspace_bytes(Conv(1, 64, 56, 56, 64).k(3, 3).pad(1).p) == 4 * 44544u);
    CHECK(im2win().workspace_bytes(Conv(4, 256, 56, 56, 64).k(1, 1).p) == 0u);
  }
  // 3x3/2 128->256 on 28x28 (Wp = 29, rows of 44544 bytes; weights 1.18 MB, panels 295 KB):
  // within 1.5 MiB of a 2 MiB L2, a 128 KiB block (raised to 4 rows, 14 rows -> 4 blocks of 4);
  // beyond 384 KiB of a 512 KiB L2, a block of max(512 KiB, 512 KiB - 2 panels - 128 KiB):
  // 11 rows fit, 14 rows -> 2 blocks of 7.
  const ConvParams stride2 = Conv(1, 128, 28, 28, 256).k(3, 3).s(2, 2).pad(1).p;
  {
    test::L2Override cache(2 << 20);
    CHECK(im2win().workspace_bytes(stride2) == 4 * 44544u);
  }
  {
    test::L2Override cache(512 << 10);
    CHECK(im2win().workspace_bytes(stride2) == 7 * 44544u);
  }

  uint32_t seed = 5000;
  for (const ConvCase& c : test::tile_algorithm_cases()) {
    const ConvParams& p = c.p;
    INFO(test::describe(c));
    const size_t bytes = im2win().workspace_bytes(p);
    CHECK(bytes == expected_workspace(p));
    // Every float of the workspace is written at one thread (the size is not over-reported)
    // and nothing past it (not under-reported) whatever the thread count. At 3 threads the
    // slots of a thread that took no piece of the work (a worker that woke after the others
    // had done it all: thread_pool.h) stay unwritten, so only the guard is checked there.
    const ConvData d = test::make_data(p, seed += 10);
    GuardedBuffer packed(im2win().packed_weight_bytes(p));
    im2win().pack_weights(p, d.weight.data(), packed.floats());
    for (int threads : {1, 3}) {
      INFO("threads ", threads);
      GuardedBuffer workspace = test::run_on_marked_workspace(im2win(), c, d, packed.floats(), threads);
      if (threads == 1) CHECK(test::unwritten_words<uint32_t>(workspace.data_bytes(), workspace.bytes()) == 0);
    }
  }
}

TEST_CASE("im2win workspace is at most half of im2col's for 3x3 and larger kernels") {
  const ConvAlgorithm* im2col = find_conv_algorithm("im2col");
  REQUIRE(im2col != nullptr);
  // The benchmark layers (docs/PERFORMANCE.md) and the paper's twelve (REFERENCES.md).
  const std::vector<ConvParams> layers = {
      Conv(1, 64, 56, 56, 64).k(3, 3).pad(1).p,
      Conv(1, 128, 28, 28, 128).k(3, 3).pad(1).p,
      Conv(1, 256, 14, 14, 256).k(3, 3).pad(1).p,
      Conv(1, 512, 7, 7, 512).k(3, 3).pad(1).p,
      Conv(1, 3, 224, 224, 64).k(7, 7).s(2, 2).pad(3).p,
      Conv(1, 128, 28, 28, 256).k(3, 3).s(2, 2).pad(1).p,
      Conv(8, 64, 224, 224, 64).k(3, 3).pad(1).p,
      Conv(1, 3, 227, 227, 96).k(11, 11).s(4, 4).p,
      Conv(1, 3, 231, 231, 96).k(11, 11).s(4, 4).p,
      Conv(1, 3, 227, 227, 64).k(7, 7).s(2, 2).p,
      Conv(1, 64, 224, 224, 64).k(7, 7).s(2, 2).p,
      Conv(1, 96, 24, 24, 256).k(5, 5).p,
      Conv(1, 256, 12, 12, 512).k(3, 3).p,
      Conv(1, 3, 224, 224, 64).k(3, 3).p,
      Conv(1, 64, 112, 112, 128).k(3, 3).p,
      Conv(1, 64, 56, 56, 64).k(3, 3).p,
      Conv(1, 128, 28, 28, 128).k(3, 3).p,
      Conv(1, 256, 14, 14, 256).k(3, 3).p,
      Conv(1, 512, 7, 7, 512).k(3, 3).p,
  };
  for (const ConvParams& p : layers) {
    INFO(p.to_string());
    const double ratio =
        static_cast<double>(im2win().workspace_bytes(p)) / static_cast<double>(im2col->workspace_bytes(p));
    CHECK(ratio <= 0.5);
  }
}

TEST_CASE("WINFER_ISA names the ISA to cap the kernels at") {
  const char* saved = std::getenv("WINFER_ISA");
  const std::string saved_value = saved ? saved : "";
  setenv("WINFER_ISA", "avx2", 1);
  CHECK(cpu::isa_from_env(cpu::Isa::kAvx512) == cpu::Isa::kAvx2);
  setenv("WINFER_ISA", "generic", 1);
  CHECK(cpu::isa_from_env(cpu::Isa::kAvx512) == cpu::Isa::kGeneric);
  setenv("WINFER_ISA", "avx512", 1);
  CHECK(cpu::isa_from_env(cpu::Isa::kGeneric) == cpu::Isa::kAvx512);  // the caller caps it
  setenv("WINFER_ISA", "sse9", 1);
  CHECK(cpu::isa_from_env(cpu::Isa::kAvx2) == cpu::Isa::kAvx2);  // unknown: ignored
  unsetenv("WINFER_ISA");
  CHECK(cpu::isa_from_env(cpu::Isa::kAvx2) == cpu::Isa::kAvx2);
  if (saved) setenv("WINFER_ISA", saved_value.c_str(), 1);
}

}  // namespace
}  // namespace winfer
