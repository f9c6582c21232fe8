// Helpers of the classify_* tests: the shipped Fashion-MNIST models (and the CLI runner).
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "engine/cli_test_util.h"
#include "engine/model_test_util.h"

namespace winfer_test {

// The trained models of models/fashion/ (file stems).
inline const std::vector<std::string> kFashionModels = {"fashion_resnet", "fashion_vgg", "fashion_shufflenet"};

inline std::vector<std::string> fashion_labels() {
  std::ifstream in(repo_path("models/fashion/labels.txt"));
  std::vector<std::string> labels;
  for (std::string line; std::getline(in, line);) labels.push_back(line);
  return labels;
}

// ctest reports a test whose output contains this marker as skipped (SKIP_REGULAR_EXPRESSION,
// CMakeLists.txt): for tests that need something the machine lacks, e.g. the dataset package.
constexpr const char* kSkipMarker = "WINFER_TEST_SKIPPED";

}  // namespace winfer_test
