// Printing the CUDA layer bench (cuda_bench.h): the side-by-side table, its summary against cudnn
// and im2col, and JSON. Built with and without the CUDA backend.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cuda/cuda_bench.h"
#include "bench/stats.h"

namespace winfer::bench {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string bytes_text(size_t b) {
  const double v = static_cast<double>(b);
  if (v >= 1024.0 * 1024 * 1024) return fmt("%.2f GiB", v / (1024.0 * 1024 * 1024));
  if (v >= 1024.0 * 1024) return fmt("%.1f MiB", v / (1024.0 * 1024));
  if (v >= 1024.0) return fmt("%.1f KiB", v / 1024.0);
  return fmt("%.0f B", v);
}

std::string ms_text(double v) { return fmt(v >= 100 ? "%.1f" : v >= 1 ? "%.3f" : "%.4f", v); }

std::string shape_text(const ConvParams& p) {
  std::string s = "C" + std::to_string(p.in_channels) + " " + std::to_string(p.in_h) + "x" + std::to_string(p.in_w) +
                  " -> Co" + std::to_string(p.out_channels) + " " + std::to_string(p.out_h()) + "x" +
                  std::to_string(p.out_w()) + ", k" + std::to_string(p.kernel_h) + "x" + std::to_string(p.kernel_w) +
                  " s" + std::to_string(p.stride_h) + " p" + std::to_string(p.pad_top);
  if (p.groups != 1) s += " g" + std::to_string(p.groups);
  return s + ", N" + std::to_string(p.batch);
}

const CudaBenchRow* find_row(const CudaBenchReport& r, const std::string& layer, const std::string& conv) {
  for (const CudaBenchRow& row : r.rows)
    if (row.layer == layer && row.conv == conv) return &row;
  return nullptr;
}

std::vector<std::string> layer_order(const CudaBenchReport& r) {
  std::vector<std::string> layers;
  for (const CudaBenchRow& row : r.rows)
    if (layers.empty() || layers.back() != row.layer) layers.push_back(row.layer);
  return layers;
}

// im2win against `other`: layers both ran, wins, geometric mean of other_ms / im2win_ms.
struct Versus {
  int layers = 0, wins = 0;
  double geomean = 0;
};
Versus versus(const CudaBenchReport& r, const std::string& other) {
  Versus v;
  std::vector<double> speedups;
  for (const std::string& layer : layer_order(r)) {
    const CudaBenchRow* a = find_row(r, layer, "im2win");
    const CudaBenchRow* b = find_row(r, layer, other);
    if (!a || !b || a->timing.median_ms <= 0) continue;
    v.wins += a->timing.median_ms < b->timing.median_ms;
    speedups.push_back(b->timing.median_ms / a->timing.median_ms);
  }
  v.layers = static_cast<int>(speedups.size());
  v.geomean = geomean(speedups);
  return v;
}

}  // namespace

std::string cuda_report_table(const CudaBenchReport& r) {
  std::string out;
  out += "device " + std::to_string(r.device) + ": " + r.device_name + " (sm_" + std::to_string(r.cc_major) +
         std::to_string(r.cc_minor) + ", " + std::to_string(r.sms) + " SMs, " + fmt("%.0f", r.clock_mhz) +
         " MHz): FP32 peak " + fmt("%.1f", r.peak_tflops) + " TFLOPS (SMs x clock x " +
         std::to_string(r.fp32_lanes_per_sm) + " lanes x 2); cuBLAS/cuDNN TF32 " + (r.tf32 ? "on" : "off") + "\n";
  out += "layer set " + r.layer_set + " (" + r.layer_set_path + "), batch " + std::to_string(r.batch) +
         (r.cpu_reference.empty() ? std::string(", outputs not verified")
                                  : ", outputs checked against the CPU engine's " + r.cpu_reference) +
         "; median of CUDA-event-timed calls after warm-up\n";
  for (const std::string& layer : layer_order(r)) {
    const CudaBenchRow* first = nullptr;
    for (const CudaBenchRow& row : r.rows)
      if (row.layer == layer) {
        first = &row;
        break;
      }
    out += "\n" + layer + "  " + shape_text(first->params) + "  " + fmt("%.1f", first->flops / 1e9) + " GFLOP\n";
    char line[512];
    std::snprintf(line, sizeof line, "  %-9s %10s %10s %8s %7s %11s %11s %5s %8s  %s\n", "conv", "median ms", "min ms",
                  "TFLOPS", "% peak", "workspace", "device mem", "runs", "rel err", "note");
    out += line;
    for (const CudaBenchRow& row : r.rows) {
      if (row.layer != layer) continue;
      const std::string err = row.max_rel_error ? fmt("%.1e", *row.max_rel_error) : "-";
      std::snprintf(line, sizeof line, "  %-9s %10s %10s %8.2f %7.1f %11s %11s %5d %8s  %s%s\n", row.conv.c_str(),
                    ms_text(row.timing.median_ms).c_str(), ms_text(row.timing.min_ms).c_str(), row.tflops,
                    row.percent_peak, bytes_text(row.workspace_bytes).c_str(), bytes_text(row.device_bytes).c_str(),
                    row.timing.runs, err.c_str(), row.note.c_str(), row.mismatch ? "  MISMATCH" : "");
      out += line;
    }
  }

  // Summary: per algorithm geometric-mean TFLOPS; im2win against the others; memory ratios.
  std::map<std::string, std::vector<double>> per_conv;  // conv -> TFLOPS per layer
  std::vector<std::string> convs;
  for (const CudaBenchRow& row : r.rows) {
    if (!per_conv.count(row.conv)) convs.push_back(row.conv);
    per_conv[row.conv].push_back(std::max(row.tflops, 1e-12));
  }
  if (!convs.empty()) {
    out += "\nsummary (geometric means over the layers each ran)\n";
    for (const std::string& c : convs) {
      const int n = static_cast<int>(per_conv[c].size());
      const double tf = geomean(per_conv[c]);
      char line[256];
      std::snprintf(line, sizeof line, "  %-9s %2d layer(s) %8.2f TFLOPS %6.1f %% of peak\n", c.c_str(), n, tf,
                    r.peak_tflops > 0 ? 100 * tf / r.peak_tflops : 0.0);
      out += line;
    }
    for (const std::string& other : {std::string("cudnn"), std::string("im2col"), std::string("direct")}) {
      const Versus v = versus(r, other);
      if (v.layers == 0) continue;
      out += "  im2win vs " + other + ": faster on " + std::to_string(v.wins) + " of " + std::to_string(v.layers) +
             " layers, geometric mean speed-up " + fmt("%.2f", v.geomean) + "x\n";
    }
    int ws_layers = 0, mem_layers = 0, mem_below = 0;
    double ws_max = 0;
    for (const std::string& layer : layer_order(r)) {
      const CudaBenchRow* a = find_row(r, layer, "im2win");
      if (!a) continue;
      if (const CudaBenchRow* b = find_row(r, layer, "im2col"); b && b->workspace_bytes > 0) {
        ++ws_layers;
        ws_max = std::max(ws_max, static_cast<double>(a->workspace_bytes) / static_cast<double>(b->workspace_bytes));
      }
      if (const CudaBenchRow* b = find_row(r, layer, "cudnn")) {
        ++mem_layers;
        mem_below += a->device_bytes < b->device_bytes;
      }
    }
    if (ws_layers)
      out += "  im2win workspace / im2col's: at most " + fmt("%.2f", ws_max) + " over " + std::to_string(ws_layers) +
             " layers\n";
    if (mem_layers)
      out += "  im2win total layer memory below cudnn's on " + std::to_string(mem_below) + " of " +
             std::to_string(mem_layers) + " layers\n";
  }
  for (const std::string& s : r.skipped) out += "skipped: " + s + "\n";
  return out;
}

std::string cuda_report_json(const CudaBenchReport& r) {
  nlohmann::json j;
  j["layer_set"] = r.layer_set;
  j["layer_set_path"] = r.layer_set_path;
  j["batch"] = r.batch;
  j["device"] = {{"index", r.device},
                 {"name", r.device_name},
                 {"sms", r.sms},
                 {"compute_capability", std::to_string(r.cc_major) + "." + std::to_string(r.cc_minor)},
                 {"clock_mhz", r.clock_mhz},
                 {"fp32_lanes_per_sm", r.fp32_lanes_per_sm},
                 {"peak_tflops", r.peak_tflops}};
  j["tf32"] = r.tf32;
  j["cpu_reference"] = r.cpu_reference;
  j["results"] = nlohmann::json::array();
  for (const CudaBenchRow& row : r.rows) {
    nlohmann::json x = {{"layer", row.layer},
                        {"conv", row.conv},
                        {"params", row.params.to_string()},
                        {"flops", row.flops},
                        {"tflops", row.tflops},
                        {"percent_peak", row.percent_peak},
                        {"workspace_bytes", row.workspace_bytes},
                        {"packed_weight_bytes", row.packed_weight_bytes},
                        {"device_bytes", row.device_bytes},
                        {"mismatch", row.mismatch},
                        {"note", row.note}};
    add_timing(&x, row.timing);
    x["max_rel_error"] = row.max_rel_error ? nlohmann::json(*row.max_rel_error) : nlohmann::json(nullptr);
    j["results"].push_back(std::move(x));
  }
  for (const std::string& other : {std::string("cudnn"), std::string("im2col"), std::string("direct")}) {
    const Versus v = versus(r, other);
    if (v.layers) j["im2win_vs"][other] = {{"layers", v.layers}, {"wins", v.wins}, {"geomean_speedup", v.geomean}};
  }
  j["skipped"] = r.skipped;
  j["mismatches"] = r.mismatches;
  return j.dump(2);
}

Status cuda_bench_command(const LayerSet& set, const CudaBenchOptions& options, bool json) {
  auto report = run_cuda_bench(set, options);
  if (!report.ok()) return report.status();
  std::printf("%s\n", json ? cuda_report_json(report.value()).c_str() : cuda_report_table(report.value()).c_str());
  std::fflush(stdout);
  if (report.value().mismatches > 0)
    return internal_error(std::to_string(report.value().mismatches) +
                          " CUDA result(s) disagree with the CPU engine (MISMATCH above)");
  return Status();
}

}  // namespace winfer::bench
