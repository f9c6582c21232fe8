// winfer: command-line front end of the engine.
//   winfer info MODEL             layers, shapes, parameters and FLOPs
//   winfer run  MODEL [options]   run on an .npy input (or a seeded random one), print top classes and time
//   winfer plan MODEL [options]   memory plan and measured peak memory per convolution algorithm
//   winfer bench MODEL...|--zoo   time whole networks: init, first run, median/p95, per layer, peak memory
//   winfer bench --layers SET     time convolution layers per algorithm (and peer libraries)
//   winfer classify MODEL IMAGE... top classes of image files (or folders of them)
//   winfer eval MODEL --dataset fashion-mnist   accuracy on a labelled dataset
//   winfer quantize MODEL --dataset fashion-mnist -o OUT.int8.yaml   INT8 post-training quantization
// Results go to stdout; logs and timings to stderr.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <new>
#include <stdexcept>
#include <vector>

#include "apps/winfer/classifier_flags.h"
#include "apps/winfer/commands.h"
#include "apps/winfer/input_size.h"

namespace {

// CLI11 hands an option the next argument whatever it looks like, so `--input --repeat 0`
// would read a file named "--repeat". A value that looks like an option (every option of
// winfer's is long, but -h) is refused; a file of such a name can still be given as ./--name.
// Other values starting with '-' ("-1", "-inf") are left to the numeric checks, which say what
// range they expect.
CLI::Validator not_an_option(bool is_text) {
  return CLI::Validator(
      [is_text](std::string& value) -> std::string {
        if (value.rfind("--", 0) != 0 && value != "-h") return "";
        return "the value is missing: '" + value + "' is the next option" +
               (is_text ? " (for a file of that name, write ./" + value + ")" : std::string());
      },
      "", "");
}

// Seeds are uint64_t, which CLI11 would take from "-1" (as 2^64 - 1) or saturate from
// "99999999999999999999" without a word: only plain decimal digits that fit are accepted.
std::string seed_value(const std::string& value) {
  const std::string expected = "'" + value + "' is not a whole number from 0 to 18446744073709551615";
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) return expected;
  errno = 0;
  (void)std::strtoull(value.c_str(), nullptr, 10);
  return errno == ERANGE ? expected : "";
}

// A finite number in [min, max]: CLI11's Range lets "nan" through (every comparison with NaN
// is false) and "inf" where max is unbounded.
CLI::Validator finite_number(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(value.c_str(), &end);
        const bool parsed = !value.empty() && end == value.c_str() + value.size() && errno != ERANGE;
        if (parsed && std::isfinite(v) && v >= min && v <= max) return "";
        const std::string range = max == DBL_MAX
                                      ? ">= " + CLI::detail::to_string(min)
                                      : "in [" + CLI::detail::to_string(min) + ", " + CLI::detail::to_string(max) + "]";
        return "'" + value + "' is not a finite number " + range;
      },
      "", "FINITE");
}

// Every option that takes a value, in every subcommand, refuses one that looks like an option.
void refuse_options_as_values(CLI::App* app) {
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* opt : sub->get_options()) {
      // transform(), not check(): it runs first, before a Range could call "--top" out of range.
      if (opt->nonpositional() && opt->get_type_size_max() > 0)
        opt->transform(not_an_option(opt->get_type_name() == "TEXT"));
    }
  }
}

// What a subcommand throws past its own Status handling is a bug, not a message for the user:
// said in words (no C++ type names), with exit status 1 like every other error.
template <typename Run>
int guarded(const char* name, const Run& run) {
  try {
    return run();
  } catch (const std::bad_alloc&) {
    std::cerr << "error: winfer " << name << ": out of memory (an allocation the memory checks did not foresee)\n";
  } catch (const std::length_error&) {
    std::cerr << "error: winfer " << name << ": out of memory (a buffer larger than this machine can address)\n";
  } catch (...) {
    std::cerr << "error: winfer " << name << ": unexpected internal failure; please report it with the command line\n";
  }
  return 1;
}

// A subcommand: its CLI11 app (options bound to its Args) and the function that runs it.
struct Command {
  const char* name;
  CLI::App* app;
  std::function<int()> run;
};

// --threads' help: the default is the engine's (winfer::default_thread_count()), shown as this
// process sees it.
const std::string kThreadsHelp = "Threads (default: the CPUs this process may run on, " +
                                 std::to_string(winfer::default_thread_count()) +
                                 " here; 1 runs on the calling thread only)";

const char* const kAutotuneCacheHelp =
    "With --conv auto: keep the measured per-layer times in this text file and reuse them (keyed by CPU ISA, "
    "threads and layer shape), so that later sessions choose without measuring, and always the same way";

const char* const kImagesPerRunHelp =
    "Run the batch this many images at a time through an arena for that many: the memory of one run's images "
    "whatever the batch; 0 = the whole batch at once (SessionOptions::images_per_run; default: the engine's choice, "
    "runs of 2 images (4 where the weights are large next to an image's activations), one per thread side by side, "
    "where the batch divides among the threads)";

// --confine-to DIR, for every command that loads a model file.
void add_confine_to(CLI::App* command, std::string& confine_to) {
  command->add_option(
      "--confine-to", confine_to,
      "Refuse files the model names (weights:, labels:) outside this folder: for model files from elsewhere");
}

// One function per subcommand, each declaring that subcommand's options.
Command add_info(CLI::App* app, winfer::cli::InfoArgs& info) {
  CLI::App* info_cmd = app->add_subcommand("info", "Show a model's layers, shapes, parameters and FLOPs");
  info_cmd->add_option("model", info.model, "Model file: winfer YAML, or ONNX (.onnx)")->required();
  info_cmd->add_option("--weights", info.weights, "Weights (.safetensors), overrides the YAML's");
  add_confine_to(info_cmd, info.confine_to);
  return {"info", info_cmd, [&info] { return winfer::cli::run_info(info); }};
}

Command add_run(CLI::App* app, winfer::cli::RunArgs& run) {
  CLI::App* run_cmd =
      app->add_subcommand("run", "Run a model on an input tensor and print the top classes and the time");
  run_cmd->add_option("model", run.model, "Model file: winfer YAML, or ONNX (.onnx)")->required();
  CLI::Option* run_weights =
      run_cmd->add_option("--weights", run.weights, "Weights (.safetensors), overrides the YAML's");
  run_cmd->add_option("--random-weights", run.random_weights_seed, "Fill the weights deterministically from SEED")
      ->check(seed_value)
      ->excludes(run_weights);
  CLI::Option* run_input =
      run_cmd->add_option("--input", run.input, "Input .npy (float32, NCHW); default: seeded random input");
  run_cmd->add_option("--seed", run.input_seed, "Seed of the random input")
      ->capture_default_str()
      ->check(seed_value)
      ->excludes(run_input);
  run_cmd->add_option("--output", run.output, "Write the output tensor to this .npy file");
  run_cmd
      ->add_option("--conv", run.conv,
                   "Convolution algorithm: im2win (default), indirect, im2col, direct, winograd (3x3 stride-1 layers; "
                   "im2win for the rest), or auto (CPU: per layer, the fastest of them measured when the session is "
                   "made; the fastest configuration)")
      ->capture_default_str();
  run_cmd->add_option("--autotune-cache", run.autotune_cache, kAutotuneCacheHelp);
  run_cmd->add_option("--device", run.device, "cpu, cuda, cuda:N, or auto (CUDA when a device is present)")
      ->capture_default_str();
  run_cmd->add_flag("--tf32", run.tf32, "CUDA: let cuBLAS/cuDNN use TF32 tensor cores (faster, ~1e-3 relative error)");
  CLI::Option* run_expect =
      run_cmd->add_option("--expect", run.expect,
                          "Compare the output with this .npy: max |diff| / max |expected|, exit 1 above --tolerance");
  run_cmd->add_option("--tolerance", run.tolerance, "Relative tolerance of --expect")
      ->capture_default_str()
      ->check(finite_number(0, DBL_MAX))
      ->needs(run_expect);
  run_cmd->add_flag("--check-numerics", run.check_numerics,
                    "Fail at the first NaN/Inf, naming the input or the layer that produced it");
  run_cmd->add_option("--threads", run.threads, kThreadsHelp)->check(CLI::Range(1, 1024));
  run_cmd->add_option("--batch", run.batch, "Batch size (default: the model's, or the input's)")
      ->check(CLI::Range(1, 1 << 20));
  run_cmd->add_option("--images-per-run", run.images_per_run, kImagesPerRunHelp)->check(CLI::Range(0, 1 << 20));
  run_cmd->add_option("--size", run.size,
                      std::string(winfer::cli::kSizeHelp) + "; with --input, the file's shape is the session's");
  run_cmd->add_option("--top", run.top, "Classes to print per image")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  run_cmd->add_option("--repeat", run.repeat, "Timed runs after one warm-up run (0: just one cold run)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  run_cmd->add_flag("--profile", run.profile, "Print per-layer times of the last run");
  run_cmd->add_flag("!--no-concat-alias", run.concat_alias,
                    "Give every concat input its own storage and copy (SessionOptions::concat_alias = false; default: "
                    "a convolution writes straight into its channel slice of the concat output)");
  run_cmd->add_flag("!--no-fuse", run.fuse,
                    "Keep batch norm, activations and residual adds as layers of their own (no folding or fusion)");
  add_confine_to(run_cmd, run.confine_to);
  return {"run", run_cmd, [&run] { return winfer::cli::run_run(run); }};
}

Command add_plan(CLI::App* app, winfer::cli::PlanArgs& plan) {
  CLI::App* plan_cmd = app->add_subcommand(
      "plan", "Memory per convolution algorithm: weights, planned arena, lower bound, measured peak");
  plan_cmd->add_option("model", plan.model, "Model file: winfer YAML, or ONNX (.onnx)")->required();
  CLI::Option* plan_weights =
      plan_cmd->add_option("--weights", plan.weights, "Weights (.safetensors), overrides the YAML's");
  plan_cmd
      ->add_option("--random-weights", plan.random_weights_seed,
                   "Fill the weights deterministically from SEED (default for a model without weights: 1)")
      ->check(seed_value)
      ->excludes(plan_weights);
  plan_cmd->add_option("--conv", plan.conv,
                       "Algorithms to compare, comma-separated, or 'all' (default: the default algorithm vs im2col)");
  plan_cmd->add_option("--autotune-cache", plan.autotune_cache, kAutotuneCacheHelp);
  plan_cmd->add_option("--batch", plan.batch, "Batch size (default: the model's)")->check(CLI::Range(1, 1 << 20));
  plan_cmd->add_option("--images-per-run", plan.images_per_run, kImagesPerRunHelp)->check(CLI::Range(0, 1 << 20));
  plan_cmd->add_option("--size", plan.size, winfer::cli::kSizeHelp);
  plan_cmd->add_option("--threads", plan.threads, "Threads of the measured run" + kThreadsHelp.substr(7))
      ->check(CLI::Range(1, 1024));
  plan_cmd->add_flag("--json", plan.json, "Print one JSON object instead of the table");
  plan_cmd->add_option("--svg", plan.svg, "Draw the arenas into this SVG file");
  plan_cmd->add_flag("!--no-measure", plan.measure, "Plan only; skip the measured run");
  plan_cmd->add_flag("!--no-concat-alias", plan.concat_alias,
                     "Give every concat input its own storage and copy (SessionOptions::concat_alias = false; default: "
                     "a convolution writes straight into its channel slice of the concat output)");
  plan_cmd->add_flag("--compare-fp32", plan.compare_fp32,
                     "A quantized model: also each algorithm on the same network in FP32 (column ALGO/fp32: its "
                     "dequantized weights on the FP32 kernels, float32 tensors)");
  add_confine_to(plan_cmd, plan.confine_to);
  return {"plan", plan_cmd, [&plan] { return winfer::cli::run_plan(plan); }};
}

Command add_bench(CLI::App* app, winfer::cli::BenchArgs& bench) {
  CLI::App* bench_cmd = app->add_subcommand(
      "bench", "Time whole networks (MODEL..., --zoo) or convolution layers (--layers) per algorithm and peer library");
  bench_cmd->add_option(
      "models", bench.models,
      "Model files (YAML or .onnx) or zoo names (resnet18 = models/zoo/resnet18.yaml): whole networks");
  bench_cmd->add_flag("--zoo", bench.zoo, "Whole networks: resnet18, resnet50, vgg16, shufflenet_v2_x1_0");
  bench_cmd
      ->add_option("--device", bench.device,
                   "Device: cpu, cuda, cuda:N, auto (whole networks); cpu, cuda, cuda:N (--layers: the CUDA algorithms "
                   "timed on the device)")
      ->capture_default_str();
  bench_cmd->add_flag("--per-layer", bench.per_layer,
                      "Whole networks: per-layer medians, GFLOP/s and % of the FMA peak");
  bench_cmd->add_option("--layers", bench.layers, "Layer set: paper12, zoo, tiny, a layer-set .yaml or a model .yaml");
  bench_cmd->add_option("--conv", bench.conv,
                        "Implementations, comma-separated (engine algorithms, and for networks on the CPU auto: per "
                        "layer the fastest, measured at session creation; with --layers also onednn, xnnpack); "
                        "default: the engine's default algorithm for networks, all that apply for layers");
  bench_cmd->add_option("--autotune-cache", bench.autotune_cache, std::string("Whole networks: ") + kAutotuneCacheHelp);
  bench_cmd->add_option("--filter", bench.filter, "Only layers whose name contains this text");
  bench_cmd->add_option("--threads", bench.threads, kThreadsHelp)->check(CLI::Range(1, 1024));
  bench_cmd->add_option("--batch", bench.batch, "Batch size (default: the layer set's, or the model's)")
      ->check(CLI::Range(1, 1 << 20));
  bench_cmd->add_option("--images-per-run", bench.images_per_run, std::string("Whole networks: ") + kImagesPerRunHelp)
      ->check(CLI::Range(0, 1 << 20));
  bench_cmd->add_option("--size", bench.size, std::string("Whole networks: ") + winfer::cli::kSizeHelp);
  bench_cmd->add_option("--runs", bench.runs, "Timed runs per layer and implementation (more for tiny layers)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  bench_cmd
      ->add_option("--min-time", bench.min_time,
                   "Seconds of timed runs at least per network, or per layer and implementation on average "
                   "(--layers times a layer's implementations in turn, call by call)")
      ->capture_default_str()
      ->check(finite_number(0, 3600));
  bench_cmd->add_option("--seed", bench.seed, "Seed of the random inputs and weights")
      ->capture_default_str()
      ->check(seed_value);
  bench_cmd->add_flag("--json", bench.json, "Print one JSON object instead of the table");
  bench_cmd->add_flag("--list", bench.list, "List the layers of the set and exit");
  bench_cmd->add_flag("!--no-verify", bench.verify, "Skip checking every output against the direct convolution");
  bench_cmd->add_flag("!--no-peak", bench.peak, "Skip the FMA peak probe (no % of peak)");
  bench_cmd->add_flag("!--no-concat-alias", bench.concat_alias,
                      "Whole networks: give every concat input its own storage and copy (SessionOptions::concat_alias "
                      "= false; default: a convolution writes straight into its channel slice of the concat output)");
  return {"bench", bench_cmd, [&bench] { return winfer::cli::run_bench(bench); }};
}

Command add_classify(CLI::App* app, winfer::cli::ClassifyArgs& classify) {
  CLI::App* classify_cmd =
      app->add_subcommand("classify", "Classify image files (JPEG, PNG, BMP, GIF, PGM/PPM, ...) or folders of them");
  classify_cmd->add_option("model", classify.model, "Model file: winfer YAML, or ONNX (.onnx)")->required();
  classify_cmd->add_option("images", classify.images, "Image files or folders")->required();
  classify_cmd->add_option("--weights", classify.weights, "Weights (.safetensors), overrides the YAML's");
  classify_cmd->add_option("--top", classify.top, "Classes to print per image")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  classify_cmd->add_option("--device", classify.device, "cpu, cuda, cuda:N, or auto (CUDA when a device is present)")
      ->capture_default_str();
  classify_cmd->add_option("--conv", classify.conv,
                           "Convolution algorithm (default: the engine's; auto: per layer the fastest, measured when "
                           "the session is made)");
  classify_cmd->add_option("--autotune-cache", classify.autotune_cache, kAutotuneCacheHelp);
  classify_cmd->add_option("--threads", classify.threads, kThreadsHelp)->check(CLI::Range(1, 1024));
  classify_cmd->add_option("--batch", classify.batch, "Images per batch (default: up to 8)")
      ->check(CLI::Range(1, 1 << 16));
  classify_cmd->add_option("--images-per-run", classify.images_per_run, kImagesPerRunHelp)
      ->check(CLI::Range(0, 1 << 16));
  classify_cmd->add_flag("--json", classify.json, "Print one JSON object instead of text");
  classify_cmd->add_option("--preprocess", classify.preprocess, winfer::cli::kPreprocessFlagHelp);
  classify_cmd->add_option("--labels", classify.labels, winfer::cli::kLabelsFlagHelp);
  classify_cmd->footer(winfer::cli::classifier_flags_footer(""));
  add_confine_to(classify_cmd, classify.confine_to);
  return {"classify", classify_cmd, [&classify] { return winfer::cli::run_classify(classify); }};
}

Command add_eval(CLI::App* app, winfer::cli::EvalArgs& eval) {
  CLI::App* eval_cmd = app->add_subcommand("eval", "Accuracy, per-class accuracy and confusions on a labelled dataset");
  eval_cmd->add_option("model", eval.model, "Model file: winfer YAML, or ONNX (.onnx)")->required();
  eval_cmd->add_option("--weights", eval.weights, "Weights (.safetensors), overrides the YAML's");
  eval_cmd->add_option("--dataset", eval.dataset, "Dataset (fashion-mnist)")->capture_default_str();
  eval_cmd->add_option("--split", eval.split, "test or train")
      ->capture_default_str()
      ->check(CLI::IsMember({"test", "train"}));
  eval_cmd->add_option("--data", eval.data, "Folder of the IDX files (default: /usr/share/datasets/fashion-mnist)");
  eval_cmd->add_option("--limit", eval.limit, "Only the first N images")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 40));
  eval_cmd->add_option("--conv", eval.conv,
                       "Convolution algorithm (default: the engine's; auto: per layer the fastest, measured when the "
                       "session is made)");
  eval_cmd->add_option("--autotune-cache", eval.autotune_cache, kAutotuneCacheHelp);
  eval_cmd->add_option("--device", eval.device, "cpu, cuda, cuda:N, or auto (CUDA when a device is present)")
      ->capture_default_str();
  eval_cmd->add_option("--threads", eval.threads, kThreadsHelp)->check(CLI::Range(1, 1024));
  eval_cmd->add_option("--batch", eval.batch, "Images per batch (default: 100)")->check(CLI::Range(1, 1 << 16));
  eval_cmd->add_option("--images-per-run", eval.images_per_run, kImagesPerRunHelp)->check(CLI::Range(0, 1 << 16));
  eval_cmd->add_option("--predictions", eval.predictions,
                       "Write each image's predicted class to this file (one byte each)");
  eval_cmd->add_option("--preprocess", eval.preprocess, winfer::cli::kPreprocessFlagHelp);
  eval_cmd->add_option("--labels", eval.labels, winfer::cli::kLabelsFlagHelp);
  eval_cmd->footer(winfer::cli::classifier_flags_footer(
      "  winfer eval fashion.onnx --preprocess fashion.yaml --labels models/fashion/labels.txt"));
  add_confine_to(eval_cmd, eval.confine_to);
  return {"eval", eval_cmd, [&eval] { return winfer::cli::run_eval(eval); }};
}

Command add_convert(CLI::App* app, winfer::cli::ConvertArgs& convert) {
  CLI::App* convert_cmd = app->add_subcommand(
      "convert", "Write an ONNX model in winfer's own form: a YAML model file and its safetensors weights");
  convert_cmd->add_option("model", convert.model, "ONNX model file (.onnx)")->required();
  convert_cmd->add_option("-o,--output", convert.output, "The YAML model file to write")->required();
  convert_cmd->add_option("--weights", convert.weights,
                          "The safetensors file to write (default: the output's name with .safetensors)");
  convert_cmd->footer(
      "Loading the written pair gives bitwise the same outputs as loading the ONNX file.\n"
      "Example:\n  winfer convert resnet50.onnx -o resnet50.yaml\n  winfer run resnet50.yaml --input x.npy");
  return {"convert", convert_cmd, [&convert] { return winfer::cli::run_convert(convert); }};
}

Command add_quantize(CLI::App* app, winfer::cli::QuantizeArgs& q) {
  CLI::App* cmd = app->add_subcommand(
      "quantize", "Post-training INT8 quantization, calibrated on images: a quantized YAML model and its weights");
  cmd->add_option("model", q.model, "Model file (winfer YAML with a safetensors weights file)")->required();
  cmd->add_option("-o,--output", q.output, "The quantized YAML model to write (e.g. MODEL.int8.yaml)")->required();
  cmd->add_option("--weights", q.weights, "The safetensors file to write (default: the output's name, .safetensors)");
  cmd->add_option("--calibrate", q.calibrate, "Folder of calibration images (the model's preprocessing)");
  cmd->add_option("--dataset", q.dataset, "Calibrate on a dataset's training images (fashion-mnist)");
  cmd->add_option("--data", q.data, "Folder of the dataset's IDX files (default: /usr/share/datasets/fashion-mnist)");
  cmd->add_option("--images", q.images, "At most this many calibration images (the first ones)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24));
  cmd->add_option("--method", q.method, "Activation ranges: minmax, percentile or entropy (KL divergence)")
      ->capture_default_str()
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}));
  cmd->add_option("--percentile", q.percentile, "--method percentile: the percentile of |x| kept")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 100.0));
  cmd->add_option("--keep-fp32", q.keep_fp32, "Layers to keep in FP32 (comma-separated conv2d/linear names)")
      ->delimiter(',');
  cmd->add_option("--int8", q.int8, "Layers to quantize that the default rules keep in FP32 (first conv, last linear)")
      ->delimiter(',');
  cmd->add_option("--threads", q.threads, "Threads of the calibration runs" + kThreadsHelp.substr(7))
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--random-weights", q.random_weights_seed,
                  "Quantize the model with seeded random weights (zoo models without weights)");
  cmd->add_option("--random-images", q.random_images,
                  "Calibrate on N seeded random images (a sanity check for models without data)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  cmd->footer(
      "Batch norm is folded into the convolutions; activations become u8 per tensor (with a zero point),\n"
      "conv2d/linear weights s8 per output channel; INT8 layers run on the INT8 kernels (AVX-512 VNNI,\n"
      "AVX2 or scalar) with u8 tensors between them. docs/MODEL_FORMAT.md, \"Quantized models\".\n"
      "Example:\n  winfer quantize models/fashion/fashion_vgg.yaml --dataset fashion-mnist --images 500 -o "
      "vgg.int8.yaml\n"
      "  winfer eval vgg.int8.yaml --dataset fashion-mnist");
  return {"quantize", cmd, [&q] { return winfer::cli::run_quantize(q); }};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"winfer: a CNN inference engine (im2win, indirect, im2col, direct and Winograd convolution)"};
  app.failure_message(
      [](const CLI::App* a, const CLI::Error& e) { return "error: " + CLI::FailureMessage::simple(a, e); });
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("winfer ") + winfer::cli::version());

  winfer::cli::InfoArgs info;
  winfer::cli::RunArgs run;
  winfer::cli::PlanArgs plan;
  winfer::cli::BenchArgs bench;
  winfer::cli::ClassifyArgs classify;
  winfer::cli::EvalArgs eval;
  winfer::cli::ConvertArgs convert;
  winfer::cli::QuantizeArgs quantize;
  const std::vector<Command> commands = {add_info(&app, info),       add_run(&app, run),           add_plan(&app, plan),
                                         add_bench(&app, bench),     add_classify(&app, classify), add_eval(&app, eval),
                                         add_convert(&app, convert), add_quantize(&app, quantize)};

  refuse_options_as_values(&app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; a usage error prints CLI11's message and exits 1,
    // as every other error does (CLI11's own codes, 105-114, would tell scripts nothing more).
    return app.exit(e) == 0 ? 0 : 1;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return guarded(command.name, command.run);
  }
  return 1;
}
