// The per-layer profile (winfer bench --per-layer, --profile) names how a convolution ran
// where its algorithm has more than one path: im2win's group sets for groups of 4, 8 or 16
// output channels, and nothing for the others.
#include <doctest/doctest.h>

#include <string>

#include "engine/fusion_test_util.h"

using namespace winfer_test;

namespace {

std::string grouped_conv_yaml(int64_t channels, int64_t groups) {
  const std::string c = std::to_string(channels);
  return model_header(channels, 7, 6) + "layers:\n  - {name: g, op: conv2d, in_channels: " + c +
         ", out_channels: " + c + ", kernel_size: 3, padding: 1, groups: " + std::to_string(groups) + "}\n";
}

std::string description(int64_t channels, int64_t groups) {
  return kernel_description(load_ok(grouped_conv_yaml(channels, groups), true, 5), winfer::Shape{1, channels, 7, 6},
                            "g");
}

}  // namespace

TEST_CASE("kernel variant: im2win says when a grouped layer runs in group sets") {
  CHECK(description(16, 4) == "im2win (group sets)");  // 4 per group
  CHECK(description(24, 3) == "im2win (group sets)");  // 8 per group
  CHECK(description(48, 3) == "im2win (group sets)");  // 16 per group
  CHECK(description(24, 12) == "im2win");              // 2 per group: merged groups
  CHECK(description(24, 1) == "im2win");               // no groups
  CHECK(description(64, 2) == "im2win");               // 32 per group
}
