// FP32 peak of this machine, measured: how many single-precision FLOP/s the cores sustain when
// they do nothing but fused multiply-adds. `winfer bench` divides each kernel's GFLOP/s by it
// ("% of peak"), which says how much headroom is left independently of the clock speed, turbo
// state and number of FMA ports of the machine at hand (a data sheet number would be wrong on
// virtual machines and under AVX-512 frequency licences).
//
// The probe runs, on each of `threads` OpenMP threads, many independent chains of vector FMAs
// (acc_i = acc_i * a + b) held in registers: more chains than FMA latency x FMA ports, so the
// FMA units never wait for a previous result. Nothing is loaded from memory inside the loop.
// Each thread's time is its own CPU time, so a machine busy with other work (preemption) does
// not lower the result; more threads than usable CPUs are capped to that number, since threads
// time-sharing a CPU would look faster in CPU time than they are.
#pragma once

#include <string>
#include <vector>

namespace winfer {

struct FmaProbeResult {
  std::string isa;  // "avx512" (16 lanes) or "avx2" (8 lanes, FMA3)
  int threads = 1;
  double gflops = 0;  // 2 FLOP per lane per FMA
};

// Measures every FMA variant this CPU supports (AVX-512 first) on `threads` threads. Each
// variant runs `repeats` times for about `seconds` (per thread) after a warm-up; the best rate
// counts. Empty when the CPU has no FMA (or is not x86): callers then report no peak.
std::vector<FmaProbeResult> probe_fma_peak(int threads, double seconds = 0.1, int repeats = 3);

// The highest GFLOP/s of probe_fma_peak(threads), measured once per thread count per process
// and cached (thread-safe); 0 when there is no FMA variant.
double fma_peak_gflops(int threads);

}  // namespace winfer
