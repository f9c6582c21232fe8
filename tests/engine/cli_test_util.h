// Running the winfer CLI from tests: its exit status, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "engine/model_test_util.h"

// Defined where this test binary, and so the CLI it runs (same build), has a sanitizer: its
// allocator keeps freed memory (quarantine), so memory measurements prove nothing there.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WINFER_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WINFER_TEST_SANITIZED 1
#endif

namespace winfer_test {

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

}  // namespace winfer_test
