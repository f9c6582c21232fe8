// conv_algorithm "auto" on a convolution that absorbed a grouped one (rule pointwise_depthwise:
// RegNet's and ResNeXt's 1x1 -> grouped 3x3, which one kernel runs band by band, the second stage
// with the first's algorithm): the candidates' times are the pair's, second stage included
// (engine/src/conv_autotune.cpp, measure_layer). Timed, with a margin no noise reaches: the
// absorbed 3x3 does 36x the 1x1's work, so the pair takes several times the 1x1 alone.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "core/test_files.h"
#include "engine/fusion_test_util.h"
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
  const std::string head = model_header(8, 24, 24) + "layers:\n" + same_conv("pw", 8, 64, 1);
  const std::string pair = head + same_conv("g", 64, 64, 3, /*groups=*/2);
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
    CHECK(pair_ms.at(algorithm) > 4 * ms);
  }
  // The cache keeps the pair's times under the pair's shapes, apart from the 1x1's own.
  const std::string text = read_bytes(cache);
  CHECK(contains(text, " then "));
}
