// winfer: command-line front end of the engine.
//   winfer info MODEL             layers, shapes, parameters and FLOPs
//   winfer run  MODEL [options]   run on an .npy input (or a seeded random one), print top classes and time
//   winfer plan MODEL [options]   memory plan and measured peak memory per convolution algorithm
//   winfer bench MODEL...|--zoo   time whole networks: init, first run, median/p95, per layer, peak memory
//   winfer bench --layers SET     time convolution layers per algorithm (and peer libraries)
//   winfer classify MODEL IMAGE... top classes of image files (or folders of them)
//   winfer eval MODEL --dataset fashion-mnist   accuracy on a labelled dataset
// Results go to stdout; logs and timings to stderr.
#include <CLI/CLI.hpp>

#include <iostream>

#include "apps/winfer/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"winfer: a CNN inference engine (im2win, indirect, im2col, direct and Winograd convolution)"};
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
  run_cmd->add_option("--conv", run.conv, "Convolution algorithm: im2win (default), indirect, im2col, direct, winograd (3x3 stride-1 layers; im2win for the rest)")->capture_default_str();
  run_cmd->add_option("--device", run.device, "cpu, cuda, cuda:N, or auto (CUDA when a device is present)")->capture_default_str();
  run_cmd->add_flag("--tf32", run.tf32, "CUDA: let cuBLAS/cuDNN use TF32 tensor cores (faster, ~1e-3 relative error)");
  run_cmd->add_option("--expect", run.expect, "Compare the output with this .npy: max |diff| / max |expected|, exit 1 above --tolerance");
  run_cmd->add_option("--tolerance", run.tolerance, "Relative tolerance of --expect")->capture_default_str();
  run_cmd->add_flag("--check-numerics", run.check_numerics, "Fail at the first NaN/Inf, naming the input or the layer that produced it");
  run_cmd->add_option("--threads", run.threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  run_cmd->add_option("--batch", run.batch, "Batch size (default: the model's, or the input's)")->check(CLI::Range(1, 1 << 20));
  run_cmd->add_option("--top", run.top, "Classes to print per image")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  run_cmd->add_option("--repeat", run.repeat, "Timed runs after one warm-up run (0: just one cold run)")->capture_default_str()->check(CLI::Range(0, 1 << 20));
  run_cmd->add_flag("--profile", run.profile, "Print per-layer times of the last run");
  run_cmd->add_flag("!--no-fuse", run.fuse, "Keep batch norm, activations and residual adds as layers of their own (no folding or fusion)");

  winfer::cli::PlanArgs plan;
  CLI::App* plan_cmd = app.add_subcommand("plan", "Memory per convolution algorithm: weights, planned arena, lower bound, measured peak");
  plan_cmd->add_option("model", plan.model, "Model YAML file")->required();
  plan_cmd->add_option("--weights", plan.weights, "Weights (.safetensors), overrides the YAML's");
  plan_cmd->add_option("--random-weights", plan.random_weights_seed,
                       "Fill the weights deterministically from SEED (default for a model without weights: 1)");
  plan_cmd->add_option("--conv", plan.conv, "Algorithms to compare, comma-separated, or 'all' (default: the default algorithm vs im2col)");
  plan_cmd->add_option("--batch", plan.batch, "Batch size (default: the model's)")->check(CLI::Range(1, 1 << 20));
  plan_cmd->add_option("--threads", plan.threads, "Threads of the measured run")->capture_default_str()->check(CLI::Range(1, 1024));
  plan_cmd->add_flag("--json", plan.json, "Print one JSON object instead of the table");
  plan_cmd->add_option("--svg", plan.svg, "Draw the arenas into this SVG file");
  plan_cmd->add_flag("!--no-measure", plan.measure, "Plan only; skip the measured run");

  winfer::cli::BenchArgs bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Time whole networks (MODEL..., --zoo) or convolution layers (--layers) per algorithm and peer library");
  bench_cmd->add_option("models", bench.models, "Model files or zoo names (resnet18 = models/zoo/resnet18.yaml): whole networks");
  bench_cmd->add_flag("--zoo", bench.zoo, "Whole networks: resnet18, resnet50, vgg16, shufflenet_v2_x1_0");
  bench_cmd->add_option("--device", bench.device, "Device: cpu, cuda, cuda:N, auto (whole networks); cpu, cuda, cuda:N (--layers: the CUDA algorithms timed on the device)")->capture_default_str();
  bench_cmd->add_flag("--per-layer", bench.per_layer, "Whole networks: per-layer medians, GFLOP/s and % of the FMA peak");
  bench_cmd->add_option("--layers", bench.layers, "Layer set: paper12, zoo, tiny, a layer-set .yaml or a model .yaml");
  bench_cmd->add_option("--conv", bench.conv, "Implementations, comma-separated (engine algorithms; with --layers also onednn, xnnpack); default: the engine's default algorithm for networks, all that apply for layers");
  bench_cmd->add_option("--filter", bench.filter, "Only layers whose name contains this text");
  bench_cmd->add_option("--threads", bench.threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  bench_cmd->add_option("--batch", bench.batch, "Batch size (default: the layer set's)")->check(CLI::Range(1, 1 << 20));
  bench_cmd->add_option("--runs", bench.runs, "Timed runs per layer and implementation (more for tiny layers)")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  bench_cmd->add_option("--min-time", bench.min_time, "Seconds of timed runs at least per layer and implementation")->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  bench_cmd->add_option("--seed", bench.seed, "Seed of the random inputs and weights")->capture_default_str();
  bench_cmd->add_flag("--json", bench.json, "Print one JSON object instead of the table");
  bench_cmd->add_flag("--list", bench.list, "List the layers of the set and exit");
  bench_cmd->add_flag("!--no-verify", bench.verify, "Skip checking every output against the direct convolution");
  bench_cmd->add_flag("!--no-peak", bench.peak, "Skip the FMA peak probe (no % of peak)");

  winfer::cli::ClassifyArgs classify;
  CLI::App* classify_cmd = app.add_subcommand("classify", "Classify image files (JPEG, PNG, BMP, GIF, PGM/PPM, ...) or folders of them");
  classify_cmd->add_option("model", classify.model, "Model YAML file")->required();
  classify_cmd->add_option("images", classify.images, "Image files or folders")->required();
  classify_cmd->add_option("--weights", classify.weights, "Weights (.safetensors), overrides the YAML's");
  classify_cmd->add_option("--top", classify.top, "Classes to print per image")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  classify_cmd->add_option("--device", classify.device, "cpu, cuda, cuda:N, or auto (CUDA when a device is present)")->capture_default_str();
  classify_cmd->add_option("--conv", classify.conv, "Convolution algorithm (default: the engine's)");
  classify_cmd->add_option("--threads", classify.threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  classify_cmd->add_option("--batch", classify.batch, "Images per batch (default: up to 8)")->check(CLI::Range(1, 1 << 16));
  classify_cmd->add_flag("--json", classify.json, "Print one JSON object instead of text");

  winfer::cli::EvalArgs eval;
  CLI::App* eval_cmd = app.add_subcommand("eval", "Accuracy, per-class accuracy and confusions on a labelled dataset");
  eval_cmd->add_option("model", eval.model, "Model YAML file")->required();
  eval_cmd->add_option("--weights", eval.weights, "Weights (.safetensors), overrides the YAML's");
  eval_cmd->add_option("--dataset", eval.dataset, "Dataset (fashion-mnist)")->capture_default_str();
  eval_cmd->add_option("--split", eval.split, "test or train")->capture_default_str()->check(CLI::IsMember({"test", "train"}));
  eval_cmd->add_option("--data", eval.data, "Folder of the IDX files (default: /usr/share/datasets/fashion-mnist)");
  eval_cmd->add_option("--limit", eval.limit, "Only the first N images")->check(CLI::Range(int64_t(1), int64_t(1) << 40));
  eval_cmd->add_option("--conv", eval.conv, "Convolution algorithm (default: the engine's)");
  eval_cmd->add_option("--device", eval.device, "cpu, cuda, cuda:N, or auto (CUDA when a device is present)")->capture_default_str();
  eval_cmd->add_option("--threads", eval.threads, "Threads")->capture_default_str()->check(CLI::Range(1, 1024));
  eval_cmd->add_option("--batch", eval.batch, "Images per batch (default: 100)")->check(CLI::Range(1, 1 << 16));
  eval_cmd->add_option("--predictions", eval.predictions, "Write each image's predicted class to this file (one byte each)");

  CLI11_PARSE(app, argc, argv);
  if (info_cmd->parsed()) return winfer::cli::run_info(info);
  if (run_cmd->parsed()) return winfer::cli::run_run(run);
  if (plan_cmd->parsed()) return winfer::cli::run_plan(plan);
  if (bench_cmd->parsed()) return winfer::cli::run_bench(bench);
  if (classify_cmd->parsed()) return winfer::cli::run_classify(classify);
  if (eval_cmd->parsed()) return winfer::cli::run_eval(eval);
  return 2;
}
