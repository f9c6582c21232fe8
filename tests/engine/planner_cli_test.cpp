// `winfer plan`: the table, the JSON object, the SVG picture, and honest answers for
// algorithms that do not exist and models without weights.
#include <nlohmann/json.hpp>

#include "engine/cli_test_util.h"
#include "engine/model_test_util.h"

using namespace winfer_test;

namespace {

CommandResult run_plan(const std::string& args) { return run_cli("plan " + args); }

}  // namespace

TEST_CASE("cli plan: the side-by-side table with a measured run and the saving") {
  const CommandResult r = run_plan(repo_path("models/examples/tiny_net.yaml") + " --conv im2col,direct --batch 2");
  INFO(r.stdout_text << r.stderr_text);
  REQUIRE(r.exit_code == 0);
  for (const char* row : {"weights, as loaded", "weights, packed for the algorithm", "activations, no reuse (sum)",
                          "activations, lower bound (max live)", "planned arena", "largest conv workspace",
                          "total = packed weights + arena", "measured peak resident (VmHWM)",
                          "measured again in the warm process", "other, warm"}) {
    CHECK(contains(r.stdout_text, row));
  }
  CHECK(contains(r.stdout_text, "batch 2"));
  CHECK(contains(r.stdout_text, "im2col"));
  CHECK(contains(r.stdout_text, "direct"));
  CHECK(contains(r.stdout_text, "total memory than direct"));
  CHECK_FALSE(contains(r.stdout_text, "n/a"));
  CHECK_FALSE(contains(r.stdout_text, "not measured"));
}

TEST_CASE("cli plan: --json gives one object - an unknown algorithm is reported, not zeros") {
  const CommandResult r =
      run_plan(repo_path("models/examples/tiny_net.yaml") + " --json --conv im2col,no_such_algorithm,direct");
  INFO(r.stdout_text << r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  CHECK(j["model"] == "tiny_net");
  CHECK(j["batch"] == 1);
  REQUIRE(j["algorithms"].size() == 3);
  const nlohmann::json& missing = j["algorithms"][1];
  CHECK(missing["conv"] == "no_such_algorithm");
  CHECK(missing["available"] == false);
  CHECK(contains(missing["error"].get<std::string>(), "unknown convolution algorithm 'no_such_algorithm'"));
  CHECK_FALSE(missing.contains("arena_bytes"));
  for (int i : {0, 2}) {
    const nlohmann::json& a = j["algorithms"][i];
    INFO(a.dump());
    for (const char* key :
         {"weights_bytes", "packed_weights_bytes", "activations_sum_bytes", "activations_lower_bound_bytes",
          "arena_bytes", "max_workspace_bytes", "total_bytes", "measured_peak_bytes"}) {
      REQUIRE(a.contains(key));
    }
    CHECK(a["weights_bytes"].get<size_t>() > 0);
    CHECK(a["activations_lower_bound_bytes"].get<size_t>() <= a["arena_bytes"].get<size_t>());
    CHECK(a["arena_bytes"].get<size_t>() <= a["activations_sum_bytes"].get<size_t>());
    CHECK(a["total_bytes"].get<size_t>() == a["packed_weights_bytes"].get<size_t>() + a["arena_bytes"].get<size_t>());
    CHECK(a["measured_peak_bytes"].get<size_t>() > 0);
    REQUIRE(a.contains("measured_warm_bytes"));
    CHECK(a["measured_warm_bytes"].is_number());
  }
  // direct needs none of its own: its one workspace is the band buffer of the fused dilated ->
  // depthwise pair, that pair's whole 16x16x8 output in one band.
  CHECK(j["algorithms"][2]["max_workspace_bytes"] == 16 * 16 * 8 * 4);
}

TEST_CASE("cli plan: --images-per-run plans one run's images, the lanes' side by side") {
  const auto arena = [](const std::string& flags) {
    const CommandResult r = run_plan(repo_path("models/zoo/mobilenet_v2.yaml") +
                                     " --json --no-measure --size 64x64 --conv im2win " + flags);
    INFO(r.stdout_text << r.stderr_text);
    REQUIRE(r.exit_code == 0);
    const nlohmann::json a = nlohmann::json::parse(r.stdout_text)["algorithms"][0];
    CHECK(a["activations_lower_bound_bytes"].get<size_t>() <= a["arena_bytes"].get<size_t>());
    CHECK(a["arena_bytes"].get<size_t>() <= a["activations_sum_bytes"].get<size_t>());
    return a["arena_bytes"].get<size_t>();
  };
  const size_t one = arena("--batch 1 --threads 1");
  CHECK(arena("--batch 6 --threads 1 --images-per-run 1") == one);
  CHECK(arena("--batch 6 --threads 2 --images-per-run 1") == 2 * ((one + 63) / 64 * 64));
  CHECK(arena("--batch 6 --threads 1 --images-per-run 0") > 2 * one);
  CHECK(arena("--batch 6 --threads 1") < arena("--batch 6 --threads 1 --images-per-run 0"));  // runs of 2
  // The default on 2 threads: runs of 1 image (6 / (2 x 2), dividing 3), side by side; 0 = all 6 at once.
  CHECK(arena("--batch 6 --threads 2") == 2 * ((one + 63) / 64 * 64));
  CHECK(arena("--batch 6 --threads 2 --images-per-run 0") > 3 * one);
  const auto runs_of = [](const std::string& model) {
    const CommandResult json =
        run_plan(repo_path("models/zoo/" + model) + " --json --no-measure --size 64x64 --batch 8 --threads 2");
    REQUIRE(json.exit_code == 0);
    const nlohmann::json a = nlohmann::json::parse(json.stdout_text)["algorithms"][0];
    CHECK(a["lanes"] == 2);
    return a["images_per_run"].get<int64_t>();
  };
  CHECK(runs_of("mobilenet_v2.yaml") == 2);
  // ResNet-18's 45 MiB of weights, read from memory by every run, outweigh its images: runs of 4.
  CHECK(runs_of("resnet18.yaml") == 4);
  const CommandResult bad = run_plan(repo_path("models/zoo/resnet18.yaml") + " --images-per-run -1");
  CHECK(bad.exit_code != 0);
}

// The issue-11 target "measured peak within 10% of the plan (no hidden allocations)", on a
// model large enough for a hidden buffer to show: measured again warm, the process holds the
// model's weights, the arena and the I/O, and not 10% more. The first run's figure also holds
// the process's one-time costs (code pages), so it is larger.
TEST_CASE("cli plan: measured warm, resnet18's peak is what the plan expects") {
  const CommandResult r = run_plan(repo_path("models/zoo/resnet18.yaml") + " --json --conv im2win");
  INFO(r.stdout_text << r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json a = nlohmann::json::parse(r.stdout_text)["algorithms"][0];
  INFO(a.dump());
  REQUIRE(a["measured_warm_bytes"].is_number());
  [[maybe_unused]] const double warm = a["measured_warm_bytes"].get<double>();
  [[maybe_unused]] const double expected = a["expected_resident_bytes"].get<double>();
#if !defined(WINFER_TEST_SANITIZED)
  CHECK(warm <= a["measured_peak_bytes"].get<double>());
  CHECK(warm >= 0.97 * expected);
  CHECK(warm <= 1.10 * expected);
#endif
}

TEST_CASE("cli plan: a zoo model without weights gets random ones and says so - --svg draws the arena") {
  TempDir dir;
  const std::string svg = dir.file("plan.svg");
  const CommandResult r = run_plan(repo_path("models/zoo/resnet18.yaml") + " --no-measure --conv all --svg " + svg);
  INFO(r.stdout_text << r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "random(seed=1)"));
  CHECK(contains(r.stderr_text, "names no weights"));
  CHECK(contains(r.stdout_text, "not measured (--no-measure)"));
  const std::string picture = read_bytes(svg);
  CHECK(picture.rfind("<svg", 0) == 0);
  CHECK(contains(picture, "</svg>"));
  CHECK(contains(picture, "<title>layer1.0.conv1 workspace: "));
  CHECK(contains(picture, "in place of"));
  CHECK(contains(picture, "direct: arena"));
  CHECK(contains(picture, "im2col: arena"));
}

TEST_CASE("cli plan: errors exit with status 1") {
  const CommandResult missing = run_plan(repo_path("models/zoo/no_such_model.yaml"));
  CHECK(missing.exit_code == 1);
  CHECK(contains(missing.stderr_text, "error: "));
  const CommandResult empty = run_plan(repo_path("models/examples/tiny_net.yaml") + " --conv im2col,,direct");
  CHECK(empty.exit_code == 1);
  CHECK(contains(empty.stderr_text, "empty algorithm name"));
}
