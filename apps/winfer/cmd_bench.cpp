// `winfer bench --layers NAME|FILE`: convolution layers timed with every algorithm of the engine
// and the peer libraries built in (bench/), as a table or JSON on stdout; progress on stderr.
// `winfer bench MODEL...|--zoo` (whole networks) is in cmd_bench_model.cpp; run_bench() below
// picks the mode.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "apps/winfer/bench_model.h"
#include "apps/winfer/commands.h"
#include "apps/winfer/format.h"
#include "bench/bench.h"
#include "bench/cuda/cuda_bench.h"
#include "bench/layer_set.h"
#include "winfer/session.h"

namespace winfer::cli {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

// "C64 56x56 -> Co64 56x56, k3x3 s1 p1 relu": the shape as one reads it, defaults left out.
std::string short_shape(const bench::BenchLayer& l) {
  const ConvParams& p = l.params;
  auto hw = [](int64_t h, int64_t w) { return std::to_string(h) + "x" + std::to_string(w); };
  std::string s = "C" + std::to_string(p.in_channels) + " " + hw(p.in_h, p.in_w) + " -> Co" +
                  std::to_string(p.out_channels) + " " + hw(p.out_h(), p.out_w()) + ", k" + hw(p.kernel_h, p.kernel_w);
  s += p.stride_h == p.stride_w ? " s" + std::to_string(p.stride_h) : " s" + hw(p.stride_h, p.stride_w);
  const bool symmetric = p.pad_top == p.pad_bottom && p.pad_left == p.pad_right && p.pad_top == p.pad_left;
  s += symmetric ? " p" + std::to_string(p.pad_top)
                 : " p" + std::to_string(p.pad_top) + "," + std::to_string(p.pad_left) + "," +
                       std::to_string(p.pad_bottom) + "," + std::to_string(p.pad_right);
  if (p.dilation_h != 1 || p.dilation_w != 1) s += " d" + hw(p.dilation_h, p.dilation_w);
  if (p.groups != 1) s += (p.is_depthwise() ? " depthwise g" : " g") + std::to_string(p.groups);
  s += std::string(", N") + std::to_string(p.batch) + (l.bias ? ", bias" : "") + ", " +
       bench::activation_key(l.activation);
  if (l.count > 1) s += ", x" + std::to_string(l.count) + " in the models";
  return s;
}

// Milliseconds with 4 significant digits or so: tiny layers take microseconds.
std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.1f" : v >= 1 ? "%.3f" : "%.4f", v);
  return buf;
}

// "-" when no peak was measured (--no-peak).
std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return v > 0 ? buf : "-";
}

std::string optional_bytes(const std::optional<size_t>& b) { return b ? human_bytes(double(*b)) : "n/a"; }

void print_header(const bench::BenchReport& r) {
  std::printf("layer set %s (%s): %zu layer(s), batch %lld, threads %d\n", r.layer_set.c_str(),
              r.layer_set_path.c_str(), r.layers.size(), static_cast<long long>(r.batch), r.threads);
  std::printf("isa %s; gemm: %s\npeers: %s\n", r.isa.c_str(), r.gemm.c_str(), r.peers.c_str());
  if (!r.peak_probes.empty()) {
    std::printf("FMA peak (FP32):");
    for (const FmaProbeResult& p : r.peak_probes) std::printf("  %s %d thr %.1f", p.isa.c_str(), p.threads, p.gflops);
    std::printf(" GFLOP/s; %% peak below is of %.1f\n", r.peak_gflops);
  }
  std::printf("started %s, load average %.2f\n", r.started_at.c_str(), r.load_average);
}

void print_layer_rows(const bench::BenchReport& r, const bench::BenchLayer& layer) {
  std::printf("\n%s  %s  %sFLOP\n", layer.name.c_str(), short_shape(layer).c_str(),
              human_count(double(layer.params.flops())).c_str());
  std::printf("  %-10s %10s %10s %10s %9s %7s %11s %11s %5s %9s\n", "conv", "median ms", "min ms", "max ms", "GFLOP/s",
              "% peak", "workspace", "packed W", "runs", "rel err");
  for (const bench::BenchResult& x : r.results) {
    if (x.layer != layer.name) continue;
    char err[32] = "-";
    if (x.max_rel_error) std::snprintf(err, sizeof err, "%.1e", *x.max_rel_error);
    std::printf("  %-10s %10s %10s %10s %9.1f %7s %11s %11s %5d %9s%s%s\n", x.conv.c_str(),
                ms(x.timing.median_ms).c_str(), ms(x.timing.min_ms).c_str(), ms(x.timing.max_ms).c_str(), x.gflops,
                percent(x.percent_peak).c_str(), optional_bytes(x.workspace_bytes).c_str(),
                optional_bytes(x.packed_weight_bytes).c_str(), x.timing.runs, err, x.mismatch ? "  MISMATCH" : "",
                x.note.empty() ? "" : ("  " + x.note).c_str());
  }
}

void print_summary(const bench::BenchReport& r) {
  if (r.summary.empty()) return;
  // Columns: im2col first, then the peers in the order they ran.
  std::vector<std::string> bases;
  for (const bench::SummaryRow& s : r.summary)
    for (const auto& [base, ratio] : s.speedup_vs)
      if (std::find(bases.begin(), bases.end(), base) == bases.end()) bases.push_back(base);
  std::stable_partition(bases.begin(), bases.end(), [](const std::string& b) { return b == "im2col"; });
  std::printf(
      "\nsummary over dense layers (groups == 1), geometric means; \"vs X\" = X's time / this one's (> 1: faster)\n");
  std::printf("  %-10s %6s %9s %7s", "conv", "layers", "GFLOP/s", "% peak");
  for (const std::string& b : bases) std::printf(" %11s", ("vs " + b).c_str());
  std::printf("\n");
  for (const bench::SummaryRow& s : r.summary) {
    std::printf("  %-10s %6d %9.1f %7s", s.conv.c_str(), s.layers, s.gflops, percent(s.percent_peak).c_str());
    for (const std::string& b : bases) {
      auto it = s.speedup_vs.find(b);
      if (it == s.speedup_vs.end())
        std::printf(" %11s", "-");
      else
        std::printf(" %10.2fx", it->second);
    }
    std::printf("\n");
  }
}

void print_table(const bench::BenchReport& r) {
  print_header(r);
  for (const bench::BenchLayer& l : r.layers) print_layer_rows(r, l);
  print_summary(r);
  for (const std::string& s : r.skipped) std::printf("skipped: %s\n", s.c_str());
}

int list_layers(const bench::LayerSet& set) {
  std::printf("layer set %s (%s): %s\n", set.name.c_str(), set.path.c_str(), set.description.c_str());
  for (const bench::BenchLayer& l : set.layers) {
    std::printf("  %-36s %s  %sFLOP\n", l.name.c_str(), short_shape(l).c_str(),
                human_count(double(l.params.flops())).c_str());
  }
  return 0;
}

// The host memory the largest layer of the set holds while it is timed: its random input and
// weights, the reference output and the output of the implementation timed (packed weights and
// workspaces come on top, and are checked by those who allocate them). Refused before the first
// layer runs, not at the allocation of a large --batch's input. In double: a large batch times
// a large layer may pass int64.
Status check_layer_set_memory(const bench::LayerSet& set) {
  double largest = 0;
  std::string name;
  for (const bench::BenchLayer& l : set.layers) {
    const ConvParams& p = l.params;
    const double input = double(p.batch) * double(p.in_channels) * double(p.in_h) * double(p.in_w);
    const double weights =
        double(p.out_channels) * double(p.in_channels_per_group()) * double(p.kernel_h) * double(p.kernel_w);
    const double output = double(p.batch) * double(p.out_channels) * double(p.out_h()) * double(p.out_w());
    const double bytes = (input + weights + 2 * output) * sizeof(float);
    if (bytes > largest) {
      largest = bytes;
      name = l.name;
    }
  }
  const double limit = double(SIZE_MAX / 2);
  return check_host_memory_for(
      "layer '" + name + "' at batch " + std::to_string(set.batch) + " (input, weights and two outputs)",
      largest < limit ? static_cast<size_t>(largest) : static_cast<size_t>(limit));
}

// The layer mode: `winfer bench --layers NAME|FILE`.
int run_bench_layers(const BenchArgs& args) {
  auto set = bench::load_layer_set(args.layers);
  if (!set.ok()) return fail(set.status());
  if (!args.filter.empty()) {
    auto& layers = set.value().layers;
    layers.erase(
        std::remove_if(layers.begin(), layers.end(),
                       [&](const bench::BenchLayer& l) { return l.name.find(args.filter) == std::string::npos; }),
        layers.end());
    if (layers.empty())
      return fail(invalid_argument("--filter '" + args.filter + "' matches no layer of " + args.layers));
  }
  if (args.batch > 0) bench::set_batch(&set.value(), args.batch);
  if (args.list) return list_layers(set.value());
  if (Status fits = check_layer_set_memory(set.value()); !fits.ok()) return fail(fits);
  if (args.device != "cpu") {  // the CUDA algorithms on the device (bench/cuda/cuda_bench.h)
    bench::CudaBenchOptions cuda_options;
    cuda_options.device = args.device;
    cuda_options.convs = split_list(args.conv);
    cuda_options.runs = std::max(args.runs, 20);
    cuda_options.verify = args.verify;
    cuda_options.seed = args.seed;
    cuda_options.log = [](const std::string& line) { std::cerr << line << "\n"; };
    const Status s = bench::cuda_bench_command(set.value(), cuda_options, args.json);
    return s.ok() ? 0 : fail(s);
  }

  bench::BenchOptions options;
  options.convs = split_list(args.conv);
  options.threads = args.threads;
  options.timing.runs = args.runs;
  options.timing.min_seconds = args.min_time;
  options.verify = args.verify;
  options.seed = args.seed;
  options.probe_peak = args.peak;
  options.log = [](const std::string& line) { std::cerr << line << "\n"; };
  auto report = bench::run_bench(std::move(set).value(), options);
  if (!report.ok()) return fail(report.status());

  if (args.json) {
    std::printf("%s\n", bench::report_json(report.value()).c_str());
  } else {
    print_table(report.value());
  }
  if (report.value().mismatches > 0) {
    return fail(internal_error(std::to_string(report.value().mismatches) +
                               " result(s) disagree with the direct convolution (MISMATCH above)"));
  }
  return 0;
}

}  // namespace

// Whole networks (bench_model.h) or single layers (above): exactly one of the two per call.
int run_bench(const BenchArgs& args) {
  const bool models = !args.models.empty() || args.zoo;
  if (models && !args.layers.empty()) {
    return fail(invalid_argument("give either models (MODEL... or --zoo) or --layers, not both"));
  }
  if (!models && args.layers.empty()) {
    return fail(invalid_argument("nothing to benchmark: give MODEL..., --zoo or --layers SET"));
  }
  if (models) {
    if (args.list || !args.filter.empty() || !args.verify || !args.peak) {
      return fail(invalid_argument("--list, --filter, --no-verify and --no-peak apply to --layers only"));
    }
    return run_bench_models(args);
  }
  // Layer mode: --device cuda[:N] times the CUDA algorithms (run_bench_layers).
  if (!args.size.empty()) {
    return fail(
        invalid_argument("--size applies to whole networks (MODEL... or --zoo) only; a layer set gives each "
                         "layer's size"));
  }
  if (args.per_layer) {
    return fail(invalid_argument("--per-layer applies to whole networks (MODEL... or --zoo) only"));
  }
  return run_bench_layers(args);
}

}  // namespace winfer::cli
