#include "bench/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <set>

#include "bench/peers/peers.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/gemm.h"

namespace winfer::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// Random inputs, weights and bias for one layer: uniform in [-1, 1) for the input, scaled by
// 1/sqrt(fan-in) for the weights so that outputs stay near unit size whatever K is (about half
// of them survive a ReLU), and small biases. Nothing is zero, so no kernel can skip work.
struct LayerData {
  std::vector<float> input, weight, bias;
};

std::vector<float> uniform(size_t n, float scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

LayerData make_data(const ConvParams& p, bool with_bias, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t fan_in = p.in_channels_per_group() * p.kernel_h * p.kernel_w;
  LayerData d;
  d.input = uniform(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels), 1.f, rng);
  d.weight = uniform(static_cast<size_t>(p.out_channels * fan_in), 1.f / std::sqrt(float(fan_in)), rng);
  if (with_bias) d.bias = uniform(static_cast<size_t>(p.out_channels), 0.1f, rng);
  return d;
}

size_t output_floats(const ConvParams& p) {
  return static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
}

// max|out - ref| / max|ref|: relative to the output's scale rather than element by element, so
// that outputs near zero (there are many after a ReLU) do not turn rounding into "errors".
// NaN when any element is NaN or infinite (an output never written stays NaN).
double max_relative_error(const float* out, const std::vector<float>& ref) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double diff = std::fabs(double(out[i]) - double(ref[i]));
    if (!std::isfinite(diff)) return std::nan("");
    max_diff = std::max(max_diff, diff);
    max_ref = std::max(max_ref, std::fabs(double(ref[i])));
  }
  return max_diff / std::max(max_ref, 1e-30);
}

const ConvProvider* find_engine_provider(const std::string& name) {
  for (const ConvProvider* p : engine_providers())
    if (p->name() == name) return p;
  return nullptr;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S%z", &local);
  return buf;
}

void log_result(const BenchOptions& o, const BenchResult& r) {
  if (!o.log) return;
  char err[32] = "";
  if (r.max_rel_error) std::snprintf(err, sizeof err, "  err %.1e", *r.max_rel_error);
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-10s %10.3f ms  %8.1f GFLOP/s  %5.1f%% peak  %4d runs%s", r.layer.c_str(),
                r.conv.c_str(), r.timing.median_ms, r.gflops, r.percent_peak, r.timing.runs, err);
  o.log(line);
}

// Runs the reference (`direct`) once for the outputs the others are checked against.
Result<std::vector<float>> reference_output(const ConvProblem& problem, int threads) {
  const ConvProvider* direct = find_engine_provider("direct");
  if (direct == nullptr) return internal_error("the engine has no 'direct' algorithm to verify against");
  WINFER_ASSIGN_OR_RETURN(std::unique_ptr<PreparedConv> conv, direct->prepare(problem, threads));
  conv->run();
  return std::vector<float>(conv->output(), conv->output() + output_floats(problem.params));
}

// One implementation prepared for one layer, timed with the others.
struct Contender {
  const ConvProvider* provider;
  std::unique_ptr<PreparedConv> conv;
};

// The layer's result for one implementation after its timed calls: output checked.
BenchResult layer_result(const BenchLayer& layer, const Contender& c, const ConvProblem& problem, const Timing& timing,
                         const std::vector<float>* reference, const BenchOptions& o, const BenchReport& report) {
  BenchResult r;
  r.layer = layer.name;
  r.conv = c.provider->name();
  r.peer = c.provider->is_peer();
  r.params = problem.params;
  r.activation = problem.activation;
  r.flops = problem.params.flops();
  r.timing = timing;
  r.gflops = double(r.flops) / (r.timing.median_ms * 1e6);
  r.percent_peak = report.peak_gflops > 0 ? 100.0 * r.gflops / report.peak_gflops : 0;
  r.workspace_bytes = c.conv->workspace_bytes();
  r.packed_weight_bytes = c.conv->packed_weight_bytes();
  r.note = c.conv->note();
  if (reference != nullptr) {
    r.max_rel_error = max_relative_error(c.conv->output(), *reference);
    r.mismatch = !(*r.max_rel_error <= o.tolerance);
  }
  return r;
}

void log_mismatch(const BenchOptions& o, const BenchResult& r) {
  if (!r.mismatch || !o.log) return;
  char buf[256];
  std::snprintf(buf, sizeof buf, "MISMATCH: %s on %s: max relative error %.3g vs direct (tolerance %.1g)",
                r.conv.c_str(), r.layer.c_str(), *r.max_rel_error, o.tolerance);
  o.log(buf);
}

void bench_layer(const BenchLayer& layer, size_t index, const std::vector<const ConvProvider*>& requested,
                 bool default_list, const BenchOptions& o, BenchReport* report) {
  const LayerData data = make_data(layer.params, layer.bias, o.seed + index);
  ConvProblem problem;
  problem.params = layer.params;
  problem.activation = layer.activation;
  problem.input_nhwc = data.input.data();
  problem.weight_oihw = data.weight.data();
  problem.bias = layer.bias ? data.bias.data() : nullptr;

  std::vector<float> reference;
  if (o.verify) {
    auto ref = reference_output(problem, o.threads);
    if (ref.ok())
      reference = std::move(ref).value();
    else if (o.log)
      o.log("cannot verify " + layer.name + ": " + ref.status().message());
  }
  const std::vector<const ConvProvider*> convs = convs_for_layer(requested, layer.params);
  for (const ConvProvider* provider : requested) {
    if (std::find(convs.begin(), convs.end(), provider) == convs.end() && !default_list) {
      report->skipped.push_back(layer.name + ": " + provider->name() + ": does not support " +
                                layer.params.to_string());
    }
  }
  // All of them prepared first, then timed against each other (time_interleaved).
  std::vector<Contender> contenders;
  for (const ConvProvider* provider : convs) {
    auto prepared = provider->prepare(problem, o.threads);
    if (!prepared.ok()) {
      const std::string why =
          layer.name + ": " + provider->name() + ": could not prepare: " + prepared.status().message();
      report->skipped.push_back(why);
      if (o.log) o.log("SKIPPED " + why);
      continue;
    }
    contenders.push_back({provider, std::move(prepared).value()});
  }
  std::vector<std::function<void()>> calls;
  for (Contender& c : contenders) calls.push_back([conv = c.conv.get()] { conv->run(); });
  const std::vector<Timing> timings = time_interleaved(calls, o.timing, o.seed + index);
  for (size_t i = 0; i < contenders.size(); ++i) {
    BenchResult r =
        layer_result(layer, contenders[i], problem, timings[i], reference.empty() ? nullptr : &reference, o, *report);
    log_result(o, r);
    log_mismatch(o, r);
    report->mismatches += r.mismatch ? 1 : 0;
    report->results.push_back(std::move(r));
  }
}

void measure_peak(const BenchOptions& o, BenchReport* report) {
  std::vector<int> thread_counts = {1};
  if (o.threads != 1) thread_counts.push_back(o.threads);
  for (int t : thread_counts) {
    for (const FmaProbeResult& r : probe_fma_peak(t)) {
      report->peak_probes.push_back(r);
      if (t == o.threads) report->peak_gflops = std::max(report->peak_gflops, r.gflops);
    }
  }
}

}  // namespace

// Warm-up: caches, page faults of fresh buffers, the OpenMP team, the cores' clock. At least one
// call and options.warmup_seconds; returns the seconds per call it saw.
double warm_up(const std::function<void()>& call, const TimingOptions& options) {
  const Clock::time_point warm_start = Clock::now();
  int warm_calls = 0;
  do {
    call();
    ++warm_calls;
  } while (seconds_since(warm_start) < options.warmup_seconds && warm_calls < 10000);
  return seconds_since(warm_start) / warm_calls;
}

Timing time_calls(const std::function<void()>& call, const TimingOptions& options) {
  const double per_call = warm_up(call, options);

  int runs = std::max(options.runs, 1);
  if (per_call * runs < options.min_seconds) {
    const double wanted = std::ceil(options.min_seconds / std::max(per_call, 1e-9));
    runs = static_cast<int>(std::min<double>(std::max(options.max_runs, runs), wanted));
  }
  std::vector<double> ms(static_cast<size_t>(runs));
  for (double& t : ms) {
    const Clock::time_point start = Clock::now();
    call();
    t = seconds_since(start) * 1e3;
  }
  return summarize(std::move(ms));
}

std::vector<Timing> time_interleaved(const std::vector<std::function<void()>>& calls, const TimingOptions& options,
                                     uint64_t seed) {
  double per_round = 0;                                                // seconds of one call of each
  for (const auto& call : calls) per_round += warm_up(call, options);  // each on its own
  int rounds = std::max(options.runs, 1);
  const double wanted = std::ceil(options.min_seconds * double(calls.size()) / std::max(per_round, 1e-9));
  if (wanted > rounds) rounds = static_cast<int>(std::min<double>(std::max(options.max_runs, rounds), wanted));

  std::vector<std::vector<double>> ms(calls.size());
  std::vector<size_t> order(calls.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (int r = 0; r < rounds; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      const Clock::time_point start = Clock::now();
      calls[i]();
      ms[i].push_back(seconds_since(start) * 1e3);
    }
  }
  std::vector<Timing> timings;
  for (auto& m : ms) timings.push_back(summarize(std::move(m)));
  return timings;
}

// The peers are loaded here, and only those asked for (all built ones for "all"): their modules
// (peers.h) stay unmapped in a bench of the engine's algorithms alone.
Result<std::vector<const ConvProvider*>> resolve_convs(const std::vector<std::string>& names) {
  const std::vector<std::string> built_peers = built_peer_names();
  if (names.empty() || (names.size() == 1 && names[0] == "all")) {
    std::vector<const ConvProvider*> all = engine_providers();
    for (const std::string& peer : built_peers) {
      WINFER_ASSIGN_OR_RETURN(const ConvProvider* p, load_peer(peer));
      all.push_back(p);
    }
    return all;
  }

  std::vector<std::string> known;
  for (const ConvProvider* p : engine_providers()) known.push_back(p->name());
  known.insert(known.end(), built_peers.begin(), built_peers.end());
  std::vector<const ConvProvider*> out;
  for (const std::string& name : names) {
    const ConvProvider* p = find_engine_provider(name);
    if (p == nullptr && contains(built_peers, name)) {
      WINFER_ASSIGN_OR_RETURN(p, load_peer(name));
    }
    if (p == nullptr) {
      if (contains(known_peer_names(), name)) {
        return unsupported("--conv " + name +
                           ": this peer is not built in; install its library and reconfigure "
                           "with -DWINFER_BENCH_PEERS=ON (see docs/PERFORMANCE.md)");
      }
      return invalid_argument("--conv: unknown implementation '" + name + "' (known: " + join(known) + ")");
    }
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

std::vector<const ConvProvider*> convs_for_layer(const std::vector<const ConvProvider*>& requested,
                                                 const ConvParams& p) {
  std::vector<const ConvProvider*> out;
  for (const ConvProvider* c : requested) {
    // The engine's depthwise kernel supports depthwise layers only, so it is listed on those
    // alone (its supports(), not its name, says so).
    if (!c->supports(p)) continue;
    out.push_back(c);
  }
  return out;
}

std::string engine_isa() {
  switch (cpu::cpu_isa()) {
    case cpu::Isa::kAvx512: return "avx512";
    case cpu::Isa::kAvx2: return "avx2";
    case cpu::Isa::kGeneric: break;
  }
  return "generic";
}

Result<BenchReport> run_bench(LayerSet set, const BenchOptions& options) {
  if (options.threads < 1) return invalid_argument("--threads must be >= 1");
  if (options.batch > 0) set_batch(&set, options.batch);
  WINFER_ASSIGN_OR_RETURN(std::vector<const ConvProvider*> requested, resolve_convs(options.convs));
  const bool default_list = options.convs.empty() || (options.convs.size() == 1 && options.convs[0] == "all");

  BenchReport report;
  report.layer_set = set.name;
  report.layer_set_path = set.path;
  report.layers = set.layers;
  report.threads = options.threads;
  report.batch = set.batch;
  report.isa = engine_isa();
  report.gemm = gemm_backend_description();  // loads OpenBLAS now, not inside a timing
  report.peers = peer_description(requested);
  report.started_at = now_iso8601();
  double load[1];
  if (getloadavg(load, 1) == 1) report.load_average = load[0];
  if (options.probe_peak) measure_peak(options, &report);

  for (size_t i = 0; i < set.layers.size(); ++i) {
    bench_layer(set.layers[i], i, requested, default_list, options, &report);
  }
  report.summary = summarize(report.results);
  return report;
}

std::vector<SummaryRow> summarize(const std::vector<BenchResult>& results) {
  // conv -> layer -> result, dense layers only, wrong results left out.
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, const BenchResult*>> by_conv;
  std::set<std::string> peers;
  for (const BenchResult& r : results) {
    if (r.params.groups != 1 || r.mismatch) continue;
    if (!by_conv.count(r.conv)) order.push_back(r.conv);
    by_conv[r.conv][r.layer] = &r;
    if (r.peer) peers.insert(r.conv);
  }
  std::vector<std::string> baselines = {"im2col"};
  baselines.insert(baselines.end(), peers.begin(), peers.end());

  std::vector<SummaryRow> rows;
  for (const std::string& conv : order) {
    const auto& mine = by_conv[conv];
    SummaryRow row;
    row.conv = conv;
    row.layers = static_cast<int>(mine.size());
    std::vector<double> gflops, percent;
    for (const auto& [layer, r] : mine) {
      gflops.push_back(r->gflops);
      if (r->percent_peak > 0) percent.push_back(r->percent_peak);
    }
    row.gflops = geomean(gflops);
    row.percent_peak = geomean(percent);
    for (const std::string& base : baselines) {
      if (base == conv || !by_conv.count(base)) continue;
      std::vector<double> ratios;
      for (const auto& [layer, r] : mine) {
        auto other = by_conv[base].find(layer);
        if (other != by_conv[base].end()) ratios.push_back(other->second->timing.median_ms / r->timing.median_ms);
      }
      if (!ratios.empty()) row.speedup_vs[base] = geomean(ratios);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace winfer::bench
