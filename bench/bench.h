// The convolution benchmark behind `winfer bench`: every layer of a layer set with every
// requested implementation (the engine's algorithms and the peer libraries), on random data,
// timed the same way, each output checked against the engine's `direct` convolution.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/conv_provider.h"
#include "bench/layer_set.h"
#include "bench/stats.h"  // Timing
#include "kernels/cpu/fma_probe.h"
#include "winfer/status.h"

namespace winfer::bench {

// How one (layer, implementation) pair is timed. After a warm-up of at least `warmup_seconds`
// (and two calls), `runs` calls are timed one by one; when they would take less than
// `min_seconds` in total (tiny layers), more calls are timed, up to `max_runs`, so that the
// median is not the median of a few microseconds of noise.
struct TimingOptions {
  int runs = 20;
  int max_runs = 1000;
  double min_seconds = 0.25;
  double warmup_seconds = 0.02;
};

// Times `call` as described above.
Timing time_calls(const std::function<void()>& call, const TimingOptions& options);

// Times several calls against each other, as `winfer bench --layers` does for the
// implementations of one layer: after each one's warm-up, rounds call every one once, in an
// order shuffled afresh each round (from `seed`), so that a slow minute of a shared machine, or
// the cache state one call leaves, falls on all of them alike instead of on whichever was being
// timed then. Every call gets the same number of rounds: at least `runs`, more while the rounds
// would take less than `min_seconds` times the number of calls in all, at most `max_runs`.
// Returns each call's timing, in the order given.
std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& calls, const TimingOptions& options,
                                     uint64_t seed);

struct BenchOptions {
  // Implementation names; empty (or {"all"}): every engine algorithm that supports the layer,
  // without "depthwise" on dense layers, plus every peer built in.
  std::vector<std::string> convs;
  int threads = 1;
  int64_t batch = 0;  // 0: the layer set's
  TimingOptions timing;
  bool verify = true;
  // Largest accepted max|out - ref| / max|ref| against `direct` (FP32 sums in another order
  // differ by ~1e-6 of the output's magnitude; a wrong result differs by far more).
  double tolerance = 1e-4;
  uint64_t seed = 1;
  bool probe_peak = true;
  // Progress lines (one per timed pair, mismatches, skips), e.g. to stderr; may be empty.
  std::function<void(const std::string&)> log;
};

struct BenchResult {
  std::string layer, conv;
  bool peer = false;
  ConvParams params;
  Activation activation = Activation::kNone;
  int64_t flops = 0;  // nominal: 2*N*Co*(C/g)*Kh*Kw*Ho*Wo
  Timing timing;
  double gflops = 0;
  double percent_peak = 0;  // 0 when no peak was measured
  std::optional<size_t> workspace_bytes, packed_weight_bytes;
  std::optional<double> max_rel_error;  // vs direct; nullopt when not verified
  bool mismatch = false;
  std::string note;
};

// Geometric means over the dense layers (groups == 1) an implementation ran on.
struct SummaryRow {
  std::string conv;
  int layers = 0;
  double gflops = 0, percent_peak = 0;
  // Speed-up against another implementation: geometric mean of other_ms / this_ms over the
  // dense layers both ran on (> 1: this one is faster). Keys: "im2col" and each peer.
  std::map<std::string, double> speedup_vs;
};

struct BenchReport {
  std::string layer_set, layer_set_path;
  std::vector<BenchLayer> layers;
  int threads = 1;
  int64_t batch = 1;
  std::string isa, gemm, peers;
  double peak_gflops = 0;                   // best FMA variant at `threads`
  std::vector<FmaProbeResult> peak_probes;  // every variant, at 1 thread and at `threads`
  std::string started_at;                   // local time, ISO 8601
  double load_average = -1;                 // 1-minute load average at the start (-1: unknown)
  std::vector<BenchResult> results;
  std::vector<std::string> skipped;  // "layer: conv: why"
  std::vector<SummaryRow> summary;
  int mismatches = 0;
};

// Resolves --conv names: the engine's algorithms and the built peers, or an error naming the
// known ones (and saying which peers exist but are not built).
Result<std::vector<const ConvProvider*>> resolve_convs(const std::vector<std::string>& names);

// The implementations of `requested` (the default list or the user's) that support one layer:
// the engine's depthwise kernel only on depthwise layers, as its supports() says.
std::vector<const ConvProvider*> convs_for_layer(const std::vector<const ConvProvider*>& requested,
                                                 const ConvParams& p);

Result<BenchReport> run_bench(LayerSet set, const BenchOptions& options);

std::vector<SummaryRow> summarize(const std::vector<BenchResult>& results);

// The report as one JSON object: {"peak_gflops", "threads", "isa", "gemm", "results": [...], ...}.
std::string report_json(const BenchReport& report);

// "avx512", "avx2" or "generic": the widest ISA the engine's kernels use on this CPU.
std::string engine_isa();

}  // namespace winfer::bench
