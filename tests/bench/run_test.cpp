// The benchmark itself on tiny layers: timing rules, which implementations run where, results
// verified against `direct`, the JSON report's shape, the FMA probe. Kept to milliseconds: no
// large layer and no peer is needed (the peers are checked when they are built in).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <cstdio>

#include "bench/bench.h"
#include "engine/cli_test_util.h"
#include "engine/model_test_util.h"
#include "kernels/cpu/fma_probe.h"
#include "winfer/session.h"

using namespace winfer_test;
using namespace winfer::bench;

namespace {

BenchOptions quick_options(std::vector<std::string> convs) {
  BenchOptions o;
  o.convs = std::move(convs);
  o.timing.runs = 2;
  o.timing.min_seconds = 0;
  o.timing.warmup_seconds = 0;
  o.probe_peak = false;
  return o;
}

LayerSet tiny_set() {
  auto set = load_layer_set("tiny");
  REQUIRE(set.ok());
  return set.value();
}

std::string run_cli_stdout(const std::string& args, int* exit_code) {
  const CommandResult r = run_cli(args);
  *exit_code = r.exit_code;
  return r.stdout_text;
}

}  // namespace

TEST_CASE("bench timing: at least `runs` calls, more for tiny calls up to max_runs") {
  int calls = 0;
  TimingOptions o;
  o.runs = 3;
  o.min_seconds = 0;
  o.warmup_seconds = 0;
  Timing t = time_calls([&] { ++calls; }, o);
  CHECK(t.runs == 3);
  CHECK(calls == 4);  // one warm-up call
  CHECK(t.min_ms <= t.median_ms);
  CHECK(t.median_ms <= t.max_ms);

  o.min_seconds = 1.0;  // an empty call would need millions of runs: capped
  o.max_runs = 50;
  t = time_calls([] {}, o);
  CHECK(t.runs == 50);
}

TEST_CASE("bench timing interleaved: every call the same rounds, in shuffled orders") {
  TimingOptions o;
  o.runs = 40;
  o.min_seconds = 0;
  o.warmup_seconds = 0;
  std::vector<int> trace;  // which call ran, in order
  std::vector<std::function<void()>> calls;
  for (int i = 0; i < 3; ++i) calls.push_back([&trace, i] { trace.push_back(i); });
  const std::vector<Timing> t = time_interleaved(calls, o, 7);
  REQUIRE(t.size() == 3);
  for (const Timing& x : t) CHECK(x.runs == 40);
  REQUIRE(trace.size() == 3 + 3 * 40);  // one warm-up call each, first, in the given order
  CHECK(trace[0] == 0);
  CHECK(trace[1] == 1);
  CHECK(trace[2] == 2);
  int first_of_round[3] = {0, 0, 0};
  for (size_t r = 0; r < 40; ++r) {
    std::array<int, 3> round{trace[3 + 3 * r], trace[4 + 3 * r], trace[5 + 3 * r]};
    std::sort(round.begin(), round.end());
    CHECK(round == std::array<int, 3>{0, 1, 2});  // each once per round
    ++first_of_round[trace[3 + 3 * r]];
  }
  for (int n : first_of_round) CHECK(n > 0);  // the order changes from round to round

  o.min_seconds = 1.0;  // empty calls: capped at max_runs
  o.max_runs = 60;
  for (const Timing& x : time_interleaved(calls, o, 7)) CHECK(x.runs == 60);
}

TEST_CASE("bench: default list skips 'depthwise' on dense layers, unknown names fail") {
  auto all = resolve_convs({});
  REQUIRE(all.ok());
  winfer::ConvParams dense;
  dense.in_channels = dense.out_channels = 8;
  dense.in_h = dense.in_w = 6;
  dense.kernel_h = dense.kernel_w = 3;
  for (const ConvProvider* c : convs_for_layer(all.value(), dense)) CHECK(c->name() != "depthwise");
  winfer::ConvParams dw = dense;
  dw.groups = 8;
  bool has_depthwise = false;
  for (const ConvProvider* c : convs_for_layer(all.value(), dw)) has_depthwise |= c->name() == "depthwise";
  CHECK(has_depthwise);

  auto bad = resolve_convs({"im2col", "fft"});
  REQUIRE_FALSE(bad.ok());
  CHECK(contains(bad.status().message(), "unknown implementation 'fft'"));
  CHECK(contains(bad.status().message(), "direct"));
}

TEST_CASE("bench: every engine algorithm on the tiny set agrees with direct") {
  std::vector<std::string> names;
  for (const ConvProvider* p : engine_providers()) names.push_back(p->name());
  auto report = run_bench(tiny_set(), quick_options(names));
  REQUIRE(report.ok());
  CHECK(report.value().mismatches == 0);
  CHECK(report.value().results.size() >= report.value().layers.size() * 2);
  for (const BenchResult& r : report.value().results) {
    INFO(r.layer << " " << r.conv);
    REQUIRE(r.max_rel_error.has_value());
    CHECK(*r.max_rel_error < 1e-5);
    CHECK(r.timing.runs == 2);
    CHECK(r.gflops > 0);
    CHECK(r.workspace_bytes.has_value());
  }
  // The summary covers dense layers only and compares with im2col.
  REQUIRE_FALSE(report.value().summary.empty());
  for (const SummaryRow& s : report.value().summary) {
    if (s.conv != "im2col") CHECK(s.speedup_vs.count("im2col") == 1);
    CHECK(s.layers <= 4);  // tiny has 4 dense layers
  }
}

#if defined(WINFER_HAVE_ONEDNN) || defined(WINFER_HAVE_XNNPACK)
TEST_CASE("bench: the peer libraries built in agree with direct on the tiny set") {
  auto all = resolve_convs({});
  REQUIRE(all.ok());
  std::vector<std::string> names;
  for (const ConvProvider* p : all.value())
    if (p->is_peer()) names.push_back(p->name());
  auto report = run_bench(tiny_set(), quick_options(names));
  REQUIRE(report.ok());
  CHECK(report.value().skipped.empty());
  CHECK(report.value().mismatches == 0);
  CHECK(report.value().results.size() == report.value().layers.size() * names.size());
}
#endif

TEST_CASE("bench: a wrong result is reported as a mismatch") {
  // A negative tolerance turns every result into a "wrong" one.
  BenchOptions o = quick_options({"im2col"});
  o.tolerance = -1;
  auto report = run_bench(tiny_set(), o);
  REQUIRE(report.ok());
  CHECK(report.value().mismatches == static_cast<int>(report.value().results.size()));
  CHECK(report.value().summary.empty());  // wrong results are left out of the summary
}

TEST_CASE("bench cli: --json prints the documented keys") {
  int code = -1;
  const std::string out =
      run_cli_stdout("bench --layers tiny --conv direct,im2col --runs 2 --min-time 0 --no-peak --json", &code);
  REQUIRE(code == 0);
  const auto j = nlohmann::json::parse(out);
  for (const char* key : {"peak_gflops", "threads", "isa", "gemm", "results", "summary", "layers"}) {
    INFO(key);
    CHECK(j.contains(key));
  }
  CHECK(j["threads"] == winfer::default_thread_count());  // without --threads: every CPU it may use
  REQUIRE(j["results"].size() == 2 * 6);
  for (const auto& r : j["results"]) {
    for (const char* key : {"layer", "conv", "median_ms", "min_ms", "max_ms", "gflops", "workspace_bytes"}) {
      INFO(key);
      CHECK(r.contains(key));
    }
    CHECK(r["median_ms"].get<double>() > 0);
  }
}

TEST_CASE("bench cli: table, --list and errors") {
  int code = -1;
  std::string out =
      run_cli_stdout("bench --layers tiny --filter k3 --conv im2col --runs 2 --min-time 0 --no-peak", &code);
  CHECK(code == 0);
  CHECK(contains(out, "k3p1"));
  CHECK(contains(out, "k3s2"));
  CHECK_FALSE(contains(out, "pointwise"));
  CHECK(contains(out, "summary"));
  out = run_cli_stdout("bench --layers paper12 --list", &code);
  CHECK(code == 0);
  CHECK(contains(out, "conv12"));
  run_cli_stdout("bench --layers tiny --conv nonsense", &code);
  CHECK(code == 1);
}

TEST_CASE("fma probe: a positive peak when the CPU has FMA") {
  for (const winfer::FmaProbeResult& r : winfer::probe_fma_peak(1, 0.005, 1)) {
    INFO(r.isa);
    CHECK(r.gflops > 0);
    CHECK(r.threads == 1);
  }
}
