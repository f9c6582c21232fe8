// One ISA's convolution micro-kernels as built from the repository against a variant of their
// body, on 1x1 layers' tiles (what im2win runs for a 1x1 convolution: measured equal to the
// whole layer within 5%), called in turn in one process. Built and run by
// bench/tools/tile_ab.sh, which compiles kernels/cpu/ukernel_<isa>.cpp twice and renames each
// build's table function (winfer_tile_ab_base, winfer_tile_ab_variant).
//
//   tile_ab [ROUNDS [COPIES ["P C Co [D]" ...]]]   (P pixels, C inputs, Co outputs, a multiple of 32,
//                                             D floats from a pixel's run to the next: C by default,
//                                             less for im2win's overlapping window runs, e.g. the
//                                             7x7/2 stem's "12544 147 64 42";
//                                             default: five ResNet-50 1x1 layers' shapes)
//
// Per round each layer runs once with each build (order alternating between rounds; the best
// of 3 calls with COPIES = 1, one call on the next of COPIES input/output buffers otherwise,
// so that they come from L3 as inside a network). Thread CPU time. Prints GFLOP/s (medians)
// and the per-round ratio base time / variant time (> 1: the variant is faster), median, p10
// and p90. Outputs are checked equal (within 1e-3) first. Environment: TILE_AB_COLD_WEIGHTS=1
// gives each copy its own weights (from L3 or memory, as in a network); TILE_AB_WARM_ACTS=1
// keeps the activations of copy 0 for every call (with the former: cold weights only);
// TILE_AB_WEIGHTS_IN_L2=1 sets TileArgs::weights_in_l2 as im2win does for weights that fit L2 (no
// software prefetch of the weight rows; without it the kernels prefetch them, as for streamed weights).
#include <time.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/stats.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_conv.h"

using namespace winfer::cpu;
using winfer::bench::median;
using winfer::bench::percentile;

const TileKernels* tile_kernels_base() asm("winfer_tile_ab_base");
const TileKernels* tile_kernels_variant() asm("winfer_tile_ab_variant");

namespace {

double now_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

// Whether the environment variable `name` is set to 1.
bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && std::string(value) == "1";
}

// A 1x1 layer: P pixels of C floats (NHWC) -> Co outputs, weights packed in panels.
struct Layer {
  int pixels, c, co;
  int d;  // floats from one pixel's run to the next (C: a 1x1 layer; less: overlapping window runs)
  std::vector<std::vector<float>> weights;  // one per copy with TILE_AB_COLD_WEIGHTS=1, else one
  std::vector<float> bias;
  std::vector<std::vector<float>> in, out;  // copies
  int next = 0;
};

// The layer's tiles in im2win's own-rows order: tile by tile, every panel and column block.
double run_layer(const TileKernels& t, Layer& layer, int copy) {
  const int rows = t.max_rows, block = t.max_vecs * t.lanes;
  static const bool warm_acts = env_flag("TILE_AB_WARM_ACTS");
  static const bool weights_in_l2 = env_flag("TILE_AB_WEIGHTS_IN_L2");
  const int act = warm_acts ? 0 : copy;
  const float* in = layer.in[act].data();
  float* out = layer.out[act].data();
  TileArgs a;
  a.segments = 1;
  a.seg_len = layer.c;
  a.seg_stride = 0;
  a.w_seg_stride = 0;
  a.out_stride = layer.co;
  a.clip = Clamp{0.f, 1e30f};
  a.weights_in_l2 = weights_in_l2;
  const float* pixel[kMaxTileRows];
  const double t0 = now_ns();
  for (int p0 = 0; p0 < layer.pixels; p0 += rows) {
    const int r = std::min(rows, layer.pixels - p0);
    for (int m = 0; m < r; ++m) pixel[m] = in + static_cast<size_t>(p0 + m) * layer.d;
    a.pixels = pixel;
    for (int panel = 0; panel < layer.co / kPanel; ++panel)
      for (int c = 0; c < kPanel; c += block) {
        a.cols = block;
        a.weights =
            layer.weights[copy % layer.weights.size()].data() + static_cast<size_t>(panel) * kPanel * layer.c + c;
        a.bias = layer.bias.data() + panel * kPanel + c;
        a.out = out + static_cast<size_t>(p0) * layer.co + panel * kPanel + c;
        t.fn[r][t.max_vecs](a);
      }
  }
  return now_ns() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 41, copies = argc > 2 ? std::atoi(argv[2]) : 1;
  if (rounds < 1 || copies < 1) {
    std::fprintf(stderr, "usage: tile_ab [ROUNDS [COPIES [\"P C Co [D]\" ...]]] (both >= 1)\n");
    return 2;
  }
  if (hardware_isa() < Isa::kAvx2) {
    std::fprintf(stderr, "tile_ab: this CPU lacks AVX2/FMA\n");
    return 2;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<std::array<int, 4>> shapes = {
      {784, 64, 64, 64}, {784, 64, 256, 64}, {784, 256, 64, 256}, {196, 576, 64, 576}, {196, 2304, 64, 2304}};
  if (argc > 3) shapes.clear();
  for (int i = 3; i < argc; ++i) {
    std::array<int, 4> sh{};
    const int fields = std::sscanf(argv[i], "%d %d %d %d", &sh[0], &sh[1], &sh[2], &sh[3]);
    if (fields == 3) sh[3] = sh[1];
    if (fields < 3 || sh[0] < 1 || sh[1] < 1 || sh[2] < 1 || sh[3] < 1 || sh[2] % kPanel != 0) {
      std::fprintf(stderr, "tile_ab: '%s': expected \"P C Co [D]\" (Co a multiple of %d, D >= 1)\n", argv[i],
                   int(kPanel));
      return 2;
    }
    shapes.push_back(sh);
  }
  // TILE_AB_COLD_WEIGHTS=1: each of the COPIES has its own weights too (from L3 or memory, as in a
  // network, where a layer's weights were last read an inference ago).
  const bool cold_weights = env_flag("TILE_AB_COLD_WEIGHTS");
  std::vector<Layer> layers;
  for (const auto& s : shapes) {
    Layer l{s[0], s[1], s[2], s[3], {}, {}, {}, {}};
    l.weights.emplace_back(static_cast<size_t>(l.c) * l.co);
    l.bias.resize(l.co);
    for (float& x : l.weights[0]) x = u(rng);
    if (cold_weights)
      for (int i = 1; i < copies; ++i) l.weights.push_back(l.weights[0]);
    for (float& x : l.bias) x = u(rng);
    std::vector<float> in(static_cast<size_t>(l.pixels - 1) * l.d + l.c);
    for (float& x : in) x = u(rng);
    for (int i = 0; i < copies; ++i) {
      l.in.push_back(in);
      l.out.emplace_back(static_cast<size_t>(l.pixels) * l.co);
    }
    layers.push_back(std::move(l));
  }
  const TileKernels* builds[2] = {tile_kernels_base(), tile_kernels_variant()};
  for (Layer& l : layers) {
    run_layer(*builds[0], l, 0);
    const std::vector<float> first = l.out[0];
    run_layer(*builds[1], l, 0);
    double d = 0;
    for (size_t i = 0; i < first.size(); ++i) d = std::max(d, double(std::fabs(first[i] - l.out[0][i])));
    if (d > 1e-3) {
      std::fprintf(stderr, "tile_ab: %dx%d->%d: the builds differ by %g\n", l.pixels, l.c, l.co, d);
      return 1;
    }
  }
  for (Layer& l : layers) {
    std::vector<double> ns[2], ratio;
    for (int r = 0; r < rounds; ++r) {
      for (int k = 0; k < 2; ++k) {
        const int b = (k + r) % 2;
        double best = 1e300;
        for (int rep = 0; rep < (copies > 1 ? 1 : 3); ++rep)
          best = std::min(best, run_layer(*builds[b], l, l.next++ % copies));
        ns[b].push_back(best);
      }
      ratio.push_back(ns[0].back() / ns[1].back());
    }
    const double flop = 2.0 * l.pixels * l.c * l.co;
    std::printf(
        "P %4d C %4d Co %4d D %4d | base %5.1f GF | variant %5.1f GF | base/variant median %.3f p10 %.3f p90 %.3f\n",
        l.pixels, l.c, l.co, l.d, flop / median(ns[0]), flop / median(ns[1]), median(ratio), percentile(ratio, 10),
        percentile(ratio, 90));
  }
}
