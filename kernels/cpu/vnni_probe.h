// INT8 peak of this machine, measured like the FP32 one (fma_probe.h): independent chains of
// AVX-512 VNNI vpdpbusd (64 u8 x s8 multiply-adds each) held in registers, nothing loaded in
// the loop, each thread timed by its own CPU time. The INT8 kernels' "% of VNNI peak" divides
// by it (bench/tools/int8_layers.cpp, docs/PERFORMANCE.md).
#pragma once

namespace winfer {

// Giga-ops per second (2 ops per multiply-add, as GFLOP/s counts an FMA) that `threads` threads
// reach together with vpdpbusd on 512-bit vectors, the best of `repeats` runs of about `seconds`
// each; 0 when the CPU has no AVX-512 VNNI.
double probe_vnni_peak_gops(int threads, double seconds = 0.1, int repeats = 3);

}  // namespace winfer
