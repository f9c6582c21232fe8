// Quantized models on the INT8 kernels (engine/src/quant_model.h, layers/conv2d_int8.h): the
// lowering (u8 tensors, quantize/dequantize nodes), the real kernels against the simulated INT8
// path on whole networks (random weights, calibrated on random images), every algorithm and
// thread count giving the same bits, and the plan's u8 bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "core/test_files.h"
#include "model_test_util.h"
#include "winfer/model.h"
#include "winfer/quantize.h"
#include "winfer/session.h"

using winfer::Shape;
using winfer::Tensor;
using winfer_test::TempDir;

namespace {

// `name` from the zoo at side x side, quantized with random weights (seed 1) on random images.
std::string quantized_zoo(const TempDir& dir, const std::string& name, int64_t side) {
  const std::string path = dir.file(name + ".yaml");
  winfer_test::write_bytes(path, winfer_test::zoo_yaml_at(name, side));
  winfer::QuantizeOptions options;
  options.random_weights_seed = 1;
  options.random_images = 8;
  options.batch = 4;
  const std::string out = dir.file(name + ".int8.yaml");
  auto report = winfer::quantize_model(path, out, options);
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  return out;
}

std::shared_ptr<const winfer::Model> load(const std::string& path, bool simulate = false) {
  winfer::LoadOptions options;
  options.int8_mode = simulate ? winfer::LoadOptions::Int8Mode::kSimulated : winfer::LoadOptions::Int8Mode::kKernels;
  auto model = winfer::Model::load(path, options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

Tensor run(const std::shared_ptr<const winfer::Model>& model, const Tensor& input, const std::string& conv = "im2win",
           int threads = 1, size_t* activations = nullptr, bool poison = false) {
  winfer::SessionOptions options;
  // Every arena byte no live tensor holds is overwritten before each step: a u8 tensor read
  // outside its planned lifetime, or written over in place too early, changes the result.
  options.poison_unused_memory = poison;
  options.batch = input.shape()[0];
  options.conv_algorithm = conv;
  options.threads = threads;
  auto session = winfer::Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  if (activations != nullptr) *activations = session.value()->memory_report().activations_sum_bytes;
  auto out = session.value()->run(input);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  return out.value();
}

std::map<std::string, int> count_precisions(const winfer::Model& model) {
  std::map<std::string, int> counts;
  for (const winfer::LayerInfo& layer : model.layers()) {
    if (!layer.precision.empty()) ++counts[layer.precision];
    ++counts["type:" + layer.type];
  }
  return counts;
}

int64_t argmax_row(const Tensor& t, int64_t row) {
  const int64_t classes = t.shape()[1];
  const float* r = t.data() + row * classes;
  return std::max_element(r, r + classes) - r;
}

// MobileNetV3's, EfficientNet's and RegNetY's INT8 convolutions followed by a hardswish/SiLU/sigmoid
// (the latter in squeeze-excitation) keep the function as a float32 layer after them. ResNeXt and
// RegNet have grouped convolutions.
TEST_CASE("int8 engine: zoo networks on the INT8 kernels against the simulated path") {
  TempDir dir;
  for (const std::string name : {"resnet18", "shufflenet_v2_x1_0", "mobilenet_v3_small", "resnext50_32x4d",
                                 "regnet_y_400mf", "efficientnet_b0"}) {
    CAPTURE(name);
    const std::string path = quantized_zoo(dir, name, 64);
    const auto real = load(path);
    const auto simulated = load(path, /*simulate=*/true);
    const auto counts = count_precisions(*real);
    const int fallback = counts.count("int8 (simulated)") ? counts.at("int8 (simulated)") : 0;
    CHECK(counts.at("int8") > 10);
    CHECK(counts.at("int8") == count_precisions(*simulated).at("int8 (simulated)"));
    CHECK(fallback == 0);
    // float32 enters the INT8 layers once after the stem and leaves before the pooling (ResNet);
    // ShuffleNet's concat and channel shuffle stay float32, with conversions around each unit.
    CHECK(counts.at("type:quantize") >= 1);
    CHECK(counts.at("type:dequantize") >= 1);
    if (name == "resnet18") {
      CHECK(counts.at("type:quantize") == 1);
      CHECK(counts.at("type:dequantize") == 1);
    }

    // The real kernels against the simulated arithmetic: the same u8 grids, the accumulation exact
    // instead of rounded to float, so an intermediate value may land one u8 step away now and then.
    const Tensor input = winfer_test::random_tensor(Shape{3, 3, 64, 64}, 7);
    const Tensor a = run(real, input), b = run(simulated, input);
    float range = 0;
    for (int64_t i = 0; i < b.numel(); ++i) range = std::max(range, std::fabs(b.data()[i]));
    const float diff = winfer_test::max_abs_diff(a, b);
    MESSAGE(name << ": max |real - simulated| = " << diff << " of logits up to " << range);
    CHECK(diff <= 0.05f * range);
    // The same class, unless the simulated logits of the two classes lie within the paths'
    // difference of each other (random weights give near ties: EfficientNet-B0's logits span
    // 0.46 here, the paths differ by 0.003-0.004, and a new summation order of its global pools,
    // session 39, swapped one image's top two classes on the real path).
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t real_top = argmax_row(a, i), simulated_top = argmax_row(b, i);
      const float* row = b.data() + i * b.shape()[1];
      CAPTURE(i);
      CHECK((real_top == simulated_top || row[simulated_top] - row[real_top] <= 2 * diff));
    }

    // Integer arithmetic: the same bits whatever the algorithm and the thread count.
    const Tensor c = run(real, input, "indirect", 1), d = run(real, input, "im2win", 2);
    CHECK(winfer_test::max_abs_diff(a, c) == 0.0f);
    CHECK(winfer_test::max_abs_diff(a, d) == 0.0f);
    CHECK(winfer_test::max_abs_diff(a, run(real, input, "im2win", 1, nullptr, /*poison=*/true)) == 0.0f);
  }
}

TEST_CASE("int8 engine: the plan holds u8 tensors, a fraction of the FP32 activations") {
  TempDir dir;
  const std::string path = quantized_zoo(dir, "resnet18", 64);
  const auto int8 = load(path);
  winfer::LoadOptions fp32_options;
  fp32_options.random_weights_seed = 1;
  auto fp32 = winfer::Model::load(dir.file("resnet18.yaml"), fp32_options);
  REQUIRE(fp32.ok());
  const Tensor input = winfer_test::random_tensor(Shape{2, 3, 64, 64}, 3);
  size_t int8_sum = 0, fp32_sum = 0;
  run(int8, input, "im2win", 1, &int8_sum);
  run(fp32.value(), input, "im2win", 1, &fp32_sum);
  MESSAGE("every tensor and workspace, summed: INT8 " << int8_sum << " bytes, FP32 " << fp32_sum);
  // The stem (FP32 by rule) keeps its float32 tensors; the rest is u8. (The arena's peak is at the
  // stem: no smaller.)
  CHECK(int8_sum < fp32_sum / 2);
  // Weights: s8 plus per-channel bias and multipliers, against float32.
  CHECK(int8->weight_bytes() < fp32.value()->weight_bytes() * 2 / 5);
}

TEST_CASE("int8 engine: winfer plan --compare-fp32 shows the INT8 model against itself in FP32") {
  TempDir dir;
  const std::string path = quantized_zoo(dir, "resnet18", 64);
  auto r = winfer_test::run_cli("plan '" + path + "' --compare-fp32 --conv im2win,indirect --no-measure");
  INFO(r.stdout_text << r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(winfer_test::contains(r.stdout_text, "im2win   im2win/fp32      indirect indirect/fp32"));
  CHECK(winfer_test::contains(r.stdout_text, "im2win uses "));
  CHECK(winfer_test::contains(r.stdout_text, "less total memory than im2win/fp32"));
  // An FP32 model has nothing to compare.
  auto bad = winfer_test::run_cli("plan '" + dir.file("resnet18.yaml") + "' --compare-fp32 --no-measure");
  CHECK(bad.exit_code != 0);
  CHECK(winfer_test::contains(bad.stderr_text,
                              "--compare-fp32: " + dir.file("resnet18.yaml") + " is not a quantized model"));
}

// A depthwise convolution with a fused residual has no INT8 kernel: it runs simulated, its float32
// weights filled at load from the file's s8 ones (the loader leaves them untouched for the INT8
// kernels), next to an INT8 layer.
TEST_CASE("int8 engine: a layer without an INT8 kernel runs simulated on its s8 weights, next to INT8 ones") {
  TempDir dir;
  const std::string path = dir.file("dw_residual.yaml");
  winfer_test::write_bytes(path, winfer_test::model_header(3, 10, 10) + R"(name: dw_residual
layers:
  - {name: conv1, op: conv2d, in_channels: 3, out_channels: 8, kernel_size: 3, padding: 1}
  - {name: dw, op: conv2d, in_channels: 8, out_channels: 8, kernel_size: 3, padding: 1, groups: 8}
  - {name: add, op: add, inputs: [dw, conv1]}
  - {name: relu, op: relu}
  - {name: conv3, op: conv2d, in_channels: 8, out_channels: 8, kernel_size: 1}
  - {name: pool, op: adaptive_avgpool2d, output_size: 1}
  - {name: flatten, op: flatten}
  - {name: fc, op: linear, in_features: 8, out_features: 5}
)");
  winfer::QuantizeOptions options;
  options.random_weights_seed = 3;
  options.random_images = 4;
  const std::string out = dir.file("dw_residual.int8.yaml");
  auto report = winfer::quantize_model(path, out, options);
  REQUIRE_MESSAGE(report.ok(), report.status().message());
  const auto real = load(out), simulated = load(out, /*simulate=*/true);
  std::map<std::string, std::string> precision;
  for (const winfer::LayerInfo& layer : real->layers()) precision[layer.name] = layer.precision;
  CHECK(precision["dw"] == "int8 (simulated)");
  CHECK(precision["conv3"] == "int8");
  const Tensor input = winfer_test::random_tensor(Shape{2, 3, 10, 10}, 5);
  const Tensor a = run(real, input), b = run(simulated, input);
  float range = 0;
  for (int64_t i = 0; i < b.numel(); ++i) range = std::max(range, std::fabs(b.data()[i]));
  INFO("max |real - simulated| " << winfer_test::max_abs_diff(a, b) << " of logits up to " << range);
  CHECK(range > 0);
  CHECK(winfer_test::max_abs_diff(a, b) <= 0.05f * range);
}

}  // namespace
