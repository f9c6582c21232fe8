// INT8 im2win (and indirect) against FP32 im2win on ResNet-50 layers, called in turn in one
// process (round by round, so that the neighbours' bursts on this shared machine slow all of
// them alike), with the VNNI and FMA peaks probed first. Built and run by int8_layers.sh.
//
//   int8_layers [ROUNDS=60] [THREADS=1] [FILTER]
//
// Per layer: median and p10 ms of FP32 im2win, INT8 im2win and INT8 indirect (batch 1, ReLU,
// bias), GOP/s (2 ops per multiply-add for both), INT8 im2win's % of the VNNI peak, FP32's % of
// the FMA peak, and the speed-up INT8 im2win / FP32 im2win. WINFER_ISA=avx2 or generic runs the
// narrower INT8 paths (their % of the VNNI peak is then only a comparison).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/stats.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_s8.h"
#include "kernels/cpu/fma_probe.h"
#include "kernels/cpu/vnni_probe.h"

using namespace winfer;

namespace {

struct Layer {
  const char* name;
  int64_t c, h, co, k, s;
};

// ResNet-50 v1.5 at 224x224 (torchvision: the stride on the 3x3), one of each kind per stage.
const Layer kLayers[] = {
    {"conv1 7x7/2 3->64 224", 3, 224, 64, 7, 2}, {"l1 1x1 64->64 56", 64, 56, 64, 1, 1},
    {"l1 3x3 64->64 56", 64, 56, 64, 3, 1},      {"l1 1x1 64->256 56", 64, 56, 256, 1, 1},
    {"l1 1x1 256->64 56", 256, 56, 64, 1, 1},    {"l2 3x3/2 128->128 56", 128, 56, 128, 3, 2},
    {"l2 3x3 128->128 28", 128, 28, 128, 3, 1},  {"l2 1x1 512->128 28", 512, 28, 128, 1, 1},
    {"l3 3x3 256->256 14", 256, 14, 256, 3, 1},  {"l3 1x1 256->1024 14", 256, 14, 1024, 1, 1},
    {"l4 3x3 512->512 7", 512, 7, 512, 3, 1},    {"l4 1x1 2048->512 7", 2048, 7, 512, 1, 1},
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 60;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const char* filter = argc > 3 ? argv[3] : "";
  const double vnni_peak = probe_vnni_peak_gops(threads);
  const double fma_peak = fma_peak_gflops(threads);
  std::printf("threads %d, INT8 path %s; VNNI peak %.1f GOP/s, FP32 FMA peak %.1f GFLOP/s\n", threads,
              cpu::s8_isa_name(cpu::s8_isa()), vnni_peak, fma_peak);
  std::printf("%-24s | %8s %8s %8s | %7s %7s %7s | %6s %6s | %5s | p10 ms fp32 s8 s8ind\n", "layer", "fp32 ms", "s8 ms",
              "s8ind ms", "fp32 GF", "s8 GOP", "ind GOP", "%vnni", "%fma", "x");
  const ConvAlgorithm* im2win = find_conv_algorithm("im2win");
  if (im2win == nullptr) return 1;
  std::mt19937 gen(7);
  std::vector<double> speedups, vnni_share;
  for (const Layer& l : kLayers) {
    if (*filter && !std::strstr(l.name, filter)) continue;
    ConvParams p;
    p.in_channels = l.c;
    p.in_h = p.in_w = l.h;
    p.out_channels = l.co;
    p.kernel_h = p.kernel_w = l.k;
    p.stride_h = p.stride_w = l.s;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = l.k / 2;
    const int64_t k = l.c * l.k * l.k;
    const size_t in_n = static_cast<size_t>(l.c * l.h * l.h), w_n = static_cast<size_t>(l.co * k);
    const size_t out_n = static_cast<size_t>(p.out_h() * p.out_w() * l.co);
    // FP32
    std::vector<float> xf(in_n), wf(w_n), bf(static_cast<size_t>(l.co)), yf(out_n);
    for (float& v : xf) v = static_cast<float>(gen() % 1000) / 1000.f;
    for (float& v : wf) v = static_cast<float>(static_cast<int>(gen() % 1000) - 500) / 5000.f;
    for (float& v : bf) v = 0.01f;
    std::vector<float> packed_f(im2win->packed_weight_bytes(p) / sizeof(float) + 16);
    im2win->pack_weights(p, wf.data(), packed_f.data());
    std::vector<unsigned char> ws_f(im2win->workspace_bytes(p) + 64);
    // INT8
    std::vector<uint8_t> xq(in_n), yq(out_n);
    std::vector<int8_t> wq(w_n);
    for (uint8_t& v : xq) v = static_cast<uint8_t>(gen() & 255);
    for (int8_t& v : wq) v = static_cast<int8_t>(static_cast<int>(gen() & 255) - 128);
    std::vector<int32_t> bq(static_cast<size_t>(l.co), 1000);
    std::vector<float> mq(static_cast<size_t>(l.co), 1e-4f);
    cpu::S8ConvQuant q;
    q.in_zero = 3;
    q.out_zero = 10;
    q.lo = 10;
    q.multiplier = mq.data();
    q.bias = bq.data();
    std::vector<uint8_t> packed_q(cpu::s8_conv_packed_bytes(p));
    cpu::s8_pack_conv(p, wq.data(), q, packed_q.data());
    std::vector<uint8_t> ws_q(cpu::s8_im2win_workspace_bytes(p, threads) + 1);
    auto run_f = [&] {
      im2win->run(p, xf.data(), packed_f.data(), bf.data(), yf.data(), ws_f.data(), Activation::kRelu, threads);
    };
    auto run_q = [&] { cpu::s8_im2win_conv(p, xq.data(), packed_q.data(), yq.data(), ws_q.data(), threads); };
    auto run_i = [&] { cpu::s8_indirect_conv(p, xq.data(), packed_q.data(), yq.data(), threads); };
    for (int r = 0; r < 5; ++r) run_f(), run_q(), run_i();
    std::vector<double> tf, tq, ti;
    for (int r = 0; r < rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      run_f();
      tf.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      run_q();
      tq.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      run_i();
      ti.push_back(ms_since(t0));
    }
    const double mf = bench::median(tf), mq8 = bench::median(tq), mi = bench::median(ti);
    const double ops = static_cast<double>(p.flops());
    const double gf = ops / (mf * 1e6), gq = ops / (mq8 * 1e6), gi = ops / (mi * 1e6);
    speedups.push_back(mf / mq8);
    if (vnni_peak > 0) vnni_share.push_back(gq / vnni_peak);
    std::printf("%-24s | %8.3f %8.3f %8.3f | %7.1f %7.1f %7.1f | %5.1f%% %5.1f%% | %5.2f | %.3f %.3f %.3f\n", l.name,
                mf, mq8, mi, gf, gq, gi, vnni_peak > 0 ? 100 * gq / vnni_peak : 0.0,
                fma_peak > 0 ? 100 * gf / fma_peak : 0.0, mf / mq8, bench::percentile(tf, 10),
                bench::percentile(tq, 10), bench::percentile(ti, 10));
    std::fflush(stdout);
  }
  std::printf("geomean INT8 im2win speed-up over FP32 im2win %.2f; geomean %% of VNNI peak %.1f%%\n",
              bench::geomean(speedups), 100 * bench::geomean(vnni_share));
  // Depthwise: INT8 against the FP32 depthwise algorithm (MobileNetV2's 3x3 layers).
  const ConvAlgorithm* dw = find_conv_algorithm("depthwise");
  if (dw == nullptr) return 1;
  std::printf("%-24s | %8s %8s | %7s %7s | %5s | p10 ms fp32 s8\n", "depthwise layer", "fp32 ms", "s8 ms", "fp32 GF",
              "s8 GOP", "x");
  const Layer kDepthwise[] = {
      {"dw 3x3 c32 112", 32, 112, 32, 3, 1},  {"dw 3x3/2 c96 112", 96, 112, 96, 3, 2},
      {"dw 3x3 c144 56", 144, 56, 144, 3, 1}, {"dw 3x3 c192 28", 192, 28, 192, 3, 1},
      {"dw 3x3 c576 14", 576, 14, 576, 3, 1}, {"dw 3x3 c960 7", 960, 7, 960, 3, 1},
  };
  std::vector<double> dw_speedups;
  for (const Layer& l : kDepthwise) {
    if (*filter && !std::strstr(l.name, filter)) continue;
    ConvParams p;
    p.in_channels = p.out_channels = p.groups = l.c;
    p.in_h = p.in_w = l.h;
    p.kernel_h = p.kernel_w = l.k;
    p.stride_h = p.stride_w = l.s;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = l.k / 2;
    const size_t in_n = static_cast<size_t>(l.c * l.h * l.h), w_n = static_cast<size_t>(l.c * l.k * l.k);
    const size_t out_n = static_cast<size_t>(p.out_h() * p.out_w() * l.c);
    std::vector<float> xf(in_n), wf(w_n), bf(static_cast<size_t>(l.c), 0.01f), yf(out_n);
    for (float& v : xf) v = static_cast<float>(gen() % 1000) / 1000.f;
    for (float& v : wf) v = static_cast<float>(static_cast<int>(gen() % 1000) - 500) / 5000.f;
    std::vector<float> packed_f(dw->packed_weight_bytes(p) / sizeof(float) + 16);
    dw->pack_weights(p, wf.data(), packed_f.data());
    std::vector<unsigned char> ws_f(dw->workspace_bytes(p) + 64);
    std::vector<uint8_t> xq(in_n), yq(out_n);
    std::vector<int8_t> wq(w_n);
    for (uint8_t& v : xq) v = static_cast<uint8_t>(gen() & 255);
    for (int8_t& v : wq) v = static_cast<int8_t>(static_cast<int>(gen() & 255) - 128);
    std::vector<int32_t> bq(static_cast<size_t>(l.c), 1000);
    std::vector<float> mq(static_cast<size_t>(l.c), 1e-3f);
    cpu::S8ConvQuant q;
    q.in_zero = 3;
    q.out_zero = 10;
    q.lo = 10;
    q.multiplier = mq.data();
    q.bias = bq.data();
    std::vector<uint8_t> packed_q(cpu::s8_depthwise_packed_bytes(p));
    cpu::s8_pack_depthwise(p, wq.data(), q, packed_q.data());
    auto run_f = [&] {
      dw->run(p, xf.data(), packed_f.data(), bf.data(), yf.data(), ws_f.data(), Activation::kRelu6, threads);
    };
    auto run_q = [&] { cpu::s8_depthwise_conv(p, xq.data(), packed_q.data(), yq.data(), threads); };
    for (int r = 0; r < 5; ++r) run_f(), run_q();
    std::vector<double> tf, tq;
    for (int r = 0; r < rounds; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      run_f();
      tf.push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      run_q();
      tq.push_back(ms_since(t0));
    }
    const double mf = bench::median(tf), mq8 = bench::median(tq), ops = static_cast<double>(p.flops());
    dw_speedups.push_back(mf / mq8);
    std::printf("%-24s | %8.3f %8.3f | %7.1f %7.1f | %5.2f | %.3f %.3f\n", l.name, mf, mq8, ops / (mf * 1e6),
                ops / (mq8 * 1e6), mf / mq8, bench::percentile(tf, 10), bench::percentile(tq, 10));
    std::fflush(stdout);
  }
  std::printf("geomean INT8 depthwise speed-up over FP32 depthwise %.2f\n", bench::geomean(dw_speedups));
  return 0;
}
