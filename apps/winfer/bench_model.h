// `winfer bench MODEL...|--zoo`: whole networks timed and measured (cmd_bench_model.cpp), next
// to the layer mode `winfer bench --layers` (cmd_bench.cpp).
#pragma once

#include <string>
#include <vector>

#include "apps/winfer/commands.h"
#include "winfer/session.h"
#include "winfer/status.h"

namespace winfer::cli {

// The models of `--zoo`: the four networks the PyTorch comparison of docs/PERFORMANCE.md uses.
const std::vector<std::string>& bench_zoo_models();

// A model argument as a file: an existing path, else models/zoo/NAME.yaml (NAME with or without
// .yaml) in the working directory or in the source tree the binary was built from.
Result<std::string> resolve_model_path(const std::string& name);

// Where `--device` reaches the session: checks the spelling (cpu, cuda, cuda:N, auto) and sets
// SessionOptions::device; whether the device can run is the session's to say.
Status apply_device(const std::string& device, SessionOptions* options);

// Runs the model mode of `winfer bench`.
int run_bench_models(const BenchArgs& args);

}  // namespace winfer::cli
