// Helpers of the classify_* tests: running the winfer CLI and the shipped Fashion-MNIST models.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

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

struct CommandResult {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};

// Runs build/bin/winfer with `args` (a shell command line), capturing stdout and stderr.
inline CommandResult run_cli(const std::string& args) {
  TempDir dir;
  const std::string err = dir.file("stderr.txt");
  const std::string command = std::string(WINFER_BINARY_DIR) + "/bin/winfer " + args + " 2>" + err;
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.stdout_text.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.stderr_text = read_bytes(err);
  return result;
}

// ctest reports a test whose output contains this marker as skipped (SKIP_REGULAR_EXPRESSION,
// CMakeLists.txt): for tests that need something the machine lacks, e.g. the dataset package.
constexpr const char* kSkipMarker = "WINFER_TEST_SKIPPED";

}  // namespace winfer_test
