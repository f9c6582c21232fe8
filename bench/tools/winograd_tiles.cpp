// winograd's three tiles, F(2x2, 3x3), F(4x4, 3x3) and F(6x6, 3x3) (each forced:
// winograd_conv_algorithm_with_tile),
// against im2win on 3x3 stride-1 layers, called in turn round by round in one process (this
// machine's neighbours slow whatever runs during their bursts; calling the three in turn slows
// them alike), 16 MiB written between calls so that every call finds its weights outside L2 as in
// a network. Built and run by bench/tools/winograd_tiles.sh; the measurements behind
// winograd_tile()'s rule (docs/PERFORMANCE.md, "Winograd F(4x4, 3x3)").
//
//   winograd_tiles [THREADS=1] [BATCH=1] [ROUNDS=15] [FILTER]
//
// Layers: paper12's 3x3 stride-1 ones (p12.*), ResNet's (r.*) and VGG16's (v.*) at 224x224, and
// small ones that decide the rule (x.*, y.*) and whether winograd declines (z.*: few tiles of U
// beyond L2). Per layer: median ms of each, F(2x2)/F(4x4),
// F(4x4)/F(6x6) and im2win/F(4x4) (> 1: the latter faster), the same for the minimum, and each
// one's max |error| / max |y| against float64 on 4000 sampled outputs (inputs in [0, 1) as after
// a ReLU).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_winograd.h"
#include "winfer/tensor.h"
using namespace winfer;
struct L {
  const char* name;
  int64_t c, h, w, co, pad;
};
// Workspace memory, 64-byte aligned (the packed weights are Tensors, as a session holds them:
// in 2 MiB pages where the algorithm asks, Tensor::allocate and promote_to_huge_pages).
static float* alloc(size_t bytes) { return static_cast<float*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64)); }
static Tensor packed_tensor(const ConvAlgorithm& a, const ConvParams& p) {
  const int64_t floats = static_cast<int64_t>((a.packed_weight_bytes(p) + sizeof(float) - 1) / sizeof(float)) + 16;
  return Tensor::allocate(Shape{floats}, Layout::kPlain, DType::kFloat32, a.packed_weights_in_huge_pages());
}
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  int64_t batch = argc > 2 ? atoll(argv[2]) : 1;
  int rounds = argc > 3 ? atoi(argv[3]) : 15;
  const char* filter = argc > 4 ? argv[4] : "";
  std::vector<L> layers = {
      {"p12.conv6", 256, 12, 12, 512, 0},    {"p12.conv8", 64, 112, 112, 128, 0},
      {"p12.conv9", 64, 56, 56, 64, 0},      {"p12.conv10", 128, 28, 28, 128, 0},
      {"p12.conv11", 256, 14, 14, 256, 0},   {"p12.conv12", 512, 7, 7, 512, 0},
      {"r.56x64", 64, 56, 56, 64, 1},        {"r.28x128", 128, 28, 28, 128, 1},
      {"r.14x256", 256, 14, 14, 256, 1},     {"r.7x512", 512, 7, 7, 512, 1},
      {"v.224x64", 64, 224, 224, 64, 1},     {"v.112x128", 128, 112, 112, 128, 1},
      {"v.56x256", 256, 56, 56, 256, 1},     {"x.14x64", 64, 14, 14, 64, 1},
      {"x.d14x128to32", 128, 14, 14, 32, 1}, {"x.d28x128to32", 128, 28, 28, 32, 1},
      {"x.g28x96to128", 96, 28, 28, 128, 1}, {"x.g14x112to224", 112, 14, 14, 224, 1},
      {"x.10x96", 96, 10, 10, 96, 1},        {"y.7x64", 64, 7, 7, 64, 1},
      {"y.7x128to32", 128, 7, 7, 32, 1},     {"y.8x64", 64, 8, 8, 64, 1},
      {"y.9x64", 64, 9, 9, 64, 1},           {"y.10x64", 64, 10, 10, 64, 1},
      {"y.11x64", 64, 11, 11, 64, 1},        {"y.12x64", 64, 12, 12, 64, 1},
      {"y.14x64", 64, 14, 14, 64, 1},        {"y.20x64", 64, 20, 20, 64, 1},
      {"v.28x512", 512, 28, 28, 512, 1},     {"v.14x512", 512, 14, 14, 512, 1},
      {"z.5x512", 512, 5, 5, 512, 1},        {"z.4x512", 512, 4, 4, 512, 1},
      {"z.3x512", 512, 3, 3, 512, 1},        {"z.6x256", 256, 6, 6, 256, 1},
  };
  constexpr int kAlgos = 4;  // im2win, F2, F4, F6
  const ConvAlgorithm* algos[kAlgos] = {find_conv_algorithm("im2win"), &cpu::winograd_conv_algorithm_with_tile(2),
                                        &cpu::winograd_conv_algorithm_with_tile(4),
                                        &cpu::winograd_conv_algorithm_with_tile(6)};
  // MiB written between calls (WINFER_FLUSH_MIB, default 16): 96 evicts even U's of 17-38 MB
  // from this machine's 32 MiB L3, as the other layers of a network do.
  const char* flush_env = std::getenv("WINFER_FLUSH_MIB");
  const int flush_mib = std::max(1, flush_env != nullptr ? atoi(flush_env) : 16);
  std::vector<char> flush(size_t(flush_mib) << 20);
  std::printf(
      "threads %d batch %lld (medians; then minima; then max |error| / max |y| vs float64: F2 F4 F6 im2win)\n%-14s "
      "%9s %9s %9s %9s  %6s %6s %6s  %12s %8s %8s %8s %6s %6s %6s\n",
      threads, (long long)batch, "layer", "im2win", "F2", "F4", "F6", "F2/F4", "F4/F6", "iw/F4", "min: im2win", "F2",
      "F4", "F6", "F2/F4", "F4/F6", "iw/F4");
  std::fflush(stdout);
  for (const L& l : layers) {
    if (!strstr(l.name, filter)) continue;
    ConvParams p;
    p.batch = batch;
    p.in_channels = l.c;
    p.in_h = l.h;
    p.in_w = l.w;
    p.out_channels = l.co;
    p.kernel_h = p.kernel_w = 3;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = l.pad;
    std::mt19937 gen(1);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> in(p.batch * l.h * l.w * l.c), wt(l.co * l.c * 9), bias(l.co);
    for (auto& x : in) x = std::max(0.f, u(gen));  // post-ReLU activations
    for (auto& x : wt) x = u(gen) * 0.1f;
    for (auto& x : bias) x = u(gen);
    const size_t out_n = p.batch * p.out_h() * p.out_w() * l.co;
    Tensor packed[kAlgos];
    float* ws[kAlgos];
    std::vector<float> out[kAlgos];
    for (int a = 0; a < kAlgos; ++a) {
      packed[a] = packed_tensor(*algos[a], p);
      algos[a]->pack_weights(p, wt.data(), packed[a].data());
      packed[a].promote_to_huge_pages();
      ws[a] = alloc(algos[a]->workspace_bytes(p));
      out[a].resize(out_n);
    }
    std::vector<double> t[kAlgos];
    for (int r = 0; r < rounds + 1; ++r)
      for (int a = 0; a < kAlgos; ++a) {
        std::memset(flush.data(), r, flush.size());
        auto t0 = std::chrono::steady_clock::now();
        algos[a]->run(p, in.data(), packed[a].data(), bias.data(), nullptr, out[a].data(), ws[a], Activation::kNone,
                      threads);
        auto t1 = std::chrono::steady_clock::now();
        if (r > 0) t[a].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    double med[kAlgos], mn[kAlgos];
    for (int a = 0; a < kAlgos; ++a) {
      std::sort(t[a].begin(), t[a].end());
      med[a] = t[a][t[a].size() / 2];
      mn[a] = t[a][0];
    }
    // error vs float64 direct on a sample of outputs, relative to max |y| (as parity)
    double maxy = 0, err[kAlgos] = {};
    std::mt19937 g2(3);
    const int64_t ho = p.out_h(), wo = p.out_w();
    for (int s = 0; s < 4000; ++s) {
      int64_t n = g2() % p.batch, oh = g2() % ho, ow = g2() % wo, o = g2() % l.co;
      double ref = bias[o];
      for (int kh = 0; kh < 3; ++kh)
        for (int kw = 0; kw < 3; ++kw) {
          int64_t ih = oh - l.pad + kh, iw = ow - l.pad + kw;
          if (ih < 0 || iw < 0 || ih >= l.h || iw >= l.w) continue;
          for (int64_t c = 0; c < l.c; ++c)
            ref += double(in[((n * l.h + ih) * l.w + iw) * l.c + c]) * wt[((o * l.c + c) * 3 + kh) * 3 + kw];
        }
      maxy = std::max(maxy, std::abs(ref));
      size_t idx = ((n * ho + oh) * wo + ow) * l.co + o;
      for (int a = 0; a < kAlgos; ++a) err[a] = std::max(err[a], std::abs(out[a][idx] - ref));
    }
    std::printf(
        "%-14s %9.3f %9.3f %9.3f %9.3f  %6.2f %6.2f %6.2f  min %8.3f %8.3f %8.3f %8.3f %6.2f %6.2f %6.2f  %.1e %.1e "
        "%.1e %.1e\n",
        l.name, med[0], med[1], med[2], med[3], med[1] / med[2], med[2] / med[3], med[0] / med[2], mn[0], mn[1], mn[2],
        mn[3], mn[1] / mn[2], mn[2] / mn[3], mn[0] / mn[2], err[1] / maxy, err[2] / maxy, err[3] / maxy, err[0] / maxy);
    std::fflush(stdout);
    for (int a = 0; a < kAlgos; ++a) {
      std::free(ws[a]);
    }
  }
}
