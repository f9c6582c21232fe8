// im2win: its micro-kernels (every tile shape of every ISA the CPU runs) against a float64 dot
// product, the algorithm against the float64 reference and `direct` on edge shapes under every
// ISA and 1-3 threads, and its workspace contract (exact size, every float used, at most half
// of im2col's for kernels of 3x3 and larger).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_algorithm.h"
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

const ConvAlgorithm& im2win() {
  const ConvAlgorithm* a = find_conv_algorithm("im2win");
  REQUIRE(a != nullptr);
  return *a;
}

// ---- micro-kernels ----------------------------------------------------------------------------

struct TileShape {
  int rows, vecs, cols, col0;       // col0: first panel column the call covers
  int64_t segments, seg_len, seg_stride, w_seg_stride;
  bool bias;
  Activation act;
};

// One kernel call on random data; every output of the tile checked against a float64 sum,
// every float around it (columns past `cols`, the row padding) unchanged.
void check_tile(const cpu::TileKernels& uk, const TileShape& s, uint32_t seed) {
  INFO("isa ", uk.isa, " tile ", s.rows, "x", s.vecs, " cols ", s.cols, " col0 ", s.col0, " segments ",
       s.segments, "x", s.seg_len, " stride ", s.seg_stride, " weight stride ", s.w_seg_stride, s.bias ? " bias" : " nobias", " act ",
       activation_name(s.act));
  const int64_t k = s.segments * s.seg_len;
  const int64_t span = (s.segments - 1) * s.seg_stride + s.seg_len;
  const int64_t weight_rows = ((s.segments - 1) * s.w_seg_stride) / cpu::kPanel + s.seg_len;
  // Pixels 5 floats apart: their runs overlap, as in the window tensor.
  const std::vector<float> input = test::random_floats(static_cast<size_t>(5 * s.rows + span), seed);
  const std::vector<float> weights = test::random_floats(static_cast<size_t>(weight_rows * cpu::kPanel), seed + 1);
  const std::vector<float> bias = test::random_floats(cpu::kPanel, seed + 2);
  constexpr int64_t kOutStride = cpu::kPanel + 7;
  constexpr float kSentinel = 1234.5f;
  std::vector<float> out(static_cast<size_t>(s.rows * kOutStride), kSentinel);

  const float* pixels[cpu::kMaxTileRows];
  for (int m = 0; m < s.rows; ++m) pixels[m] = input.data() + 5 * m;
  cpu::TileArgs a;
  a.pixels = pixels;
  a.segments = s.segments;
  a.seg_len = s.seg_len;
  a.seg_stride = s.seg_stride;
  a.w_seg_stride = s.w_seg_stride;
  a.weights = weights.data() + s.col0;
  a.bias = s.bias ? bias.data() + s.col0 : nullptr;
  a.out = out.data();
  a.out_stride = kOutStride;
  a.cols = s.cols;
  a.clip = cpu::activation_clamp(s.act);
  REQUIRE(static_cast<bool>(uk.fn[s.rows][s.vecs]));
  uk.fn[s.rows][s.vecs](a);

  std::vector<double> want(static_cast<size_t>(s.cols)), abs_sum(want.size());
  for (int m = 0; m < s.rows; ++m) {
    for (int j = 0; j < s.cols; ++j) {
      double sum = s.bias ? bias[static_cast<size_t>(s.col0 + j)] : 0.0, abs = std::abs(sum);
      for (int64_t seg = 0; seg < s.segments; ++seg)
        for (int64_t l = 0; l < s.seg_len; ++l) {
          const double x = pixels[m][seg * s.seg_stride + l];
          const double w = weights[static_cast<size_t>(seg * s.w_seg_stride + l * cpu::kPanel + s.col0 + j)];
          sum += x * w;
          abs += std::abs(x * w);
        }
      want[static_cast<size_t>(j)] = ref::activate(sum, s.act);
      abs_sum[static_cast<size_t>(j)] = abs;
    }
    INFO("pixel ", m);
    test::check_close(out.data() + m * kOutStride, want, abs_sum, k + 1, "tile vs float64");
    for (int64_t j = s.cols; j < kOutStride; ++j) {
      INFO("column ", j);
      CHECK(out[static_cast<size_t>(m * kOutStride + j)] == kSentinel);
    }
  }
}

TEST_CASE("im2win micro-kernels: every tile shape of every runnable ISA") {
  uint32_t seed = 7000;
  for (cpu::Isa isa : test::runnable_isas()) {
    const cpu::TileKernels& uk = cpu::tile_kernels(isa);
    CHECK(std::string(uk.isa) == test::isa_name(isa));
    REQUIRE(uk.max_rows >= 1);
    REQUIRE(uk.max_rows <= cpu::kMaxTileRows);
    REQUIRE(uk.max_vecs >= 1);
    REQUIRE(uk.max_vecs <= cpu::kMaxTileVecs);
    REQUIRE(cpu::kPanel % (uk.max_vecs * uk.lanes) == 0);
    for (int rows = 1; rows <= uk.max_rows; ++rows)
      for (int vecs = 1; vecs <= uk.max_vecs; ++vecs) {
        const int width = vecs * uk.lanes;
        // Full and partial column blocks, at the panel's start and end; one contiguous run and
        // three strided segments with gaps between their weight rows too (im2win with
        // dilation along W, or skipping padded taps); bias and activation varied. Zero
        // segments (a window entirely in the padding) give the bias alone.
        for (int cols : {width, (vecs - 1) * uk.lanes + 1, width - 1}) {
          if (cols < 1) continue;
          if (cols == width) check_tile(uk, {rows, vecs, cols, 0, 0, 5, 5, 0, true, kRelu}, seed += 3);
          const bool odd = (rows + vecs + cols) % 2 == 1;
          check_tile(uk, {rows, vecs, cols, 0, 1, 37, 0, 37 * cpu::kPanel, odd, odd ? kRelu6 : kNone}, seed += 3);
          check_tile(uk, {rows, vecs, cols, cpu::kPanel - width, 3, 5, 11, 7 * cpu::kPanel, !odd, odd ? kNone : kRelu},
                     seed += 3);
        }
      }
  }
}

// ---- the algorithm --------------------------------------------------------------------------

// What im2win must get right: every padding and stride combination, dilation along H only, W
// only and both, groups (also with the in-place path), the in-place path (1x1, 1xK, stride 2,
// groups) and 1x1 with padding (window path), Co not a multiple of the panel (1, 3, 17, 33,
// 35) nor of any vector width, output rows narrower than every tile and not multiples of them,
// several row blocks with a short last one, batch 3, C = 1 and 3, 7x7/2 and 11x11/4 stems,
// windows entirely in the padding, a deep K with a tiny output.
std::vector<ConvCase> im2win_cases() {
  return {
      {Conv(1, 3, 11, 13, 8).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 1, 9, 17, 3).k(3, 3).p, false, kNone},
      {Conv(1, 5, 10, 9, 17).k(3, 3).pad(0, 2, 1, 0).p, true, kRelu6},
      {Conv(1, 4, 13, 15, 1).k(3, 3).s(2, 2).pad(1).p, true, kNone},
      {Conv(1, 6, 12, 14, 33).k(3, 3).pad(2).d(2, 2).p, true, kRelu},
      {Conv(1, 6, 12, 10, 16).k(3, 3).pad(2, 1, 2, 1).d(2, 1).p, false, kNone},
      {Conv(1, 8, 11, 13, 10).k(3, 2).s(1, 2).pad(1, 1, 1, 0).d(1, 2).g(2).p, true, kRelu},
      {Conv(1, 8, 9, 11, 34).k(3, 3).pad(1).g(2).p, true, kRelu},          // 17 channels per group
      {Conv(2, 16, 7, 8, 12).k(3, 3).s(2, 1).pad(1).g(4).p, false, kRelu6},  // 3 per group
      {Conv(3, 40, 5, 7, 33).k(1, 1).p, true, kRelu},                       // in place
      {Conv(1, 16, 9, 9, 17).k(1, 1).s(2, 2).p, false, kNone},              // in place, strided
      {Conv(1, 12, 6, 5, 6).k(1, 1).g(3).p, true, kRelu6},                  // in place, groups
      {Conv(1, 12, 5, 20, 8).k(1, 3).d(1, 2).g(4).p, true, kNone},          // in place, segments
      {Conv(1, 6, 5, 7, 3).k(1, 1).pad(1, 0, 0, 1).p, true, kNone},         // 1x1 padded: window
      {Conv(1, 4, 5, 6, 7).k(1, 3).pad(1, 0, 1, 0).p, true, kNone},         // Kh = 1 padded in H
      {Conv(1, 3, 29, 31, 64).k(7, 7).s(2, 2).pad(3).p, true, kRelu},
      {Conv(1, 3, 47, 43, 20).k(11, 11).s(4, 4).pad(2).p, false, kNone},
      {Conv(3, 9, 8, 6, 35).k(3, 3).pad(1).p, true, kNone},
      {Conv(1, 16, 6, 5, 48).k(3, 3).pad(1).p, true, kRelu},               // Wo = 5
      {Conv(1, 8, 4, 15, 32).k(3, 3).pad(1).p, false, kRelu},              // Wo = 15
      {Conv(1, 8, 3, 29, 64).k(3, 3).pad(1).p, true, kNone},               // Wo = 29
      // Rows of 62*3*64 floats: 4 rows per block; 23 rows -> 5 blocks of 4 and one of 3; two
      // images and two groups reuse the block, threads split rows across all of them.
      {Conv(2, 128, 23, 60, 8).k(3, 3).pad(1).g(2).p, true, kRelu},
      // The shared-block schedule (threads split the channel panels, barriers between blocks):
      // 5 output rows do not split fairly over 2 or 3 threads; weights of 1.8 MB (past the
      // 1.5 MiB kept in L2) with two blocks of 5 and 4 rows; 2 rows for 3 threads.
      {Conv(1, 64, 5, 9, 40).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 256, 9, 20, 161).k(3, 3).pad(1).p, false, kRelu6},
      {Conv(1, 256, 2, 30, 64).k(3, 3).pad(1).p, true, kNone},
      {Conv(1, 2, 2, 2, 5).k(3, 3).pad(3).p, true, kRelu6},                // all-padding windows
      {Conv(1, 256, 4, 4, 40).k(3, 3).pad(1).p, true, kNone},              // K = 2304, 16 pixels
      {Conv(1, 224, 5, 6, 200).k(3, 3).pad(1).p, true, kRelu},             // 1.6 MB: next panel prefetched
  };
}

TEST_CASE("im2win matches the reference and direct on edge shapes: every ISA, threads 1-3") {
  test::check_on_edge_cases(im2win(), im2win_cases(), 3000);
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
// rule: R = the largest row count within 128 KiB when one group's packed weights fit in
// 1.5 MiB (otherwise within 2 MiB less two 32-channel weight panels and 128 KiB, but at least
// 512 KiB), at least 4, at most Ho, evened out over the image.
size_t expected_workspace(const ConvParams& p) {
  const bool in_place = p.kernel_h == 1 && p.pad_top + p.pad_left + p.pad_bottom + p.pad_right == 0;
  if (in_place) return 0;
  const int64_t wp = (p.out_w() - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
  const int64_t row_bytes = wp * p.kernel_h * p.in_channels_per_group() * 4;
  const int64_t weight_bytes = p.out_channels_per_group() * p.kernel_h * p.kernel_w * p.in_channels_per_group() * 4;
  const int64_t panel_bytes = 32 * p.kernel_h * p.kernel_w * p.in_channels_per_group() * 4;
  const int64_t budget =
      weight_bytes <= (3 << 19) ? 128 << 10 : std::max<int64_t>(512 << 10, (2 << 20) - 2 * panel_bytes - (128 << 10));
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
  CHECK(im2win().workspace_bytes(Conv(1, 256, 14, 14, 256).k(3, 3).pad(1).p) == 14 * 49152u);
  CHECK(im2win().workspace_bytes(Conv(1, 512, 14, 14, 512).k(3, 3).s(2, 2).pad(1).p) == 7 * 92160u);
  CHECK(im2win().workspace_bytes(Conv(1, 512, 28, 28, 512).k(3, 3).pad(1).p) == 4 * 184320u);
  CHECK(im2win().workspace_bytes(Conv(1, 64, 56, 56, 64).k(3, 3).pad(1).p) == 4 * 44544u);
  CHECK(im2win().workspace_bytes(Conv(4, 256, 56, 56, 64).k(1, 1).p) == 0u);

  uint32_t seed = 5000;
  for (const ConvCase& c : im2win_cases()) {
    const ConvParams& p = c.p;
    INFO(test::describe(c));
    const size_t bytes = im2win().workspace_bytes(p);
    CHECK(bytes == expected_workspace(p));
    // Every float of the workspace is written (the size is not over-reported) and nothing past
    // it (not under-reported), whatever the thread count.
    const ConvData d = test::make_data(p, seed += 10);
    GuardedBuffer packed(im2win().packed_weight_bytes(p));
    im2win().pack_weights(p, d.weight.data(), packed.floats());
    for (int threads : {1, 3}) {
      INFO("threads ", threads);
      GuardedBuffer workspace(bytes);
      std::memset(workspace.data_bytes(), 0xFF, bytes);
      std::vector<float> out(static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels));
      im2win().run(p, d.input.data(), packed.floats(), d.bias.data(), out.data(),
                   bytes ? workspace.data_bytes() : nullptr, c.act, threads);
      CHECK(workspace.canary_intact());
      size_t untouched = 0;
      for (size_t i = 0; i < bytes / sizeof(float); ++i) {
        uint32_t bits;
        std::memcpy(&bits, workspace.data_bytes() + i * sizeof(float), sizeof bits);
        untouched += bits == 0xFFFFFFFFu;
      }
      CHECK(untouched == 0);
    }
  }
}

TEST_CASE("im2win workspace is at most half of im2col's for 3x3 and larger kernels") {
  const ConvAlgorithm* im2col = find_conv_algorithm("im2col");
  REQUIRE(im2col != nullptr);
  // The benchmark layers (docs/PERFORMANCE.md) and the paper's twelve (REFERENCES.md).
  const std::vector<ConvParams> layers = {
      Conv(1, 64, 56, 56, 64).k(3, 3).pad(1).p,        Conv(1, 128, 28, 28, 128).k(3, 3).pad(1).p,
      Conv(1, 256, 14, 14, 256).k(3, 3).pad(1).p,      Conv(1, 512, 7, 7, 512).k(3, 3).pad(1).p,
      Conv(1, 3, 224, 224, 64).k(7, 7).s(2, 2).pad(3).p, Conv(1, 128, 28, 28, 256).k(3, 3).s(2, 2).pad(1).p,
      Conv(8, 64, 224, 224, 64).k(3, 3).pad(1).p,      Conv(1, 3, 227, 227, 96).k(11, 11).s(4, 4).p,
      Conv(1, 3, 231, 231, 96).k(11, 11).s(4, 4).p,    Conv(1, 3, 227, 227, 64).k(7, 7).s(2, 2).p,
      Conv(1, 64, 224, 224, 64).k(7, 7).s(2, 2).p,     Conv(1, 96, 24, 24, 256).k(5, 5).p,
      Conv(1, 256, 12, 12, 512).k(3, 3).p,             Conv(1, 3, 224, 224, 64).k(3, 3).p,
      Conv(1, 64, 112, 112, 128).k(3, 3).p,            Conv(1, 64, 56, 56, 64).k(3, 3).p,
      Conv(1, 128, 28, 28, 128).k(3, 3).p,             Conv(1, 256, 14, 14, 256).k(3, 3).p,
      Conv(1, 512, 7, 7, 512).k(3, 3).p,
  };
  for (const ConvParams& p : layers) {
    INFO(p.to_string());
    const double ratio = static_cast<double>(im2win().workspace_bytes(p)) / static_cast<double>(im2col->workspace_bytes(p));
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
