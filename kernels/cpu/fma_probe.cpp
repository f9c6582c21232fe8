#include "kernels/cpu/fma_probe.h"

#include <algorithm>
#include <cstdint>
#include <vector>
#include <map>
#include <mutex>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_threads.h"

#if WINFER_X86_DISPATCH
#include <immintrin.h>
#endif

namespace winfer {
namespace {

// Keeps the chains' results observable, so the compiler cannot drop the loops.
volatile float g_sink = 0.f;

// acc = acc * a + b converges to b / (1 - a) ~ 0.84 from any start near 1: the values stay
// normal floats (no overflow, no denormal slow path) however long the probe runs.
constexpr float kMultiplier = 0.9999999f;
constexpr float kAddend = 1e-7f;

#if WINFER_X86_DISPATCH

// 16 chains of 16 lanes: an FMA has a latency of 4 cycles on recent cores and up to two issue
// per cycle, so 8 independent chains are the minimum to saturate them; 16 leave margin and
// still fit the 32 zmm registers with the two constants.
constexpr int kAvx512Chains = 16;
WINFER_TARGET_AVX512 float fma_chains_avx512(int64_t iterations) {
  __m512 acc[kAvx512Chains];
  for (int i = 0; i < kAvx512Chains; ++i) acc[i] = _mm512_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(kMultiplier), b = _mm512_set1_ps(kAddend);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kAvx512Chains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  for (int i = 1; i < kAvx512Chains; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  float lanes[16];
  _mm512_storeu_ps(lanes, acc[0]);
  float sum = 0.f;
  for (float v : lanes) sum += v;
  return sum;
}

// 12 chains of 8 lanes: Haswell's FMA latency is 5 cycles with two ports (10 chains needed);
// 12 accumulators plus the two constants fit the 16 ymm registers without spilling.
constexpr int kAvx2Chains = 12;
WINFER_TARGET_AVX2 float fma_chains_avx2(int64_t iterations) {
  __m256 acc[kAvx2Chains];
  for (int i = 0; i < kAvx2Chains; ++i) acc[i] = _mm256_set1_ps(1.0f + 0.001f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(kMultiplier), b = _mm256_set1_ps(kAddend);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAvx2Chains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  for (int i = 1; i < kAvx2Chains; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  float lanes[8];
  _mm256_storeu_ps(lanes, acc[0]);
  float sum = 0.f;
  for (float v : lanes) sum += v;
  return sum;
}

#endif  // WINFER_X86_DISPATCH

struct Variant {
  const char* isa;
  float (*chains)(int64_t iterations);
  int64_t flops_per_iteration;  // chains x lanes x 2
};

std::vector<Variant> supported_variants() {
  std::vector<Variant> variants;
#if WINFER_X86_DISPATCH
  // detected_isa() is the widest ISA; AVX-512 machines also run the AVX2 variant, which shows
  // what a kernel limited to 8 lanes can reach there.
  const cpu::Isa isa = cpu::detected_isa();
  if (isa == cpu::Isa::kAvx512) variants.push_back({"avx512", fma_chains_avx512, int64_t{kAvx512Chains} * 16 * 2});
  if (isa >= cpu::Isa::kAvx2) variants.push_back({"avx2", fma_chains_avx2, int64_t{kAvx2Chains} * 8 * 2});
#endif
  return variants;
}

// Runs the variant's loop on `threads` threads at once and returns the FLOP/s they reached
// together: the sum over threads of FLOPs / the thread's own CPU time. CPU time rather than
// wall time, because the probe measures the machine, not the moment: on a busy machine (say,
// a compiler running on the same cores) the threads get preempted, which wall time would count
// as slow arithmetic. Sibling hyperthreads still share their core's FMA units while both run,
// so that sharing does show.
double flops_per_second(const Variant& v, int threads, int64_t iterations) {
  std::vector<double> seconds(static_cast<size_t>(threads), 0.0);
  cpu::run_on_threads_at_once(threads, [&](int t) {
    const double start = cpu::thread_cpu_seconds();
    const float r = v.chains(iterations);
    seconds[static_cast<size_t>(t)] = cpu::thread_cpu_seconds() - start;
    if (r == 12345.f) g_sink = r;  // practically never true, but the compiler cannot know
  });
  double rate = 0;
  for (double s : seconds) {
    if (s > 0) rate += double(iterations) * double(v.flops_per_iteration) / s;
  }
  return rate;
}

// Iterations for one run of about `seconds` on one thread. Growing the loop until a run lasts
// >= 10 ms also warms the core up to its sustained (possibly AVX-512-licensed) frequency.
int64_t calibrate(const Variant& v, double seconds) {
  int64_t iterations = 1 << 12;
  double rate = flops_per_second(v, 1, iterations);
  while (double(iterations) * double(v.flops_per_iteration) / rate < 0.01 && iterations < (int64_t{1} << 40)) {
    iterations *= 4;
    rate = flops_per_second(v, 1, iterations);
  }
  return std::max<int64_t>(1, static_cast<int64_t>(seconds * rate / double(v.flops_per_iteration)));
}

FmaProbeResult measure(const Variant& v, int threads, double seconds, int repeats) {
  const int64_t iterations = calibrate(v, seconds);
  // More threads than CPUs would time-share cores, which CPU time cannot see.
  const int used = std::min(threads, cpu::affinity_cpu_count());
  double best = 0;
  for (int r = 0; r < std::max(repeats, 1); ++r) best = std::max(best, flops_per_second(v, used, iterations));
  return {v.isa, threads, best * 1e-9};
}

}  // namespace

std::vector<FmaProbeResult> probe_fma_peak(int threads, double seconds, int repeats) {
  threads = std::max(threads, 1);
  std::vector<FmaProbeResult> results;
  for (const Variant& v : supported_variants()) results.push_back(measure(v, threads, seconds, repeats));
  return results;
}

double fma_peak_gflops(int threads) {
  static std::mutex mutex;
  static std::map<int, double> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(threads);
  if (it != cache.end()) return it->second;
  double best = 0;
  for (const FmaProbeResult& r : probe_fma_peak(threads)) best = std::max(best, r.gflops);
  cache[threads] = best;
  return best;
}

}  // namespace winfer
