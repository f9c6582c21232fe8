// im2win against oneDNN with the activations out of the caches, as a layer finds them inside a
// network (its input written a layer ago, its output an inference ago) rather than as a
// benchmark repeating one layer finds them (everything in L2). Built and run by
// bench/tools/cold_ab.sh.
//
//   cold_ab THREADS BATCH ROUNDS COPIES "C H Co K S P R" ...
//
// Each shape: C input channels, H x H input, Co outputs, K x K kernel, stride S, padding P,
// R = 1 for a fused residual add (im2win only: the oneDNN primitive has no sum post-op, so
// such rows time im2win's extra work too). Bias and ReLU fused in both. COPIES separate
// input/output (and residual) buffers are used in turn, so that with COPIES x (input + output)
// beyond L2 every call reads and writes memory the caches lost; COPIES = 1 is the warm case.
// Per round, im2win and oneDNN are called once each in a shuffled order; at 1 thread each call
// is timed by the thread's CPU clock (time the VM was descheduled not counted), at 2 by the
// wall clock. Prints per shape the medians and p10s and oneDNN's median / im2win's (> 1: im2win
// faster); outputs are checked against each other first (max |d| / max |y| <= 1e-4).
//
// With COLD_AB_L2=SIZE ("2M", "512K", bytes) a third contender joins the rounds: im2win blocked
// for an L2 of SIZE (cpu_caches.h) instead of the machine's, with its own workspace; the line
// then also gives im2win's median / that variant's (> 1: the variant is faster).
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/conv_provider.h"
#include "bench/stats.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/cpu_caches.h"

extern "C" const winfer::bench::ConvProvider* winfer_bench_peer();
namespace winfer::cpu {
const ConvAlgorithm& im2win_conv_algorithm();
}

using namespace winfer;
using namespace winfer::bench;

namespace {

double now_ms(bool thread_cpu) {
  timespec t;
  clock_gettime(thread_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

std::vector<float> random_floats(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

double max_rel(const float* a, const float* b, size_t n) {
  double m = 0, scale = 1e-30;
  for (size_t i = 0; i < n; ++i) scale = std::max(scale, std::fabs(double(b[i])));
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])) / scale);
  return m;
}

void bench_shape(const char* spec, int threads, int batch, int rounds, int copies, int64_t variant_l2,
                 std::mt19937& rng) {
  int c, h, co, k, s, pad, residual;
  if (std::sscanf(spec, "%d %d %d %d %d %d %d", &c, &h, &co, &k, &s, &pad, &residual) != 7) {
    std::fprintf(stderr, "cold_ab: '%s': expected \"C H Co K S P R\"\n", spec);
    std::exit(2);
  }
  ConvParams p;
  p.batch = batch;
  p.in_channels = c;
  p.out_channels = co;
  p.in_h = p.in_w = h;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = s;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  if (!p.is_valid()) {
    std::fprintf(stderr, "cold_ab: '%s': not a valid convolution\n", spec);
    std::exit(2);
  }
  const size_t in_n = size_t(batch) * h * h * c, out_n = size_t(batch) * p.out_h() * p.out_w() * co;
  std::vector<std::vector<float>> in, out, res, dnnl_out;
  for (int i = 0; i < copies; ++i) {
    in.push_back(random_floats(in_n, 1.f, rng));
    out.emplace_back(out_n);
    res.push_back(residual ? random_floats(out_n, 1.f, rng) : std::vector<float>());
  }
  const std::vector<float> w = random_floats(size_t(co) * c * k * k, 1.f / std::sqrt(float(c * k * k)), rng);
  const std::vector<float> bias = random_floats(co, 0.1f, rng);
  const ConvAlgorithm& im2win = cpu::im2win_conv_algorithm();
  AlignedBuffer packed(im2win.packed_weight_bytes(p)), workspace(im2win.workspace_bytes(p));
  cpu::set_l2_bytes_for_testing(variant_l2);  // 0: the machine's (no variant)
  AlignedBuffer variant_workspace(im2win.workspace_bytes(p));
  cpu::set_l2_bytes_for_testing(0);
  im2win.pack_weights(p, w.data(), packed.floats());
  std::vector<std::unique_ptr<PreparedConv>> dnnl;
  for (int i = 0; i < copies; ++i) {
    auto prepared = winfer_bench_peer()->prepare({p, Activation::kRelu, in[i].data(), w.data(), bias.data()}, threads);
    if (!prepared.ok()) {
      std::fprintf(stderr, "cold_ab: oneDNN: %s\n", prepared.status().message().c_str());
      std::exit(2);
    }
    dnnl.push_back(std::move(prepared).value());
  }
  auto run_im2win = [&](int i) {
    im2win.run(p, in[i].data(), packed.floats(), bias.data(), residual ? res[i].data() : nullptr, out[i].data(),
               workspace.data(), Activation::kRelu, threads);
  };
  auto run_variant = [&](int i) {
    cpu::set_l2_bytes_for_testing(variant_l2);
    im2win.run(p, in[i].data(), packed.floats(), bias.data(), residual ? res[i].data() : nullptr, out[i].data(),
               variant_workspace.data(), Activation::kRelu, threads);
    cpu::set_l2_bytes_for_testing(0);
  };
  if (!residual) {  // the same numbers first (with a residual, im2win adds it and oneDNN does not)
    run_im2win(0);
    dnnl[0]->run();
    const double e = max_rel(out[0].data(), dnnl[0]->output(), out_n);
    if (!(e <= 1e-4)) {
      std::fprintf(stderr, "cold_ab: %s: im2win and oneDNN differ (max rel %.3g)\n", spec, e);
      std::exit(1);
    }
  }
  if (variant_l2 > 0) {  // every schedule computes each output with the same calls: bitwise equal
    run_im2win(0);
    const std::vector<float> base = out[0];
    run_variant(0);
    if (max_rel(out[0].data(), base.data(), out_n) != 0) {
      std::fprintf(stderr, "cold_ab: %s: im2win differs with COLD_AB_L2\n", spec);
      std::exit(1);
    }
  }
  const bool cpu_clock = threads == 1;
  std::vector<double> ms[3];
  int order[3] = {0, 1, 2}, call = 0;
  const int contenders = variant_l2 > 0 ? 3 : 2;
  for (int r = 0; r < rounds + 3; ++r) {
    std::shuffle(order, order + contenders, rng);
    for (int c = 0; c < contenders; ++c) {
      const int which = order[c], i = call++ % copies;
      const double t0 = now_ms(cpu_clock);
      if (which == 0)
        run_im2win(i);
      else if (which == 1)
        dnnl[i]->run();
      else
        run_variant(i);
      if (r >= 3) ms[which].push_back(now_ms(cpu_clock) - t0);
    }
  }
  std::printf("%-22s | im2win %8.3f (p10 %8.3f) | onednn %8.3f (p10 %8.3f) | onednn/im2win %.3f (p10 %.3f)\n", spec,
              median(ms[0]), percentile(ms[0], 10), median(ms[1]), percentile(ms[1], 10), median(ms[1]) / median(ms[0]),
              percentile(ms[1], 10) / percentile(ms[0], 10));
  if (variant_l2 > 0)
    std::printf("%-22s | L2 variant %8.3f (p10 %8.3f) | im2win/variant %.3f (p10 %.3f)\n", "", median(ms[2]),
                percentile(ms[2], 10), median(ms[0]) / median(ms[2]), percentile(ms[0], 10) / percentile(ms[2], 10));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: cold_ab THREADS BATCH ROUNDS COPIES \"C H Co K S P R\" ...\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]), batch = std::atoi(argv[2]), rounds = std::atoi(argv[3]),
            copies = std::atoi(argv[4]);
  if (threads < 1 || batch < 1 || rounds < 1 || copies < 1) {
    std::fprintf(stderr, "cold_ab: THREADS, BATCH, ROUNDS and COPIES must be >= 1\n");
    return 2;
  }
  const char* variant = std::getenv("COLD_AB_L2");
  const int64_t variant_l2 = variant ? cpu::parse_cache_size(variant) : 0;
  if (variant_l2 < 0) {
    std::fprintf(stderr, "cold_ab: COLD_AB_L2='%s': expected a size such as 2M, 512K or 524288\n", variant);
    return 2;
  }
  std::mt19937 rng(1);
  std::printf("threads %d, batch %d, %d rounds, %d copies of the activations; L2 %lld bytes", threads, batch, rounds,
              copies, static_cast<long long>(cpu::l2_bytes()));
  if (variant_l2 > 0) std::printf(", variant L2 %lld bytes", static_cast<long long>(variant_l2));
  std::printf("\n");
  for (int a = 5; a < argc; ++a) bench_shape(argv[a], threads, batch, rounds, copies, variant_l2, rng);
}
