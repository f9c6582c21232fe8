// The statistics of timed calls, written once for every bench: `winfer bench` on layers (the CPU
// one, bench.cpp; the CUDA one, cuda/cuda_bench.cpp and cuda/cuda_report.cpp), on whole models
// (apps/winfer/cmd_bench_model.cpp), and `winfer run`'s timing line.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace winfer::bench {

// What a bench reports of a series of timed calls.
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
};

// The middle value (the mean of the two middle ones for an even count); 0 for none.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// Nearest-rank percentile `q` (0-100] of unsorted values; 0 for none.
inline double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q / 100.0 * double(values.size()))));
  return values[std::min(rank, values.size()) - 1];
}

// Geometric mean of positive values (speed-ups, throughputs); 0 for none.
inline double geomean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (double x : values) log_sum += std::log(x);
  return std::exp(log_sum / double(values.size()));
}

// Median, minimum, maximum and count of the calls' milliseconds (all 0 for none).
inline Timing summarize(std::vector<double> ms) {
  Timing t;
  if (ms.empty()) return t;
  std::sort(ms.begin(), ms.end());
  t.runs = static_cast<int>(ms.size());
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.median_ms = median(std::move(ms));
  return t;
}

// The stopping rule of the benches that time call after call until they have enough: on while
// fewer than `runs` calls were timed, or while those took less than `min_seconds` in all
// (`elapsed_ms`) and fewer than `max_runs` were timed (tiny layers and models).
inline bool more_runs(size_t timed, int runs, double elapsed_ms, double min_seconds, size_t max_runs = 1000) {
  return static_cast<int>(timed) < runs || (elapsed_ms < min_seconds * 1e3 && timed < max_runs);
}

// A Timing's fields in a JSON report, under the names scripts read (median_ms, min_ms, max_ms,
// runs), in that order after what `json` holds (nlohmann::json or ordered_json).
template <class Json>
void add_timing(Json* json, const Timing& t) {
  (*json)["median_ms"] = t.median_ms;
  (*json)["min_ms"] = t.min_ms;
  (*json)["max_ms"] = t.max_ms;
  (*json)["runs"] = t.runs;
}

}  // namespace winfer::bench
