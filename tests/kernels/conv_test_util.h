// Shared by the convolution tests: a fluent ConvParams builder, random data, and a guarded
// run of one algorithm (canaries after every buffer, output pre-filled with NaN).
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/conv_algorithm.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace test {

// Fluent ConvParams: conv(n, c, h, w, co).k(3, 3).s(2, 2).pad(1, 1, 1, 1).d(2, 2).g(4)
struct Conv {
  ConvParams p;
  Conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t co) {
    p.batch = n;
    p.in_channels = c;
    p.in_h = h;
    p.in_w = w;
    p.out_channels = co;
  }
  Conv& k(int64_t kh, int64_t kw) {
    p.kernel_h = kh;
    p.kernel_w = kw;
    return *this;
  }
  Conv& s(int64_t sh, int64_t sw) {
    p.stride_h = sh;
    p.stride_w = sw;
    return *this;
  }
  Conv& pad(int64_t top, int64_t left, int64_t bottom, int64_t right) {
    p.pad_top = top;
    p.pad_left = left;
    p.pad_bottom = bottom;
    p.pad_right = right;
    return *this;
  }
  Conv& pad(int64_t all) { return pad(all, all, all, all); }
  Conv& d(int64_t dh, int64_t dw) {
    p.dilation_h = dh;
    p.dilation_w = dw;
    return *this;
  }
  Conv& g(int64_t groups) {
    p.groups = groups;
    return *this;
  }
};

struct ConvCase {
  ConvParams p;
  bool bias;
  Activation act;
};

constexpr Activation kNone = Activation::kNone, kRelu = Activation::kRelu, kRelu6 = Activation::kRelu6;

inline std::string describe(const ConvCase& c) {
  return c.p.to_string() + (c.bias ? " bias" : " nobias") + " act=" + activation_name(c.act);
}

struct ConvData {
  std::vector<float> input, weight, bias;
};

inline ConvData make_data(const ConvParams& p, uint32_t seed) {
  ConvData d;
  d.input = test::random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels), seed);
  d.weight = test::random_floats(
      static_cast<size_t>(p.out_channels * p.in_channels_per_group() * p.kernel_h * p.kernel_w), seed + 1);
  d.bias = test::random_floats(static_cast<size_t>(p.out_channels), seed + 2);
  return d;
}

// Packs and runs `algo` with every buffer guarded by a canary, and checks the canaries.
// The output starts as NaN so an element the algorithm forgets to write shows up. `residual`
// (the output's size, or null) is the fused shortcut.
inline std::vector<float> run_conv(const ConvAlgorithm& algo, const ConvParams& p, const ConvData& d, bool with_bias,
                                   Activation act, int threads, const float* residual = nullptr) {
  GuardedBuffer packed(algo.packed_weight_bytes(p));
  algo.pack_weights(p, d.weight.data(), packed.floats());
  CHECK_MESSAGE(packed.canary_intact(), algo.name(), " pack_weights wrote past packed_weight_bytes");

  const size_t ws_bytes = algo.workspace_bytes(p);
  GuardedBuffer workspace(ws_bytes);
  const size_t out_count = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
  GuardedBuffer out(out_count * sizeof(float));
  std::memset(out.data_bytes(), 0xFF, out_count * sizeof(float));  // NaN

  algo.run(p, d.input.data(), packed.floats(), with_bias ? d.bias.data() : nullptr, residual, out.floats(),
           ws_bytes ? workspace.data_bytes() : nullptr, act, threads);
  CHECK_MESSAGE(workspace.canary_intact(), algo.name(), " wrote past workspace_bytes");
  CHECK_MESSAGE(out.canary_intact(), algo.name(), " wrote past the output");
  return std::vector<float>(out.floats(), out.floats() + out_count);
}

// One run of `algorithm` (its weights packed in `packed`) on a workspace of workspace_bytes()
// marked with 0xFF bytes (an all-ones NaN, which no input, weight or zero has), checking that
// nothing past it was written (the size is not under-reported). The workspace is returned so
// that the caller checks what the run must have written (the size is not over-reported).
inline GuardedBuffer run_on_marked_workspace(const ConvAlgorithm& algorithm, const ConvCase& c, const ConvData& d,
                                             const float* packed, int threads) {
  const ConvParams& p = c.p;
  const size_t bytes = algorithm.workspace_bytes(p);
  GuardedBuffer workspace(bytes);
  std::memset(workspace.data_bytes(), 0xFF, bytes);
  std::vector<float> out(static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels));
  algorithm.run(p, d.input.data(), packed, d.bias.data(), out.data(), bytes ? workspace.data_bytes() : nullptr, c.act,
                threads);
  CHECK_MESSAGE(workspace.canary_intact(), algorithm.name(), " wrote past workspace_bytes");
  return workspace;
}

// Words (uint32_t: floats, uint64_t: pointers) of the first `bytes` of a marked workspace that
// still hold the mark: what a run left unwritten. A float or a pointer may contain 0xFF bytes,
// never only those.
template <class Word>
size_t unwritten_words(const unsigned char* data, size_t bytes) {
  size_t count = 0;
  for (size_t i = 0; i + sizeof(Word) <= bytes; i += sizeof(Word)) {
    Word bits;
    std::memcpy(&bits, data + i, sizeof bits);
    count += bits == static_cast<Word>(~Word{0});
  }
  return count;
}

// The edge shapes of the micro-kernel algorithms (im2win and indirect both run every one):
// every padding and stride combination, asymmetric padding, dilation along H only, W only and
// both, groups 2/3/4 (also on im2win's in-place path), im2win's in-place path (1x1, 1xK,
// stride 2, groups) and 1x1 with padding (its window path), Co not a multiple of the panel (1,
// 3, 17, 33, 35) nor of any vector width, output rows narrower than every tile and not
// multiples of them, several row blocks with a short last one, batch 3, C = 1 and 3, 7x7/2 and
// 11x11/4 stems, windows entirely in the padding, a deep K with a tiny output, weights past the
// L2 budget (im2win's shared-block schedule, indirect's panel-major order), and a depthwise
// layer (correct, if slow).
inline std::vector<ConvCase> tile_algorithm_cases() {
  return {
      {Conv(1, 3, 11, 13, 8).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 1, 9, 17, 3).k(3, 3).p, false, kNone},
      {Conv(1, 5, 10, 9, 17).k(3, 3).pad(0, 2, 1, 0).p, true, kRelu6},
      {Conv(1, 4, 13, 15, 1).k(3, 3).s(2, 2).pad(1).p, true, kNone},
      {Conv(1, 6, 12, 14, 33).k(3, 3).pad(2).d(2, 2).p, true, kRelu},
      {Conv(1, 6, 12, 10, 16).k(3, 3).pad(2, 1, 2, 1).d(2, 1).p, false, kNone},
      {Conv(1, 8, 11, 13, 10).k(3, 2).s(1, 2).pad(1, 1, 1, 0).d(1, 2).g(2).p, true, kRelu},
      {Conv(1, 8, 9, 11, 34).k(3, 3).pad(1).g(2).p, true, kRelu},            // 17 channels per group
      {Conv(2, 16, 7, 8, 12).k(3, 3).s(2, 1).pad(1).g(4).p, false, kRelu6},  // 3 per group
      {Conv(3, 40, 5, 7, 33).k(1, 1).p, true, kRelu},                        // im2win: in place
      {Conv(1, 16, 9, 9, 17).k(1, 1).s(2, 2).p, false, kNone},               // in place, strided
      {Conv(1, 12, 6, 5, 6).k(1, 1).g(3).p, true, kRelu6},                   // in place, groups
      {Conv(1, 12, 5, 20, 8).k(1, 3).d(1, 2).g(4).p, true, kNone},           // in place, segments
      // Squeeze-excite's 1x1 convolutions on a 1x1 map: fewer output rows than threads (im2win
      // once looped forever here at batch 2-8 with 2 or 3 threads).
      {Conv(8, 40, 1, 1, 10).k(1, 1).p, true, kRelu},
      {Conv(3, 10, 1, 1, 40).k(1, 1).p, true, kNone},
      {Conv(1, 6, 5, 7, 3).k(1, 1).pad(1, 0, 0, 1).p, true, kNone},  // 1x1 padded: window
      {Conv(1, 4, 5, 6, 7).k(1, 3).pad(1, 0, 1, 0).p, true, kNone},  // Kh = 1 padded in H
      {Conv(1, 3, 29, 31, 64).k(7, 7).s(2, 2).pad(3).p, true, kRelu},
      {Conv(1, 3, 47, 43, 20).k(11, 11).s(4, 4).pad(2).p, false, kNone},
      {Conv(3, 9, 8, 6, 35).k(3, 3).pad(1).p, true, kNone},
      {Conv(1, 16, 6, 5, 48).k(3, 3).pad(1).p, true, kRelu},   // Wo = 5
      {Conv(1, 8, 4, 15, 32).k(3, 3).pad(1).p, false, kRelu},  // Wo = 15
      {Conv(1, 8, 3, 29, 64).k(3, 3).pad(1).p, true, kNone},   // Wo = 29
      // Tiles that start at a row's first column or end at its last skip the taps in the
      // left/right padding (im2win; rows of 28 and 14 are whole AVX-512 tiles): 3x3 pad 1,
      // 7x7 pad 3 (3 taps each side), dilation 2 along W (segments per kw), and weights past
      // the L2 budget (the shared-block schedule) with a first and last row in the padding.
      {Conv(1, 8, 6, 28, 40).k(3, 3).pad(1).p, true, kRelu},
      {Conv(2, 3, 9, 14, 16).k(7, 7).pad(3).p, false, kNone},
      {Conv(1, 6, 7, 32, 20).k(5, 5).pad(2).d(1, 2).p, true, kRelu6},
      {Conv(1, 192, 3, 14, 240).k(3, 3).pad(1).p, true, kRelu},
      // im2win: rows of 62*3*64 floats: 4 rows per block; 23 rows -> 5 blocks of 4 and one of
      // 3; two images and two groups reuse the block, threads split rows across all of them.
      {Conv(2, 128, 23, 60, 8).k(3, 3).pad(1).g(2).p, true, kRelu},
      // im2win's shared-block schedule (threads split the channel panels, barriers between
      // blocks): 5 output rows do not split fairly over 2 or 3 threads; weights of 1.8 MB (past
      // the 1.5 MiB kept in L2) with two blocks of 5 and 4 rows; 2 rows for 3 threads.
      {Conv(1, 64, 5, 9, 40).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 256, 9, 20, 161).k(3, 3).pad(1).p, false, kRelu6},
      {Conv(1, 256, 2, 30, 64).k(3, 3).pad(1).p, true, kNone},
      {Conv(1, 2, 2, 2, 5).k(3, 3).pad(3).p, true, kRelu6},    // all-padding windows
      {Conv(1, 256, 4, 4, 40).k(3, 3).pad(1).p, true, kNone},  // K = 2304, 16 pixels
      // 1.6 MB of weights: the next panel prefetched (im2win), panel by panel (indirect).
      {Conv(1, 224, 5, 6, 200).k(3, 3).pad(1).p, true, kRelu},
      {Conv(2, 224, 5, 6, 200).k(3, 3).pad(1).p, true, kRelu},
      {Conv(1, 8, 7, 9, 8).k(3, 3).pad(1).g(8).p, true, kRelu},  // depthwise
      // Grouped layers (RegNet, ResNeXt): groups of fewer than 16 output channels run G at a
      // time as block-diagonal merged groups (conv_common.h); G = 2, 3, 4, 6 and 1 (a prime
      // group count), channels per group 1-32, Cg != Cog, stride 2, dilation, batch 2 and 3.
      {Conv(2, 48, 9, 11, 48).k(3, 3).s(2, 2).pad(1).g(6).p, true, kRelu},           // 8 per group, G = 2
      {Conv(1, 40, 7, 9, 40).k(3, 3).pad(1).g(5).p, true, kRelu},                    // 8 per group, G = 1
      {Conv(1, 30, 8, 9, 30).k(3, 3).pad(2).d(2, 2).g(6).p, false, kRelu6},          // 5 per group, G = 3
      {Conv(1, 12, 7, 6, 24).k(3, 3).pad(1).g(12).p, true, kNone},                   // 1 -> 2, G = 6
      {Conv(1, 28, 6, 9, 12).k(3, 3).s(2, 1).pad(1, 0, 1, 1).g(4).p, true, kRelu},   // 7 -> 3, G = 4
      {Conv(3, 32, 7, 8, 32).k(3, 3).s(2, 2).pad(1).g(8).p, true, kRelu},            // 4 per group, G = 4
      {Conv(1, 24, 5, 6, 24).k(1, 1).g(6).p, true, kRelu},                           // in place, G = 3
      {Conv(1, 64, 6, 7, 64).k(3, 3).pad(1).g(4).p, true, kRelu},                    // 16 per group
      {Conv(1, 64, 9, 8, 64).k(3, 3).pad(2, 1, 0, 2).d(2, 1).g(8).p, false, kNone},  // 8 per group, whole panels
      // im2win's K chunks (in place, a 14-pixel tile's runs past 32 KiB, or pixels 4 KiB apart):
      // K = 1000 in chunks of 512 and 488 with a narrow last panel, batch 2; 512 channels at
      // stride 2 (one chunk, packed); 1024 per group; a 1x3 kernel's run of 768 cut across its
      // taps; 600 channels of 2.4 MB weights in blocks of panels.
      {Conv(2, 1000, 3, 5, 40).k(1, 1).p, true, kRelu},
      {Conv(1, 512, 5, 6, 48).k(1, 1).s(2, 2).p, false, kRelu6},
      {Conv(1, 2048, 3, 4, 64).k(1, 1).g(2).p, true, kNone},
      {Conv(1, 256, 3, 9, 20).k(1, 3).p, true, kRelu},
      {Conv(1, 1024, 4, 4, 600).k(1, 1).p, true, kRelu},
      // im2win's 1x1 layers run panel by panel where the weights dwarf the pixels (Geometry::
      // panel_major: 573 KB of weights, 35 pixels of 256 channels; a narrow last panel), batch 2.
      {Conv(2, 256, 5, 7, 560).k(1, 1).p, true, kRelu},
      {Conv(1, 48, 7, 7, 48).k(3, 3).s(2, 2).pad(1).g(2).p, true, kRelu},  // 24 per group
      {Conv(2, 64, 5, 6, 64).k(3, 3).pad(1).g(2).p, false, kRelu},         // 32 per group
      // im2win's group sets (group_sets.h: groups of 4, 8, 16 outputs interleaved in panels of
      // 32 lanes; the cases above with 4, 8 and 16 per group run them too): Cg != Cog (cells
      // not 32 floats), a last panel with absent groups for B = 4 and B = 1, rows of 14 (every
      // tile skips its left/right padding taps), dilation along W (a segment per kw), too
      // few rows for the own-rows schedule at 2-3 threads (shared blocks), batch 2.
      {Conv(1, 24, 7, 9, 48).k(3, 3).pad(1).g(6).p, true, kRelu},                    // 4 -> 8
      {Conv(2, 40, 6, 9, 40).k(3, 3).s(2, 2).pad(1).g(10).p, true, kRelu6},          // 4 per group, 8 + 2
      {Conv(1, 48, 6, 7, 48).k(3, 3).pad(1).g(3).p, false, kRelu},                   // 16 per group, 2 + 1
      {Conv(2, 104, 5, 14, 104).k(3, 3).pad(1).g(13).p, true, kRelu},                // RegNet's 13 groups
      {Conv(1, 32, 7, 11, 32).k(3, 3).pad(1, 2, 1, 2).d(1, 2).g(4).p, true, kNone},  // dilation along W
      {Conv(1, 64, 5, 9, 64).k(3, 3).pad(1).g(8).p, true, kRelu},                    // 5 rows: shared blocks
      {Conv(1, 2080, 3, 4, 2080).k(1, 1).g(130).p, true, kRelu},  // lane biases beyond the cached 2048
      // Merged groups whose merged shape has 4, 8 or 16 per group: merged panels, not sets.
      {Conv(1, 64, 6, 7, 64).k(3, 3).pad(1).g(64).p, true, kRelu},   // depthwise -> 16
      {Conv(2, 32, 5, 7, 32).k(3, 3).pad(1).g(16).p, true, kRelu6},  // 2 per group
  };
}

// The shared edge-shape check of the micro-kernel algorithms (im2win, indirect): each case
// against the float64 reference and `direct`, under every ISA this machine runs, and
// bitwise-identical results for 2 and 3 threads (the tiles and each one's summation order do
// not depend on the thread count).
inline void check_on_edge_cases(const ConvAlgorithm& algorithm, const std::vector<ConvCase>& cases, uint32_t seed) {
  const ConvAlgorithm* direct = find_conv_algorithm("direct");
  REQUIRE(direct != nullptr);
  const std::string name = algorithm.name();
  for (const ConvCase& c : cases) {
    INFO(describe(c));
    REQUIRE(c.p.is_valid());
    REQUIRE(algorithm.supports(c.p));
    const ConvData d = make_data(c.p, seed += 10);
    const ref::Result want = ref::conv2d(c.p, d.input, d.weight, c.bias ? d.bias.data() : nullptr, c.act);
    const std::vector<float> base = run_conv(*direct, c.p, d, c.bias, c.act, 1);
    std::vector<double> base_d(base.begin(), base.end()), twice(want.abs_sum);
    for (double& v : twice) v *= 2;
    for (cpu::Isa isa : runnable_isas()) {
      IsaCap cap(isa);
      INFO("isa ", isa_name(isa));
      const std::vector<float> one = run_conv(algorithm, c.p, d, c.bias, c.act, 1);
      check_close(one.data(), want.value, want.abs_sum, want.terms, (name + " vs reference").c_str());
      check_close(one.data(), base_d, twice, want.terms, (name + " vs direct").c_str());
      for (int threads : {2, 3}) {
        INFO("threads ", threads);
        const std::vector<float> many = run_conv(algorithm, c.p, d, c.bias, c.act, threads);
        CHECK(bitwise_equal(one.data(), many.data(), one.size()));
      }
    }
  }
}

// The blockings follow the L2 size (cpu_caches.h): which weights stay in L2, so which schedule
// runs (im2win's own rows or shared blocks, indirect's tile- or panel-major order), and the
// window blocks. Whatever the L2, each output is the same kernel call: the results of a 2 MiB,
// a 512 KiB and a 128 KiB L2 agree bitwise, at 1 and 2 threads; the cases include weights
// of 0.1-1.8 MB, on both sides of each size's bound.
inline void check_same_bits_for_l2_sizes(const ConvAlgorithm& algorithm, const std::vector<ConvCase>& cases,
                                         uint32_t seed) {
  for (const ConvCase& c : cases) {
    INFO(describe(c));
    const ConvData d = make_data(c.p, seed += 10);
    std::vector<float> base;
    {
      L2Override cache(2 << 20);
      base = run_conv(algorithm, c.p, d, c.bias, c.act, 1);
    }
    for (int64_t l2 : {int64_t{512} << 10, int64_t{128} << 10}) {
      L2Override cache(l2);
      for (int threads : {1, 2}) {
        INFO("L2 ", l2, ", threads ", threads);
        const std::vector<float> other = run_conv(algorithm, c.p, d, c.bias, c.act, threads);
        CHECK(bitwise_equal(base.data(), other.data(), base.size()));
      }
    }
  }
}

}  // namespace test
}  // namespace winfer
