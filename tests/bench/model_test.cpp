// `winfer bench MODEL...|--zoo` (whole networks): the JSON fields and their consistency, the
// text table, and the errors for bad arguments. Functional only: no assertion on how fast
// anything is (the machine may be busy), only on what must hold whatever the timings.
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/cli_test_util.h"
#include "engine/model_test_util.h"
#include "winfer/session.h"

using namespace winfer_test;
using Json = nlohmann::json;

namespace {

CommandResult bench(const std::string& args) { return run_cli("bench " + args); }

// One JSON object per line of stdout.
std::vector<Json> json_lines(const std::string& text) {
  std::vector<Json> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(Json::parse(line));
  }
  return lines;
}

const std::string kTiny = repo_path("models/examples/tiny_net.yaml");
const char* kQuick = " --runs 3 --min-time 0";

void check_result_fields(const Json& r) {
  for (const char* key : {"model", "device", "conv", "threads", "batch", "init_ms", "first_ms", "median_ms", "min_ms",
                          "p95_ms", "max_ms", "planned_bytes", "measured_peak_bytes"}) {
    INFO(key);
    CHECK(r.contains(key));
  }
  CHECK_FALSE(r.contains("error"));
  CHECK(r["device"] == "cpu");
  CHECK(r["init_ms"].get<double>() > 0);
  CHECK(r["first_ms"].get<double>() > 0);
  const double min = r["min_ms"], median = r["median_ms"], p95 = r["p95_ms"], max = r["max_ms"];
  CHECK(min > 0);
  CHECK(min <= median);
  CHECK(median <= p95);
  CHECK(p95 <= max);
  CHECK(r["runs"].get<int>() >= 3);
  // planned = packed weights + arena; the measured growth of the process is at least the arena.
  CHECK(r["planned_bytes"].get<int64_t>() ==
        r["packed_weights_bytes"].get<int64_t>() + r["arena_bytes"].get<int64_t>());
  CHECK(r["arena_bytes"].get<int64_t>() > 0);
  REQUIRE(r["measured_peak_bytes"].is_number());
  CHECK(r["measured_peak_bytes"].get<int64_t>() >= r["arena_bytes"].get<int64_t>());
  CHECK(r["expected_resident_bytes"].get<int64_t>() >= r["planned_bytes"].get<int64_t>());
  // Measured again warm: without the first run's one-time costs (code pages), so not more.
  REQUIRE(r["measured_warm_bytes"].is_number());
#if !defined(WINFER_TEST_SANITIZED)
  CHECK(r["measured_warm_bytes"].get<int64_t>() <= r["measured_peak_bytes"].get<int64_t>());
#endif
  const Json& c = r["config"];
  for (const char* key : {"isa", "build_type", "git_commit", "gemm", "openblas_coretype", "load_average"}) {
    INFO(key);
    CHECK(c.contains(key));
  }
}

}  // namespace

TEST_CASE("bench model: --json prints one object with the documented fields") {
  const CommandResult r = bench(kTiny + kQuick + " --json");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const std::vector<Json> lines = json_lines(r.stdout_text);
  REQUIRE(lines.size() == 1);
  check_result_fields(lines[0]);
  CHECK(lines[0]["model"] == "tiny_net");
  CHECK(lines[0]["conv"] == "im2win");
  CHECK(lines[0]["threads"] == winfer::default_thread_count());  // without --threads: every CPU it may use
  CHECK(lines[0]["batch"] == 1);
  CHECK_FALSE(lines[0].contains("layers"));  // only with --per-layer
}

TEST_CASE("bench model: several algorithms, batch, threads and --per-layer") {
  const CommandResult r = bench(kTiny + kQuick + " --conv im2col,direct --batch 3 --threads 2 --per-layer --json");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const std::vector<Json> lines = json_lines(r.stdout_text);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["conv"] == "im2col");
  CHECK(lines[1]["conv"] == "direct");
  for (const Json& l : lines) {
    check_result_fields(l);
    CHECK(l["batch"] == 3);
    CHECK(l["threads"] == 2);
    REQUIRE(l.contains("layers"));
    REQUIRE(l["layers"].size() > 0);
    CHECK(l["peak_gflops"].get<double>() >= 0);
    double conv_flops = 0;
    for (const Json& layer : l["layers"]) {
      CHECK(layer["median_ms"].get<double>() >= 0);
      if (layer["type"] == "conv2d") conv_flops += layer["flops"].get<double>();
    }
    CHECK(conv_flops > 0);
  }
}

TEST_CASE("bench model: text table and zoo names") {
  const CommandResult r = bench("shufflenet_v2_x0_5 --runs 1 --min-time 0 --per-layer");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "isa "));
  CHECK(contains(r.stdout_text, "commit "));
  CHECK(contains(r.stdout_text, "shufflenet_v2_x0_5"));
  CHECK(contains(r.stdout_text, "median"));
  CHECK(contains(r.stdout_text, "measured"));
  CHECK(contains(r.stdout_text, "per-layer medians"));
  CHECK(contains(r.stdout_text, "depthwise"));  // the kernel column of the per-layer table
}

TEST_CASE("bench model: bad arguments are refused with a message") {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"", "nothing to benchmark"},
      {kTiny + " --layers tiny", "not both"},
      {"no_such_model_xyz", "no_such_model_xyz"},
      {kTiny + " --conv bogus", "not an engine algorithm"},
      {kTiny + " --conv onednn", "layer mode"},
      {kTiny + " --device tpu", "expected cpu, cuda"},
      {kTiny + " --list", "--layers only"},
      {"--layers tiny --per-layer", "whole networks"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const CommandResult r = bench(c.args);
    INFO(r.stderr_text);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, "error:"));
    CHECK(contains(r.stderr_text, c.message));
    CHECK(r.stdout_text.empty());
  }
}

TEST_CASE("bench model: --device cuda runs or reports the session's error") {
  // Where whole networks cannot run on CUDA (this build, or no GPU) the command fails with an
  // error message and prints no result; where they can, the result names the device.
  const CommandResult r = bench(kTiny + kQuick + " --device cuda --json");
  INFO(r.stderr_text);
  if (r.exit_code == 0) {
    const std::vector<Json> lines = json_lines(r.stdout_text);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["device"].get<std::string>().rfind("cuda", 0) == 0);  // cuda:N
  } else {
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, "error:"));
    CHECK(contains(r.stderr_text, "cuda"));
  }
}
