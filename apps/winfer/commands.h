// The CLI's subcommands, each a plain function over its parsed arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "winfer/session.h"

namespace winfer::cli {

const char* version();

struct ConvertArgs {
  std::string model;    // .onnx
  std::string output;   // .yaml
  std::string weights;  // .safetensors; "": beside the output
};
int run_convert(const ConvertArgs& args);

struct QuantizeArgs {
  std::string model, output, weights;
  std::string calibrate;  // a folder of images
  std::string dataset;    // fashion-mnist (its training split)
  std::string data;       // folder of the dataset's IDX files; empty: the dataset package's
  int64_t images = 1000;
  std::string method = "percentile";
  double percentile = 99.99;
  std::vector<std::string> keep_fp32, int8;
  int threads = winfer::default_thread_count();
  std::optional<uint64_t> random_weights_seed;  // --random-weights SEED (zoo models without weights)
  int64_t random_images = 0;                    // --random-images N: calibrate on seeded random images
};
int run_quantize(const QuantizeArgs& args);

struct InfoArgs {
  std::string confine_to;  // --confine-to: LoadOptions::confine_to
  std::string model, weights;
};
int run_info(const InfoArgs& args);

struct RunArgs {
  std::string confine_to;  // --confine-to: LoadOptions::confine_to
  std::string model, weights, input, output;
  std::optional<uint64_t> random_weights_seed;
  uint64_t input_seed = 0;
  std::string conv = "im2win";
  std::string autotune_cache;  // --autotune-cache: SessionOptions::autotune_cache (--conv auto)
  std::string device = "cpu";  // cpu, cuda, cuda:N, auto
  bool tf32 = false;
  std::string expect;  // compare the output with this .npy (max |diff| / max |expected|)
  double tolerance = 1e-4;
  bool check_numerics = false;
  int threads = winfer::default_thread_count();
  int64_t batch = 0;
  // --images-per-run: SessionOptions::images_per_run (0: the whole batch in one run; unset: auto)
  int64_t images_per_run = winfer::SessionOptions::kImagesPerRunAuto;
  std::string size;  // --size HxW (input_size.h); "": the model's (or the --input file's)
  int top = 5;
  int repeat = 5;
  bool profile = false;
  bool fuse = true;          // false: batch norm and activations stay separate layers (debugging)
  bool concat_alias = true;  // --no-concat-alias: SessionOptions::concat_alias = false
};
int run_run(const RunArgs& args);

struct PlanArgs {
  std::string confine_to;  // --confine-to: LoadOptions::confine_to
  std::string model, weights;
  std::optional<uint64_t> random_weights_seed;
  std::string conv;            // comma-separated, or "all"; empty: the default algorithm vs im2col
  std::string autotune_cache;  // --autotune-cache: SessionOptions::autotune_cache (the auto column)
  int threads = winfer::default_thread_count();
  int64_t batch = 0;
  // --images-per-run: SessionOptions::images_per_run (0: the whole batch in one run; unset: auto)
  int64_t images_per_run = winfer::SessionOptions::kImagesPerRunAuto;
  std::string size;  // --size HxW (input_size.h); "": the model's
  bool json = false;
  std::string svg;
  bool measure = true;        // run once per algorithm in a child process and report its peak memory
  bool concat_alias = true;   // --no-concat-alias: SessionOptions::concat_alias = false
  bool compare_fp32 = false;  // a quantized model: also each algorithm on the model as FP32
};
int run_plan(const PlanArgs& args);

struct BenchArgs {
  // Model mode (cmd_bench_model.cpp): whole networks, when `models` is not empty or `zoo` is set.
  std::vector<std::string> models;  // model files or zoo names (resnet18 = models/zoo/resnet18.yaml)
  bool zoo = false;                 // resnet18, resnet50, vgg16, shufflenet_v2_x1_0
  std::string device = "cpu";       // cpu, cuda, cuda:N, auto
  bool per_layer = false;           // per-layer medians, GFLOP/s and % of the FMA peak
  // Layer mode (cmd_bench.cpp): single convolution layers.
  std::string layers;          // layer set name (bench/layers/NAME.yaml), layer-set file or model file
  std::string conv;            // comma-separated implementations; empty or "all": every one that applies
  std::string autotune_cache;  // whole networks, --conv auto: SessionOptions::autotune_cache
  std::string filter;          // only layers whose name contains this
  int threads = winfer::default_thread_count();
  int64_t batch = 0;  // 0: the set's
  // --images-per-run: SessionOptions::images_per_run (0: the whole batch in one run; unset: auto)
  int64_t images_per_run = winfer::SessionOptions::kImagesPerRunAuto;
  std::string size;        // whole networks: --size HxW (input_size.h); "": the model's
  int runs = 20;           // timed runs per (layer, conv), more for tiny layers (min_time)
  double min_time = 0.25;  // seconds of timed runs at least, up to 1000 runs
  uint64_t seed = 1;
  bool json = false, list = false, verify = true, peak = true;
  bool concat_alias = true;  // whole networks; --no-concat-alias: SessionOptions::concat_alias = false
};
int run_bench(const BenchArgs& args);

struct ClassifyArgs {
  std::string confine_to;  // --confine-to: LoadOptions::confine_to
  std::string model, weights;
  std::vector<std::string> images;  // files or folders
  int top = 5;
  std::string device = "cpu";
  std::string conv;            // empty: the engine's default algorithm
  std::string autotune_cache;  // --autotune-cache: SessionOptions::autotune_cache (--conv auto)
  int threads = winfer::default_thread_count();
  int64_t batch = 0;  // 0: min(8, number of images)
  // --images-per-run: SessionOptions::images_per_run (0: the whole batch in one run; unset: auto)
  int64_t images_per_run = winfer::SessionOptions::kImagesPerRunAuto;
  bool json = false;
  std::string preprocess, labels;  // --preprocess, --labels (classifier_flags.h); "": the model's own
};
int run_classify(const ClassifyArgs& args);

struct EvalArgs {
  std::string confine_to;  // --confine-to: LoadOptions::confine_to
  std::string model, weights;
  std::string dataset = "fashion-mnist";
  std::string split = "test";
  std::string data;   // folder of the IDX files; empty: the dataset package's
  int64_t limit = 0;  // 0: the whole split
  std::string conv;
  std::string autotune_cache;  // --autotune-cache: SessionOptions::autotune_cache (--conv auto)
  std::string device = "cpu";  // cpu, cuda, cuda:N, auto
  int threads = winfer::default_thread_count();
  int64_t batch = 0;  // 0: 100
  // --images-per-run: SessionOptions::images_per_run (0: the whole batch in one run; unset: auto)
  int64_t images_per_run = winfer::SessionOptions::kImagesPerRunAuto;
  std::string predictions;         // write each image's predicted class here (one byte per image)
  std::string preprocess, labels;  // --preprocess, --labels (classifier_flags.h); "": the model's own
};
int run_eval(const EvalArgs& args);

}  // namespace winfer::cli
