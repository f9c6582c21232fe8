// winfer: command-line front end of the engine.
//   winfer info MODEL             layers, shapes, parameters and FLOPs
//   winfer run  MODEL [options]   run on an .npy input (or a seeded random one), print top classes and time
// Results go to stdout; logs and timings to stderr.
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/winfer/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"winfer: a CNN inference engine (im2win, indirect, im2col and direct convolution)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("winfer ") + winfer::cli::version());

  winfer::cli::InfoArgs info;
  CLI::App* info_cmd = app.add_subcommand("info", "Show a model's layers, shapes, parameters and FLOPs");
  info_cmd->add_option("model", info.model, "Model YAML file")->required();
  info_cmd->add_option("--weights", info.weights, "Weights (.safetensors), overrides the YAML's");

  winfer::cli::RunArgs run;
  CLI::App* run_cmd = app.add_subcommand("run", "Run a model on an input tensor and print the top classes and the time");
  run_cmd->add_option("model", run.model, "Model YAML file")->required();
  run_cmd->add_option("--weights", run.weights, "Weights (.safetensors), overrides the YAML's");
  run_cmd->add_option("--random-weights", run.random_weights_seed, "Fill the weights deterministically from SEED");
  run_cmd->add_option("--input", run.input, "Input .npy (float32, NCHW); default: seeded random input");
  run_cmd->add_option("--seed", run.input_seed, "Seed of the random input")->capture_default_str();
  run_cmd->add_option("--output", run.output, "Write the output tensor to this .npy file");
  run_cmd->add_option("--conv", run.conv, "Convolution algorithm (direct, im2col)")->capture_default_str();
  run_cmd->add_option("--threads", run.threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  run_cmd->add_option("--batch", run.batch, "Batch size (default: the model's, or the input's)")->check(CLI::Range(1, 1 << 20));
  run_cmd->add_option("--top", run.top, "Classes to print per image")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  run_cmd->add_option("--repeat", run.repeat, "Timed runs after one warm-up run (0: just one cold run)")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  run_cmd->add_flag("--profile", run.profile, "Print per-layer times of the last run");

  CLI11_PARSE(app, argc, argv);
  if (info_cmd->parsed()) return winfer::cli::run_info(info);
  if (run_cmd->parsed()) return winfer::cli::run_run(run);
  return 2;
}
