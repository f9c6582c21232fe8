// `winfer bench MODEL...|--zoo` (whole networks): the JSON fields and their consistency, the
// text table, and the errors for bad arguments. Functional only: no assertion on how fast
// anything is (the machine may be busy), only on what must hold whatever the timings.
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/model_test_util.h"

using namespace winfer_test;
using Json = nlohmann::json;

namespace {

struct Cli {
  int exit_code = -1;
  std::string out, err;
};

Cli bench(const std::string& args) {
  TempDir dir;
  const std::string err = dir.file("stderr.txt");
  const std::string command = std::string(WINFER_BINARY_DIR) + "/bin/winfer bench " + args + " 2>" + err;
  Cli result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = read_bytes(err);
  return result;
}

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
  CHECK(r["planned_bytes"].get<int64_t>() == r["packed_weights_bytes"].get<int64_t>() + r["arena_bytes"].get<int64_t>());
  CHECK(r["arena_bytes"].get<int64_t>() > 0);
  REQUIRE(r["measured_peak_bytes"].is_number());
  CHECK(r["measured_peak_bytes"].get<int64_t>() >= r["arena_bytes"].get<int64_t>());
  CHECK(r["expected_resident_bytes"].get<int64_t>() >= r["planned_bytes"].get<int64_t>());
  const Json& c = r["config"];
  for (const char* key : {"isa", "build_type", "git_commit", "gemm", "openblas_coretype", "load_average"}) {
    INFO(key);
    CHECK(c.contains(key));
  }
}

}  // namespace

TEST_CASE("bench model: --json prints one object with the documented fields") {
  const Cli r = bench(kTiny + kQuick + " --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<Json> lines = json_lines(r.out);
  REQUIRE(lines.size() == 1);
  check_result_fields(lines[0]);
  CHECK(lines[0]["model"] == "tiny_net");
  CHECK(lines[0]["conv"] == "im2win");
  CHECK(lines[0]["threads"] == 1);
  CHECK(lines[0]["batch"] == 1);
  CHECK_FALSE(lines[0].contains("layers"));  // only with --per-layer
}

TEST_CASE("bench model: several algorithms, batch, threads and --per-layer") {
  const Cli r = bench(kTiny + kQuick + " --conv im2col,direct --batch 3 --threads 2 --per-layer --json");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<Json> lines = json_lines(r.out);
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
  const Cli r = bench("shufflenet_v2_x0_5 --runs 1 --min-time 0 --per-layer");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "isa "));
  CHECK(contains(r.out, "commit "));
  CHECK(contains(r.out, "shufflenet_v2_x0_5"));
  CHECK(contains(r.out, "median"));
  CHECK(contains(r.out, "measured"));
  CHECK(contains(r.out, "per-layer medians"));
  CHECK(contains(r.out, "depthwise"));  // the kernel column of the per-layer table
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
    const Cli r = bench(c.args);
    INFO(r.err);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "error:"));
    CHECK(contains(r.err, c.message));
    CHECK(r.out.empty());
  }
}

TEST_CASE("bench model: --device cuda runs or reports the session's error") {
  // Where whole networks cannot run on CUDA (this build, or no GPU) the command fails with an
  // error message and prints no result; where they can, the result names the device.
  const Cli r = bench(kTiny + kQuick + " --device cuda --json");
  INFO(r.err);
  if (r.exit_code == 0) {
    const std::vector<Json> lines = json_lines(r.out);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["device"].get<std::string>().rfind("cuda", 0) == 0);  // cuda:N
  } else {
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "error:"));
    CHECK(contains(r.err, "cuda"));
  }
}
