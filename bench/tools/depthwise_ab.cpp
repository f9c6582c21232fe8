// The depthwise kernel against an earlier version of itself and oneDNN, called in turn in one
// process (this machine's neighbours slow whatever runs during their bursts; calling the three
// round by round slows them alike). Built and run by bench/tools/depthwise_ab.sh, which
// compiles kernels/cpu/conv_depthwise.cpp twice: from the working tree ("new") and from a git
// revision ("old"), each with depthwise_conv_algorithm renamed.
//
//   depthwise_ab [ROUNDS=200] [FILTER]
//
// Shapes: every distinct depthwise layer of mobilenet_v2 (mb2, with its fused bias + relu6) and
// efficientnet_b0 (eb0, bias; its SiLU is not fused) at 224x224, batch 1, then ShuffleNet
// v2 x1.0's seven (shf). Per shape and thread count (1, 2): median ms of each, GFLOP/s, p10 ms,
// and oneDNN's median / each one's (> 1: faster than oneDNN); then the geometric means of
// those ratios over the mobilenet_v2 + efficientnet_b0 rows (issue 23's target) and over the
// ShuffleNet rows. Outputs are checked against "old" (relative error <= 1e-5).
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/conv_provider.h"
#include "bench/stats.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/cpu_common.h"

extern "C" const winfer::bench::ConvProvider* winfer_bench_peer();
namespace winfer::cpu {
const ConvAlgorithm& old_dw_algo();
const ConvAlgorithm& new_dw_algo();
}  // namespace winfer::cpu

using namespace winfer;
using namespace winfer::bench;

struct Shape {
  const char* name;
  int64_t c, h, k, s;
  Activation act;
};

static const Shape kShapes[] = {
    {"mb2 f1  c32 112 k3s1", 32, 112, 3, 1, Activation::kRelu6},
    {"mb2 f2  c96 112 k3s2", 96, 112, 3, 2, Activation::kRelu6},
    {"mb2 f3  c144 56 k3s1", 144, 56, 3, 1, Activation::kRelu6},
    {"mb2 f4  c144 56 k3s2", 144, 56, 3, 2, Activation::kRelu6},
    {"mb2 f5  c192 28 k3s1", 192, 28, 3, 1, Activation::kRelu6},
    {"mb2 f7  c192 28 k3s2", 192, 28, 3, 2, Activation::kRelu6},
    {"mb2 f8  c384 14 k3s1", 384, 14, 3, 1, Activation::kRelu6},
    {"mb2 f12 c576 14 k3s1", 576, 14, 3, 1, Activation::kRelu6},
    {"mb2 f14 c576 14 k3s2", 576, 14, 3, 2, Activation::kRelu6},
    {"mb2 f15 c960 7 k3s1", 960, 7, 3, 1, Activation::kRelu6},
    {"eb0 f1.0 c32 112 k3s1", 32, 112, 3, 1, Activation::kNone},
    {"eb0 f2.0 c96 112 k3s2", 96, 112, 3, 2, Activation::kNone},
    {"eb0 f2.1 c144 56 k3s1", 144, 56, 3, 1, Activation::kNone},
    {"eb0 f3.0 c144 56 k5s2", 144, 56, 5, 2, Activation::kNone},
    {"eb0 f3.1 c240 28 k5s1", 240, 28, 5, 1, Activation::kNone},
    {"eb0 f4.0 c240 28 k3s2", 240, 28, 3, 2, Activation::kNone},
    {"eb0 f4.1 c480 14 k3s1", 480, 14, 3, 1, Activation::kNone},
    {"eb0 f5.0 c480 14 k5s1", 480, 14, 5, 1, Activation::kNone},
    {"eb0 f5.1 c672 14 k5s1", 672, 14, 5, 1, Activation::kNone},
    {"eb0 f6.0 c672 14 k5s2", 672, 14, 5, 2, Activation::kNone},
    {"eb0 f6.1 c1152 7 k5s1", 1152, 7, 5, 1, Activation::kNone},
    {"eb0 f7.0 c1152 7 k3s1", 1152, 7, 3, 1, Activation::kNone},
    // ShuffleNet's (no activation, no bias in ShuffleNet but with bias after BN folding)
    {"shf s2.0b1 c24 56 k3s2", 24, 56, 3, 2, Activation::kNone},
    {"shf s2.0b2 c58 56 k3s2", 58, 56, 3, 2, Activation::kNone},
    {"shf s2.1 c58 28 k3s1", 58, 28, 3, 1, Activation::kNone},
    {"shf s3.0 c116 28 k3s2", 116, 28, 3, 2, Activation::kNone},
    {"shf s3.1 c116 14 k3s1", 116, 14, 3, 1, Activation::kNone},
    {"shf s4.0 c232 14 k3s2", 232, 14, 3, 2, Activation::kNone},
    {"shf s4.1 c232 7 k3s1", 232, 7, 3, 1, Activation::kNone},
};

struct EngineConv : PreparedConv {
  const ConvAlgorithm& a;
  ConvProblem pr;
  int threads;
  AlignedBuffer packed, out;
  EngineConv(const ConvAlgorithm& alg, const ConvProblem& p, int t)
      : a(alg), pr(p), threads(t), packed(alg.packed_weight_bytes(p.params)), out(nan_output_buffer(p.params)) {
    a.pack_weights(pr.params, pr.weight_oihw, packed.floats());
  }
  void run() override {
    a.run(pr.params, pr.input_nhwc, packed.floats(), pr.bias, nullptr, out.floats(), nullptr, pr.activation, threads);
  }
  const float* output() const override { return out.floats(); }
  std::optional<size_t> workspace_bytes() const override { return 0; }
  std::optional<size_t> packed_weight_bytes() const override { return 0; }
};

static double max_rel(const float* a, const float* b, size_t n) {
  double m = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(double(b[i])));
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= 1e30)) return INFINITY;
    m = std::max(m, d / std::max(scale, 1e-30));
  }
  return m;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  const char* filter = argc > 2 ? argv[2] : "";
  const ConvProvider* dnnl = winfer_bench_peer();
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<double> ratio_old[3], ratio_new[3], shf_new[3], shf_old[3], p10_old[3], p10_new[3];
  std::printf("%-24s %2s | %8s %8s %8s | %6s %6s %6s GF/s | p10 old new onednn (ms) | new/onednn old/onednn\n", "shape",
              "T", "old ms", "new ms", "onednn", "old", "new", "onednn");
  for (int threads : {1, 2}) {
    for (const Shape& s : kShapes) {
      if (*filter && !std::strstr(s.name, filter)) continue;
      ConvParams p;
      p.in_channels = p.out_channels = p.groups = s.c;
      p.in_h = p.in_w = s.h;
      p.kernel_h = p.kernel_w = s.k;
      p.stride_h = p.stride_w = s.s;
      p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = s.k / 2;
      std::vector<float> in(s.c * s.h * s.h), w(s.c * s.k * s.k), b(s.c);
      for (auto& x : in) x = U(rng);
      for (auto& x : w) x = U(rng);
      for (auto& x : b) x = U(rng);
      ConvProblem pr{p, s.act, in.data(), w.data(), b.data()};
      constexpr int K = 3;
      std::unique_ptr<PreparedConv> convs[K];
      convs[0] = std::make_unique<EngineConv>(cpu::old_dw_algo(), pr, threads);
      convs[1] = std::make_unique<EngineConv>(cpu::new_dw_algo(), pr, threads);
      convs[2] = std::move(dnnl->prepare(pr, threads).value());
      const size_t n = p.out_h() * p.out_w() * p.out_channels;
      for (auto& c : convs) c->run();
      const double e_new = max_rel(convs[1]->output(), convs[0]->output(), n);
      const double e_dnnl = max_rel(convs[2]->output(), convs[0]->output(), n);
      if (e_new > 1e-5 || e_dnnl > 1e-5) std::printf("ERROR %s: new %.3g onednn %.3g vs old\n", s.name, e_new, e_dnnl);
      std::vector<double> ms[K];
      for (int r = 0; r < 20; ++r)
        for (auto& c : convs) c->run();
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < K; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          convs[i]->run();
          ms[i].push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
      }
      double med[K], p10[K], gf[K];
      for (int i = 0; i < K; ++i) {
        med[i] = median(ms[i]);
        p10[i] = percentile(ms[i], 10);
        gf[i] = p.flops() / (med[i] * 1e6);
      }
      const bool shufflenet = s.name[0] == 's';
      (shufflenet ? shf_old : ratio_old)[threads].push_back(med[2] / med[0]);
      (shufflenet ? shf_new : ratio_new)[threads].push_back(med[2] / med[1]);
      if (!shufflenet) p10_old[threads].push_back(p10[2] / p10[0]);
      if (!shufflenet) p10_new[threads].push_back(p10[2] / p10[1]);
      std::printf("%-24s %2d | %8.4f %8.4f %8.4f | %6.1f %6.1f %6.1f | %.4f %.4f %.4f | %5.2f %5.2f\n", s.name, threads,
                  med[0], med[1], med[2], gf[0], gf[1], gf[2], p10[0], p10[1], p10[2], med[2] / med[1],
                  med[2] / med[0]);
      std::fflush(stdout);
    }
    std::printf("geomean speed vs oneDNN (mobilenet_v2 + efficientnet_b0 rows), %d thread(s): new %.3f old %.3f\n",
                threads, geomean(ratio_new[threads]), geomean(ratio_old[threads]));
    std::printf("geomean speed vs oneDNN (shufflenet rows), %d thread(s): new %.3f old %.3f\n", threads,
                geomean(shf_new[threads]), geomean(shf_old[threads]));
    std::printf("the same from the p10 times (less sensitive to neighbours' bursts): new %.3f old %.3f\n",
                geomean(p10_new[threads]), geomean(p10_old[threads]));
  }
}
