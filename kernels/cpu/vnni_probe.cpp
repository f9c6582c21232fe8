#include "kernels/cpu/vnni_probe.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/cpu_threads.h"

#if WINFER_X86_DISPATCH
#include <immintrin.h>
#endif

namespace winfer {
namespace {

volatile int32_t g_sink = 0;

#if WINFER_X86_DISPATCH
WINFER_AVX512_WARNINGS_BEGIN

// 16 chains: vpdpbusd has a latency of 5 cycles and issues up to twice per cycle on cores with
// two 512-bit ports, so 10 chains are the minimum; 16 leave margin and fit the 32 zmm with the
// two operands. The int32 sums wrap around harmlessly (integers have no slow path).
constexpr int kChains = 16;
constexpr int64_t kOpsPerIteration = int64_t{kChains} * 64 * 2;

__attribute__((target("avx512f,avx512bw,avx512vnni"))) int32_t vnni_chains(int64_t iterations) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(static_cast<char>(201)), b = _mm512_set1_epi8(-77);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  for (int i = 1; i < kChains; ++i) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
  return _mm512_reduce_add_epi32(acc[0]);
}

bool has_vnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");
}

// Sum over threads of ops / the thread's own CPU time (preemption by other processes does not
// count as slow arithmetic; see fma_probe.cpp).
double ops_per_second(int threads, int64_t iterations) {
  std::vector<double> seconds(static_cast<size_t>(threads), 0.0);
  cpu::run_on_threads_at_once(threads, [&](int t) {
    const double start = cpu::thread_cpu_seconds();
    const int32_t r = vnni_chains(iterations);
    seconds[static_cast<size_t>(t)] = cpu::thread_cpu_seconds() - start;
    if (r == 123456789) g_sink = r;
  });
  double rate = 0;
  for (double s : seconds)
    if (s > 0) rate += double(iterations) * double(kOpsPerIteration) / s;
  return rate;
}

WINFER_AVX512_WARNINGS_END
#endif

}  // namespace

double probe_vnni_peak_gops(int threads, double seconds, int repeats) {
#if WINFER_X86_DISPATCH
  if (!has_vnni()) return 0;
  // Grow the loop until a run lasts >= 10 ms (which also brings the core to its sustained
  // AVX-512 frequency), then size it for `seconds`.
  int64_t iterations = 1 << 12;
  double rate = ops_per_second(1, iterations);
  while (double(iterations) * double(kOpsPerIteration) / rate < 0.01 && iterations < (int64_t{1} << 40)) {
    iterations *= 4;
    rate = ops_per_second(1, iterations);
  }
  iterations = std::max<int64_t>(1, static_cast<int64_t>(seconds * rate / double(kOpsPerIteration)));
  const int used = std::min(std::max(threads, 1), cpu::affinity_cpu_count());
  double best = 0;
  for (int r = 0; r < std::max(repeats, 1); ++r) best = std::max(best, ops_per_second(used, iterations));
  return best * 1e-9;
#else
  (void)threads;
  (void)seconds;
  (void)repeats;
  return 0;
#endif
}

}  // namespace winfer
