// conv_algorithm "auto": the per-layer choice under a memory budget (engine/src/conv_autotune.h).
// Nothing here depends on timing: the choice is tested on made-up candidates, and whole
// sessions read their layer times from an autotune cache file that the test writes.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "engine/src/conv_autotune.h"
#include "winfer/winfer.h"

namespace {

using winfer::ConvCandidate;
using winfer::ConvLayerCandidates;
using winfer_test::contains;
using winfer_test::repo_path;
using winfer_test::same_bits;
using winfer_test::TempDir;

ConvCandidate candidate(const std::string& name, double ms, size_t workspace, size_t weights) {
  ConvCandidate c;
  c.algorithm = name;
  c.milliseconds = ms;
  c.workspace_bytes = workspace;
  c.packed_weight_bytes = weights;
  return c;
}

// A session whose bytes are a base plus every layer's workspace and weights (no reuse).
winfer::SessionBytesFn additive(const std::vector<ConvLayerCandidates>& layers, size_t base) {
  return [&layers, base](const std::vector<int>& choice) {
    size_t total = base;
    for (size_t i = 0; i < layers.size(); ++i) {
      total += layers[i].candidates[choice[i]].workspace_bytes + layers[i].candidates[choice[i]].packed_weight_bytes;
    }
    return total;
  };
}

std::vector<ConvLayerCandidates> three_layers() {
  return {
      {"a", {candidate("fast", 1.0, 1000, 100), candidate("lean", 1.5, 0, 100), candidate("slow", 9.0, 0, 50)}},
      {"b", {candidate("fast", 2.0, 5000, 100), candidate("lean", 2.2, 0, 100)}},
      {"c", {candidate("only", 3.0, 700, 100)}},
  };
}

// Rewrites every line of an autotune cache file: `fastest` gets 1 ms, every other algorithm 50 ms.
// The first line, which marks the file as a cache, is kept.
void rig_cache(const std::string& path, const std::string& fastest) {
  std::ifstream in(path);
  REQUIRE(in);
  std::ostringstream out;
  std::string line;
  int entries = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# winfer conv autotune cache", 0) == 0) out << line << '\n';
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.rfind('\t');
    REQUIRE(tab != std::string::npos);
    const std::string key = line.substr(0, tab);
    const bool is_fastest = key.size() > fastest.size() &&
                            key.compare(key.size() - fastest.size() - 1, std::string::npos, " " + fastest) == 0;
    out << key << '\t' << (is_fastest ? "1" : "50") << '\n';
    ++entries;
  }
  REQUIRE(entries > 0);
  winfer_test::write_bytes(path, out.str());
}

std::unique_ptr<winfer::Session> make_session(std::shared_ptr<const winfer::Model> model,
                                              winfer::SessionOptions options) {
  auto session = winfer::Session::create(std::move(model), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  return std::move(session).value();
}

}  // namespace

TEST_CASE("autotune: without a budget every layer gets its fastest algorithm") {
  const auto layers = three_layers();
  auto sel = winfer::select_conv_algorithms(layers, 0, additive(layers, 10000));
  REQUIRE_MESSAGE(sel.ok(), sel.status().message());
  CHECK(sel.value().choice == std::vector<int>{0, 0, 0});
  CHECK(sel.value().rules == std::vector<std::string>{"fastest", "fastest", "only supported"});
  CHECK(sel.value().session_bytes == 10000 + 1100 + 5100 + 800);
  CHECK(contains(sel.value().reasons[0], "fastest: fast 1 ms"));
  CHECK(contains(sel.value().reasons[0], "lean 1.5 ms"));
}

TEST_CASE("autotune: a budget moves the layers that save the most bytes per millisecond lost") {
  const auto layers = three_layers();
  // Fastest everywhere: 17000 bytes. Layer b's switch saves 5000 bytes for 0.2 ms, layer a's
  // 1000 bytes for 0.5 ms: a budget of 12500 needs b's only.
  auto sel = winfer::select_conv_algorithms(layers, 12500, additive(layers, 10000));
  REQUIRE_MESSAGE(sel.ok(), sel.status().message());
  CHECK(sel.value().choice == std::vector<int>{0, 1, 0});
  CHECK(sel.value().rules[1] == "memory_budget");
  CHECK(contains(sel.value().reasons[1], "memory_budget"));
  CHECK(sel.value().session_bytes == 12000);
  // 11500 needs both (a's cheaper switch first); "slow" is not worth 7.5 ms for 50 bytes more.
  sel = winfer::select_conv_algorithms(layers, 11500, additive(layers, 10000));
  REQUIRE(sel.ok());
  CHECK(sel.value().choice == std::vector<int>{1, 1, 0});
  CHECK(sel.value().session_bytes == 11000);
  // The smallest of all: 50 bytes less for 7.5 ms.
  sel = winfer::select_conv_algorithms(layers, 10950, additive(layers, 10000));
  REQUIRE(sel.ok());
  CHECK(sel.value().choice == std::vector<int>{2, 1, 0});
  CHECK(sel.value().session_bytes == 10950);
  // Exactly the fastest choice's size is within budget.
  sel = winfer::select_conv_algorithms(layers, 17000, additive(layers, 10000));
  REQUIRE(sel.ok());
  CHECK(sel.value().choice == std::vector<int>{0, 0, 0});
}

TEST_CASE("autotune: an impossible budget fails with the smallest size reachable") {
  const auto layers = three_layers();
  auto sel = winfer::select_conv_algorithms(layers, 10000, additive(layers, 10000));
  REQUIRE_FALSE(sel.ok());
  CHECK(sel.status().code() == winfer::ErrorCode::kOutOfMemory);
  CHECK(contains(sel.status().message(), "10950"));
}

TEST_CASE("autotune: a switch that does not lower the session's peak is not taken while one that does exists") {
  // Session bytes = max of the layers' workspaces (as in an arena where workspaces never
  // overlap) + weights. Layer a's workspace is below b's, so moving a saves nothing.
  const std::vector<ConvLayerCandidates> layers = {
      {"a", {candidate("fast", 1.0, 3000, 0), candidate("lean", 1.01, 0, 0)}},
      {"b", {candidate("fast", 1.0, 6000, 0), candidate("lean", 1.5, 2000, 0)}},
  };
  const winfer::SessionBytesFn peak = [&](const std::vector<int>& choice) {
    size_t worst = 0;
    for (size_t i = 0; i < layers.size(); ++i) worst = std::max(worst, layers[i].candidates[choice[i]].workspace_bytes);
    return worst;
  };
  auto sel = winfer::select_conv_algorithms(layers, 4000, peak);
  REQUIRE_MESSAGE(sel.ok(), sel.status().message());
  CHECK(sel.value().choice == std::vector<int>{0, 1});
  CHECK(sel.value().session_bytes == 3000);
}

TEST_CASE("autotune: a session reads its layer times from the cache and follows them") {
  TempDir dir;
  const std::string cache = dir.file("autotune.txt");
  auto loaded = winfer::Model::load(repo_path("models/fashion/fashion_resnet.yaml"));
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  const auto model = loaded.value();
  const winfer::Tensor input = winfer_test::random_tensor(model->input_shape(), 7, winfer::Layout::kNCHW);

  winfer::SessionOptions options;
  options.conv_algorithm = "auto";
  options.autotune_cache = cache;
  {
    auto measured = make_session(model, options);  // measures and writes the cache
    const auto& choices = measured->memory_report().conv_choices;
    REQUIRE(choices.size() == 10);  // fashion_resnet's convolutions (none is depthwise)
    for (const auto& c : choices) {
      CHECK(c.candidates.size() >= 2);
      for (const auto& candidate : c.candidates) CHECK_FALSE(candidate.cached);
    }
  }
  // Whatever the cache says is fastest is chosen, and the result equals that algorithm's own session.
  for (const std::string fastest : {"direct", "im2col"}) {
    rig_cache(cache, fastest);
    auto tuned = make_session(model, options);
    for (const auto& c : tuned->memory_report().conv_choices) {
      INFO(c.layer << ": " << c.reason);
      CHECK(c.algorithm == fastest);
      CHECK(c.rule == "fastest");
      for (const auto& candidate : c.candidates) CHECK(candidate.cached);
    }
    winfer::SessionOptions fixed;
    fixed.conv_algorithm = fastest;
    auto reference = make_session(model, fixed);
    auto a = tuned->run(input);
    auto b = reference->run(input);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(same_bits(a.value(), b.value()));
    CHECK(tuned->memory_report().session_bytes == reference->memory_report().session_bytes);
  }

  // im2col is "fastest" but needs a patch-matrix workspace; a budget just under its session
  // pushes some layers to another algorithm, and the report says so.
  rig_cache(cache, "im2col");
  winfer::SessionOptions fixed;
  fixed.conv_algorithm = "im2col";
  const size_t im2col_bytes = make_session(model, fixed)->memory_report().session_bytes;
  options.memory_budget = im2col_bytes - 1;
  auto budgeted = winfer::Session::create(model, options);
  REQUIRE_MESSAGE(budgeted.ok(), budgeted.status().message());
  const auto& report = budgeted.value()->memory_report();
  CHECK(report.session_bytes <= options.memory_budget);
  CHECK(report.memory_budget == options.memory_budget);
  int moved = 0;
  for (const auto& c : report.conv_choices) {
    if (c.rule == "memory_budget") {
      ++moved;
      CHECK(c.algorithm != "im2col");
      CHECK(contains(c.reason, "memory_budget"));
    }
  }
  CHECK(moved >= 1);

  // A budget no choice meets fails, naming it.
  options.memory_budget = 1000;
  auto impossible = winfer::Session::create(model, options);
  REQUIRE_FALSE(impossible.ok());
  CHECK(impossible.status().code() == winfer::ErrorCode::kOutOfMemory);
  CHECK(contains(impossible.status().message(), "memory_budget"));
  // So does a fixed algorithm over its budget.
  fixed.memory_budget = im2col_bytes - 1;
  auto over = winfer::Session::create(model, fixed);
  REQUIRE_FALSE(over.ok());
  CHECK(over.status().code() == winfer::ErrorCode::kOutOfMemory);
  fixed.memory_budget = im2col_bytes;
  CHECK(winfer::Session::create(model, fixed).ok());
}

TEST_CASE("autotune: a malformed cache line is ignored with a warning through the log callback") {
  TempDir dir;
  const std::string cache = dir.file("autotune.txt");
  winfer_test::write_bytes(cache, "# winfer conv autotune cache (a test's)\nno tab here\n");
  std::vector<std::string> messages;
  winfer::set_log_callback(
      [](winfer::LogLevel level, const char* message, void* user) {
        if (level == winfer::LogLevel::kWarning) static_cast<std::vector<std::string>*>(user)->push_back(message);
      },
      &messages);
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  winfer::SessionOptions options;
  options.conv_algorithm = "auto";
  options.autotune_cache = cache;
  auto session = winfer::Session::create(model.value(), options);
  winfer::set_log_callback(nullptr);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  REQUIRE(messages.size() == 1);
  CHECK(contains(messages[0], "autotune.txt:2"));
  // The file was rewritten with the measurements.
  // The session's threads: left alone, the CPUs this process may run on.
  CHECK(contains(winfer_test::read_bytes(cache), "threads=" + std::to_string(winfer::default_thread_count()) + " "));
}
