// `winfer bench --layers SET --device cuda[:N]`: the CUDA convolution algorithms
// (kernels/cuda/, cuda::ConvAlgorithm) timed on the device, one layer at a time, side by side:
// median milliseconds over at least `runs` CUDA-event-timed calls after a warm-up, TFLOPS, % of
// the device's FP32 peak, workspace bytes and the layer's total device memory, each output
// checked against the CPU engine.
//
// cuda_bench.cpp is the native implementation (run_cuda_bench_on_device, built when the CUDA
// backend is), reached through run_cuda_bench(): linked in (linked/cuda_bench_linked.cpp: the
// tests) or in the bench's CUDA module, libwinfer_bench_cuda.so, which module/cuda_bench_loader.cpp
// opens the first time (the CLI: so that the CLI itself holds no CUDA code or cudart).
// no_cuda_bench.cpp is the stub of a CPU-only build, whose run_cuda_bench() says so.
// cuda_report.cpp (every build) prints the report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/layer_set.h"
#include "bench/stats.h"  // Timing
#include "winfer/status.h"

namespace winfer::bench {

struct CudaBenchOptions {
  std::string device = "cuda";  // "cuda" (device 0) or "cuda:N"
  // cuda::ConvAlgorithm names; empty or {"all"}: im2win, im2col, direct, cudnn (and depthwise on
  // depthwise layers), those this build has.
  std::vector<std::string> convs;
  int runs = 20;                 // timed calls at least (more, up to 1000, until min_seconds)
  double min_seconds = 0.1;      // of timed calls, per (layer, conv)
  double warmup_seconds = 0.05;  // and at least 3 calls
  bool verify = true;            // against the CPU engine's convolution
  double tolerance = 1e-3;       // max |out - ref| / max |ref| accepted
  int cpu_threads = 0;           // of the CPU reference; 0: all hardware threads
  uint64_t seed = 1;
  bool allow_tf32 = false;                      // cuBLAS/cuDNN TF32 tensor-core math (off: FP32, as our kernels)
  std::function<void(const std::string&)> log;  // progress lines; may be empty
};

struct CudaBenchRow {
  std::string layer, conv;
  ConvParams params;
  int64_t flops = 0;  // 2*N*Co*(C/g)*Kh*Kw*Ho*Wo
  Timing timing;
  double tflops = 0, percent_peak = 0;
  size_t workspace_bytes = 0, packed_weight_bytes = 0;
  size_t device_bytes = 0;              // input + output + packed weights + bias + workspace
  std::optional<double> max_rel_error;  // vs the CPU engine; nullopt when not verified
  bool mismatch = false;
  std::string note;  // e.g. im2win's tile and chunks
};

struct CudaBenchReport {
  std::string layer_set, layer_set_path;
  int64_t batch = 1;
  std::string device_name;
  int device = 0, sms = 0, fp32_lanes_per_sm = 0, cc_major = 0, cc_minor = 0;
  double clock_mhz = 0, peak_tflops = 0;  // FP32 peak: SMs x clock x lanes x 2
  std::string cpu_reference;              // the CPU algorithm outputs were checked against
  bool tf32 = false;
  std::vector<CudaBenchRow> rows;
  std::vector<std::string> skipped;  // "layer: conv: why"
  int mismatches = 0;
};

// Fails with "no CUDA device: <reason>" when there is none (or the build has no CUDA backend).
Result<CudaBenchReport> run_cuda_bench(const LayerSet& set, const CudaBenchOptions& options);
// The implementation (cuda_bench.cpp); named apart so that inside the module no call can bind to
// the loading program's run_cuda_bench().
Result<CudaBenchReport> run_cuda_bench_on_device(const LayerSet& set, const CudaBenchOptions& options);

// The side-by-side table: per layer one row per algorithm, then a summary against cudnn and
// im2col (geometric means, wins, workspace and memory ratios).
std::string cuda_report_table(const CudaBenchReport& report);
std::string cuda_report_json(const CudaBenchReport& report);

// Runs and prints the table (or JSON) on stdout; progress on stderr. An error when the run
// fails or an output disagrees with the CPU.
Status cuda_bench_command(const LayerSet& set, const CudaBenchOptions& options, bool json);

}  // namespace winfer::bench
