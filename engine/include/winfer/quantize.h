// winfer quantize: post-training static quantization of a winfer model (docs/MODEL_FORMAT.md,
// "Quantized models"). Batch norm is folded into the convolutions; the FP32 model runs over
// calibration images and every activation tensor's range is chosen by a calibration method;
// conv2d and linear layers get s8 weights per output channel and s32 biases; the result is a
// YAML model with a `quantization:` block and a safetensors file beside it.
//
//   winfer::QuantizeOptions options;
//   options.dataset = "fashion-mnist";
//   options.images = 500;
//   auto report = winfer::quantize_model("models/fashion/fashion_vgg.yaml", "vgg.int8.yaml", options);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {

struct QuantizeOptions {
  // minmax, percentile or entropy (engine/src/quantization.h says what each does). Percentile is
  // the default: on the three Fashion-MNIST models it lost at most 0.06 points, entropy up to
  // 0.30 (docs/PERFORMANCE.md, "INT8 accuracy").
  std::string method = "percentile";
  double percentile = 99.99;  // method percentile: the share of |x| kept, in percent
  // Calibration data, one of: a folder of images (every file in it, sorted by name, decoded and
  // preprocessed as `winfer classify` does), a dataset ("fashion-mnist": its training split,
  // from dataset_dir, default the Debian package's folder), or input tensors of the model's
  // input shape (any batch), as given.
  std::string calibrate_dir;
  std::string dataset;
  std::string dataset_dir;
  std::vector<Tensor> inputs;
  // Or this many random images (uniform 8-bit pixels of the input's size, seeded by
  // random_seed, normalized by the model's mean/std without resizing): for models without data,
  // a sanity check of the arithmetic, not of accuracy.
  int64_t random_images = 0;
  uint64_t random_seed = 1;
  int64_t images = 1000;  // at most this many images of the folder or dataset (the first ones)
  // Quantize the model with seeded random weights (LoadOptions::random_weights_seed) instead of
  // its weights file; every parameter must then belong to a conv2d or linear layer or a batch
  // norm folded into one (the zoo's networks).
  std::optional<uint64_t> random_weights_seed;
  // Precision rules: conv2d and linear layers are INT8 except the first convolution and the
  // linear layers that produce a model output (the logits). keep_fp32 adds layers to the FP32
  // ones, int8 quantizes layers the rules would keep (names of conv2d/linear layers).
  std::vector<std::string> keep_fp32;
  std::vector<std::string> int8;
  std::string weights_path;  // default: the output YAML's path with .safetensors
  int64_t batch = 50;        // images per calibration run
  int threads = 1;
};

struct QuantizedLayerInfo {
  std::string name, type;
  bool int8 = false;
  std::string reason;
  std::string input, output;  // tensor names in the quantized model
};

struct QuantizedTensorInfo {
  std::string name;
  float min = 0, max = 0;  // observed over the calibration images
  float lo = 0, hi = 0;    // the range the method chose (contains 0)
  float scale = 1;
  int zero_point = 0;
};

struct QuantizeReport {
  std::string yaml_path, weights_path;
  std::string method, calibration;  // calibration: what the images were, in words
  int64_t images = 0;
  std::vector<QuantizedLayerInfo> layers;    // conv2d and linear layers, in execution order
  std::vector<QuantizedTensorInfo> tensors;  // every activation tensor of the quantized model
  std::vector<std::string> folded;           // "bn -> conv" for each batch norm folded
};

// Quantizes the YAML model `model_path` (with its weights) into `yaml_path` and its weights file.
// Errors name the model, the layer or flag, and what was expected.
Result<QuantizeReport> quantize_model(const std::string& model_path, const std::string& yaml_path,
                                      const QuantizeOptions& options);

}  // namespace winfer
