// The CLI's subcommands, each a plain function over its parsed arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace winfer::cli {

const char* version();

struct InfoArgs {
  std::string model, weights;
};
int run_info(const InfoArgs& args);

struct RunArgs {
  std::string model, weights, input, output;
  std::optional<uint64_t> random_weights_seed;
  uint64_t input_seed = 0;
  std::string conv = "im2col";
  int threads = 1;
  int64_t batch = 0;
  int top = 5;
  int repeat = 5;
  bool profile = false;
};
int run_run(const RunArgs& args);

}  // namespace winfer::cli
