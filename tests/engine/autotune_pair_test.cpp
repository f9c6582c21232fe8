// conv_algorithm "auto" on a convolution that absorbed a grouped one (rule pointwise_depthwise:
// RegNet's and ResNeXt's 1x1 -> grouped 3x3, which one kernel runs band by band, the second stage
// with the first's algorithm): the candidates' times are the pair's, second stage included
// (engine/src/conv_autotune.cpp, measure_layer). Timed, with a margin no noise reaches: the
// absorbed 3x3 does 72x the 1x1's work, so the pair takes several times the 1x1 alone; and
// what the op tells the autotuner of the pair (ConvCapability::absorbed_conv).
#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/fusion_test_util.h"
#include "engine/src/conv_capability.h"
#include "engine/src/graph.h"
#include "winfer/winfer.h"

using namespace winfer_test;

namespace {

// Per candidate algorithm, the time "auto" measured for layer `layer` of `yaml`, in a session of
// one thread that keeps its times in `cache`.
std::map<std::string, double> candidate_ms(const std::string& yaml, const std::string& layer,
                                           const std::string& cache) {
  winfer::SessionOptions options;
  options.conv_algorithm = "auto";
  options.threads = 1;
  options.autotune_cache = cache;
  auto session = winfer::Session::create(load_ok(yaml, /*fuse=*/true, 5), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  std::map<std::string, double> ms;
  for (const winfer::ConvChoice& choice : session.value()->memory_report().conv_choices) {
    if (choice.layer != layer) continue;
    for (const winfer::ConvCandidate& c : choice.candidates) ms[c.algorithm] = c.milliseconds;
  }
  return ms;
}

}  // namespace

TEST_CASE("autotune: a 1x1 convolution that absorbed a grouped 3x3 is timed with it, as its kernel runs the pair") {
  const std::string head = model_header(8, 24, 24) + "layers:\n" + same_conv("pw", 8, 128, 1);
  const std::string pair = head + same_conv("g", 128, 128, 3, /*groups=*/2);
  REQUIRE(kernel_description(load_ok(pair, true, 5), winfer::Shape{1, 8, 24, 24}, "pw") ==
          "im2win (then grouped, fused)");
  TempDir dir;
  const std::string cache = dir.file("autotune.txt");
  const auto alone_ms = candidate_ms(head, "pw", cache);
  const auto pair_ms = candidate_ms(pair, "pw", cache);  // the same 1x1's shape: not read from the cache
  REQUIRE(alone_ms.size() >= 2);
  REQUIRE(pair_ms.size() == alone_ms.size());
  for (const auto& entry : alone_ms) {
    // Named copies, not structured bindings: clang's C++17 cannot capture those in INFO's lambda.
    const std::string algorithm = entry.first;
    const double ms = entry.second;
    INFO(algorithm << ": 1x1 alone " << ms << " ms, with its grouped 3x3 " << pair_ms.at(algorithm) << " ms");
    CHECK(ms > 0);
    // The 3x3 does 72x the 1x1's FLOPs; under ASan (our kernels instrumented, OpenBLAS not) a
    // pair of half that work measured 3.9x its 1x1 with im2col. Timing the 1x1 alone gives 1x.
    CHECK(pair_ms.at(algorithm) > 2 * ms);
  }
  // The cache keeps the pair's times under the pair's shapes, apart from the 1x1's own.
  const std::string text = read_bytes(cache);
  CHECK(contains(text, " then "));
}

TEST_CASE("autotune: the absorbed convolution follows the first's algorithm, a depthwise one takes depthwise") {
  const winfer::Shape input{2, 8, 9, 7};
  const std::string head = model_header(8, 9, 7) + "layers:\n" + same_conv("pw", 8, 16, 1);
  const winfer::ConvAlgorithm& indirect = *winfer::find_conv_algorithm("indirect");
  // The answer points into the model's ops: the models stay alive with the test.
  std::vector<std::shared_ptr<const winfer::Model>> models;
  const auto absorbed = [&](const std::string& yaml) {
    const auto& model = models.emplace_back(load_ok(yaml, true, 5));
    for (const winfer::GraphNode& node : model->graph().nodes) {
      if (node.name == "pw") return node.op->conv()->absorbed_conv(indirect, input);
    }
    FAIL("no layer pw");
    return std::optional<winfer::ConvCapability::AbsorbedConv>();
  };
  const auto grouped = absorbed(head + same_conv("g", 16, 16, 3, 4));
  REQUIRE(grouped.has_value());
  CHECK(std::string(grouped->algorithm->name()) == "indirect");
  CHECK(grouped->params.groups == 4);
  CHECK(grouped->params.in_channels == 16);
  CHECK(grouped->params.in_h == 9);
  CHECK(grouped->params.batch == 2);
  CHECK(grouped->op->bias().numel() == 16);
  const auto depthwise = absorbed(head + same_conv("dw", 16, 16, 3, 16));
  REQUIRE(depthwise.has_value());
  CHECK(std::string(depthwise->algorithm->name()) == "depthwise");
  CHECK_FALSE(absorbed(head).has_value());  // nothing absorbed
}
