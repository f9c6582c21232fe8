// `winfer bench --json`: the report as one JSON object. The documented keys (peak_gflops, threads,
// isa, gemm, results[].layer/conv/median_ms/min_ms/max_ms/gflops/workspace_bytes) are a stable
// interface for scripts; the others may grow. Sizes a library does not expose are null.
#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "bench/stats.h"

namespace winfer::bench {
namespace {

using Json = nlohmann::ordered_json;

template <typename T>
Json optional_json(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json params_json(const ConvParams& p) {
  return Json{{"batch", p.batch},
              {"in_channels", p.in_channels},
              {"in_h", p.in_h},
              {"in_w", p.in_w},
              {"out_channels", p.out_channels},
              {"out_h", p.out_h()},
              {"out_w", p.out_w()},
              {"kernel", {p.kernel_h, p.kernel_w}},
              {"stride", {p.stride_h, p.stride_w}},
              {"padding", {p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}},
              {"dilation", {p.dilation_h, p.dilation_w}},
              {"groups", p.groups}};
}

Json result_json(const BenchResult& r) {
  Json j{{"layer", r.layer}, {"conv", r.conv}, {"peer", r.peer}};
  add_timing(&j, r.timing);
  const Json rest{{"gflops", r.gflops},
                  {"percent_peak", r.percent_peak},
                  {"flops", r.flops},
                  {"workspace_bytes", optional_json(r.workspace_bytes)},
                  {"packed_weight_bytes", optional_json(r.packed_weight_bytes)},
                  {"max_rel_error", optional_json(r.max_rel_error)},
                  {"mismatch", r.mismatch},
                  {"activation", activation_key(r.activation)},
                  {"note", r.note},
                  {"params", params_json(r.params)}};
  j.update(rest);
  return j;
}

Json summary_json(const SummaryRow& s) {
  Json speedup = Json::object();
  for (const auto& [base, ratio] : s.speedup_vs) speedup[base] = ratio;
  return Json{{"conv", s.conv},
              {"dense_layers", s.layers},
              {"geomean_gflops", s.gflops},
              {"geomean_percent_peak", s.percent_peak},
              {"speedup_vs", speedup}};
}

}  // namespace

std::string report_json(const BenchReport& report) {
  Json probes = Json::array();
  for (const FmaProbeResult& p : report.peak_probes) {
    probes.push_back(Json{{"isa", p.isa}, {"threads", p.threads}, {"gflops", p.gflops}});
  }
  Json layers = Json::array();
  for (const BenchLayer& l : report.layers) {
    layers.push_back(Json{{"name", l.name},
                          {"count", l.count},
                          {"bias", l.bias},
                          {"activation", activation_key(l.activation)},
                          {"flops", l.params.flops()},
                          {"params", params_json(l.params)}});
  }
  Json results = Json::array();
  for (const BenchResult& r : report.results) results.push_back(result_json(r));
  Json summary = Json::array();
  for (const SummaryRow& s : report.summary) summary.push_back(summary_json(s));

  const Json j{{"peak_gflops", report.peak_gflops},
               {"threads", report.threads},
               {"isa", report.isa},
               {"gemm", report.gemm},
               {"peers", report.peers},
               {"peak_probes", probes},
               {"layer_set", report.layer_set},
               {"layer_set_path", report.layer_set_path},
               {"batch", report.batch},
               {"started_at", report.started_at},
               {"load_average", report.load_average},
               {"mismatches", report.mismatches},
               {"layers", layers},
               {"results", results},
               {"skipped", report.skipped},
               {"summary", summary}};
  return j.dump(2);
}

}  // namespace winfer::bench
