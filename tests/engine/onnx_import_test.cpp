// ONNX import (issue 22): small ONNX models built here with the generated onnx::ModelProto API
// (onnx_test_builder.h) load through Model::load and compute what a float64 reference of the
// same network computes; `winfer convert` writes a YAML + safetensors pair that runs bit for bit
// like the ONNX file with every convolution algorithm; shape subgraphs fold to winfer's own
// layers; symbolic dims run at any size; every bad file gets an error naming the file and the
// node or tensor (docs/ERRORS.md, "ONNX models").
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>

#include "engine/model_test_util.h"
#include "engine/onnx_test_builder.h"
#include "winfer/convert.h"

using namespace winfer_test;
using winfer::Shape;
using winfer::Tensor;

namespace {

// ---- a float64 reference of the ops the tests use (NCHW, row-major) ------------------------

struct Ref {
  std::vector<int64_t> d;
  std::vector<double> v;
  double& at(int64_t n, int64_t c, int64_t y, int64_t x) { return v[((n * d[1] + c) * d[2] + y) * d[3] + x]; }
  double at(int64_t n, int64_t c, int64_t y, int64_t x) const { return v[((n * d[1] + c) * d[2] + y) * d[3] + x]; }
};

Ref ref_of(const Tensor& t) {
  Ref r{t.shape().dims(), {}};
  r.v.assign(t.data(), t.data() + t.numel());
  return r;
}

Ref ref_conv(const Ref& x, const std::vector<float>& w, int64_t out_c, int64_t k, const std::vector<float>* bias,
             int64_t pad) {
  const int64_t n = x.d[0], in_c = x.d[1], h = x.d[2], wd = x.d[3];
  const int64_t oh = h + 2 * pad - k + 1, ow = wd + 2 * pad - k + 1;
  Ref out{{n, out_c, oh, ow}, std::vector<double>(size_t(n * out_c * oh * ow))};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out_c; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          double s = bias ? (*bias)[o] : 0.0;
          for (int64_t i = 0; i < in_c; ++i)
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                const int64_t iy = y + ky - pad, ix = xx + kx - pad;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                s += double(w[((o * in_c + i) * k + ky) * k + kx]) * x.at(b, i, iy, ix);
              }
          out.at(b, o, y, xx) = s;
        }
  return out;
}

Ref ref_relu(Ref x) {
  for (double& v : x.v) v = std::max(v, 0.0);
  return x;
}

Ref ref_maxpool2(const Ref& x) {
  Ref out{{x.d[0], x.d[1], x.d[2] / 2, x.d[3] / 2}, {}};
  out.v.resize(size_t(out.d[0] * out.d[1] * out.d[2] * out.d[3]));
  for (int64_t b = 0; b < out.d[0]; ++b)
    for (int64_t c = 0; c < out.d[1]; ++c)
      for (int64_t y = 0; y < out.d[2]; ++y)
        for (int64_t xx = 0; xx < out.d[3]; ++xx) {
          double m = -std::numeric_limits<double>::infinity();
          for (int64_t dy = 0; dy < 2; ++dy)
            for (int64_t dx = 0; dx < 2; ++dx) m = std::max(m, x.at(b, c, 2 * y + dy, 2 * xx + dx));
          out.at(b, c, y, xx) = m;
        }
  return out;
}

Ref ref_bn(Ref x, const std::vector<float>& scale, const std::vector<float>& shift, const std::vector<float>& mean,
           const std::vector<float>& var, double eps) {
  for (int64_t b = 0; b < x.d[0]; ++b)
    for (int64_t c = 0; c < x.d[1]; ++c)
      for (int64_t y = 0; y < x.d[2]; ++y)
        for (int64_t xx = 0; xx < x.d[3]; ++xx) {
          double& v = x.at(b, c, y, xx);
          v = (v - mean[c]) / std::sqrt(double(var[c]) + eps) * scale[c] + shift[c];
        }
  return x;
}

Ref ref_add(Ref a, const Ref& b) {
  for (size_t i = 0; i < a.v.size(); ++i) a.v[i] += b.v[i];
  return a;
}

Ref ref_global_average(const Ref& x) {  // -> [N, C]
  Ref out{{x.d[0], x.d[1]}, std::vector<double>(size_t(x.d[0] * x.d[1]))};
  for (int64_t b = 0; b < x.d[0]; ++b)
    for (int64_t c = 0; c < x.d[1]; ++c) {
      double s = 0;
      for (int64_t y = 0; y < x.d[2]; ++y)
        for (int64_t xx = 0; xx < x.d[3]; ++xx) s += x.at(b, c, y, xx);
      out.v[size_t(b * x.d[1] + c)] = s / double(x.d[2] * x.d[3]);
    }
  return out;
}

// y = alpha * x @ W' + beta * c, W' = W^T when W is [out, in] (trans_b), else W [in, out].
Ref ref_gemm(const Ref& x, const std::vector<float>& w, int64_t out_f, bool trans_b, double alpha,
             const std::vector<float>& c, double beta) {
  const int64_t n = x.d[0], in_f = x.d[1];
  Ref out{{n, out_f}, std::vector<double>(size_t(n * out_f))};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out_f; ++o) {
      double s = 0;
      for (int64_t i = 0; i < in_f; ++i)
        s += x.v[size_t(b * in_f + i)] * double(trans_b ? w[o * in_f + i] : w[i * out_f + o]);
      out.v[size_t(b * out_f + o)] = alpha * s + (c.empty() ? 0.0 : beta * c[o]);
    }
  return out;
}

Ref ref_softmax(Ref x) {
  const int64_t n = x.d[0], k = x.d[1];
  for (int64_t b = 0; b < n; ++b) {
    double m = -std::numeric_limits<double>::infinity(), s = 0;
    for (int64_t i = 0; i < k; ++i) m = std::max(m, x.v[size_t(b * k + i)]);
    for (int64_t i = 0; i < k; ++i) s += std::exp(x.v[size_t(b * k + i)] - m);
    for (int64_t i = 0; i < k; ++i) x.v[size_t(b * k + i)] = std::exp(x.v[size_t(b * k + i)] - m) / s;
  }
  return x;
}

// Worst |a - b| over max(1, max |b|): float32 against the float64 reference.
double relative_error(const Tensor& got, const Ref& want) {
  REQUIRE(got.shape().dims() == want.d);
  double worst = 0, scale = 1;
  for (double v : want.v) scale = std::max(scale, std::fabs(v));
  for (int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::fabs(double(got.data()[i]) - want.v[size_t(i)]));
  return worst / scale;
}

// ---- the tiny network ----------------------------------------------------------------------

// Conv(+bias) -> Relu -> MaxPool -> Conv -> BatchNormalization -> Add (residual) -> Relu ->
// GlobalAveragePool -> Flatten -> Gemm(transB=1) -> Gemm(transB=0, alpha 0.5, beta 2) ->
// MatMul + Add -> Softmax, on [N, 3, 8, 8].
struct TinyNet {
  std::vector<float> w1 = onnx_random_values(4 * 3 * 3 * 3, 1), b1 = onnx_random_values(4, 2);
  std::vector<float> w2 = onnx_random_values(4 * 4 * 3 * 3, 3);
  std::vector<float> scale = onnx_random_values(4, 4), shift = onnx_random_values(4, 5);
  std::vector<float> mean = onnx_random_values(4, 6), var = onnx_random_values(4, 7, 0.5f, 1.5f);
  std::vector<float> g1 = onnx_random_values(6 * 4, 8), c1 = onnx_random_values(6, 9);
  std::vector<float> g2 = onnx_random_values(6 * 5, 10), c2 = onnx_random_values(5, 11);
  std::vector<float> m = onnx_random_values(5 * 3, 12), m_bias = onnx_random_values(3, 13);
  static constexpr float kEps = 1e-5f;

  // Adds the network to `b` (input "x" of `dims`, output "prob"). `conv1_weight` false leaves
  // out the initializer "conv1.weight" (a test adds its own form of it).
  void build(OnnxBuilder& b, const std::vector<OnnxDim>& dims, bool conv1_weight = true) const {
    b.input("x", dims);
    if (conv1_weight) b.initializer("conv1.weight", {4, 3, 3, 3}, w1);
    b.initializer("conv1.bias", {4}, b1);
    b.initializer("conv2.weight", {4, 4, 3, 3}, w2);
    b.initializer("bn.weight", {4}, scale);
    b.initializer("bn.bias", {4}, shift);
    b.initializer("bn.running_mean", {4}, mean);
    b.initializer("bn.running_var", {4}, var);
    b.initializer("fc1.weight", {6, 4}, g1);
    b.initializer("fc1.bias", {6}, c1);
    b.initializer("fc2.weight", {6, 5}, g2);
    b.initializer("fc2.bias", {1, 5}, c2);
    b.initializer("fc3.weight", {5, 3}, m);
    b.initializer("fc3.bias", {3}, m_bias);
    auto& conv1 = b.node("Conv", {"x", "conv1.weight", "conv1.bias"}, {"c1"}, "/conv1/Conv");
    set_ints(conv1, "kernel_shape", {3, 3});
    set_ints(conv1, "pads", {1, 1, 1, 1});
    b.node("Relu", {"c1"}, {"r1"}, "/relu1/Relu");
    auto& pool = b.node("MaxPool", {"r1"}, {"p"}, "/pool/MaxPool");
    set_ints(pool, "kernel_shape", {2, 2});
    set_ints(pool, "strides", {2, 2});
    auto& conv2 = b.node("Conv", {"p", "conv2.weight"}, {"c2"}, "/conv2/Conv");
    set_ints(conv2, "pads", {1, 1, 1, 1});
    auto& bn = b.node("BatchNormalization", {"c2", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"}, {"bn"},
                      "/bn/BatchNormalization");
    set_float(bn, "epsilon", kEps);
    b.node("Add", {"bn", "p"}, {"sum"}, "/Add");
    b.node("Relu", {"sum"}, {"r2"}, "/relu2/Relu");
    b.node("GlobalAveragePool", {"r2"}, {"gap"}, "/gap/GlobalAveragePool");
    b.node("Flatten", {"gap"}, {"flat"}, "/Flatten");
    auto& gemm1 = b.node("Gemm", {"flat", "fc1.weight", "fc1.bias"}, {"f1"}, "/fc1/Gemm");
    set_int(gemm1, "transB", 1);
    auto& gemm2 = b.node("Gemm", {"f1", "fc2.weight", "fc2.bias"}, {"f2"}, "/fc2/Gemm");
    set_float(gemm2, "alpha", 0.5f);
    set_float(gemm2, "beta", 2.0f);
    b.node("MatMul", {"f2", "fc3.weight"}, {"mm"}, "/fc3/MatMul");
    b.node("Add", {"mm", "fc3.bias"}, {"logits"}, "/fc3/Add");
    auto& softmax = b.node("Softmax", {"logits"}, {"prob"}, "/Softmax");
    set_int(softmax, "axis", 1);
    b.output("prob");
  }

  std::string write(const std::string& path, const std::vector<OnnxDim>& dims = {2, 3, 8, 8}) const {
    OnnxBuilder b;
    build(b, dims);
    return b.write(path);
  }

  Ref reference(const Tensor& input) const {
    const Ref x = ref_of(input);
    const Ref p = ref_maxpool2(ref_relu(ref_conv(x, w1, 4, 3, &b1, 1)));
    const Ref d = ref_bn(ref_conv(p, w2, 4, 3, nullptr, 1), scale, shift, mean, var, kEps);
    const Ref g = ref_global_average(ref_relu(ref_add(d, p)));
    const Ref f1 = ref_gemm(g, g1, 6, true, 1.0, c1, 1.0);
    const Ref f2 = ref_gemm(f1, g2, 5, false, 0.5, c2, 2.0);
    return ref_softmax(ref_gemm(f2, m, 3, false, 1.0, m_bias, 1.0));
  }
};

std::shared_ptr<const winfer::Model> load_ok(const std::string& path, const winfer::LoadOptions& options = {}) {
  auto model = winfer::Model::load(path, options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

Tensor run_at(const std::shared_ptr<const winfer::Model>& model, const Tensor& input,
              const std::string& algorithm = "im2win") {
  winfer::SessionOptions options;
  options.conv_algorithm = algorithm;
  options.input_shape = input.shape().dims();
  auto session = winfer::Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  auto output = session.value()->run(input);
  REQUIRE_MESSAGE(output.ok(), output.status().message());
  return std::move(output).value();
}

std::vector<std::string> layer_types(const std::shared_ptr<const winfer::Model>& model) {
  std::vector<std::string> types;
  for (const winfer::LayerInfo& info : model->layers()) types.push_back(info.type);
  return types;
}

int64_t count_of(const std::vector<std::string>& items, const std::string& item) {
  return std::count(items.begin(), items.end(), item);
}

// Loading `path` fails and the message holds every fragment.
void expect_onnx_error(const std::string& path, const std::vector<std::string>& fragments) {
  auto model = winfer::Model::load(path);
  REQUIRE_FALSE(model.ok());
  const std::string& message = model.status().message();
  INFO("message: " << message);
  for (const std::string& f : fragments) CHECK(contains(message, f));
}

// One Conv 3 -> 4 (3x3, pad 1, with bias) and a Relu on a fixed [1, 3, 6, 6] input; the weight is
// whatever the test adds as "w".
OnnxBuilder conv_model_without_weight(int64_t opset = 13) {
  OnnxBuilder b(opset);
  b.input("x", {1, 3, 6, 6});
  b.initializer("b", {4}, onnx_random_values(4, 21));
  auto& conv = b.node("Conv", {"x", "w", "b"}, {"y"}, "/conv/Conv");
  set_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"y"}, {"out"}, "/relu/Relu");
  b.output("out");
  return b;
}

const std::vector<float> kConvWeight = onnx_random_values(4 * 3 * 3 * 3, 22);

OnnxBuilder conv_model(int64_t opset = 13) {
  OnnxBuilder b = conv_model_without_weight(opset);
  b.initializer("w", {4, 3, 3, 3}, kConvWeight);
  return b;
}

}  // namespace

// ---- networks that load and compute ----------------------------------------------------------

TEST_CASE("onnx import: a tiny conv net (conv, pool, batch norm, residual, gemm, matmul, softmax) equals float64") {
  TempDir dir;
  const TinyNet net;
  const std::string path = net.write(dir.file("tiny.onnx"));
  auto model = load_ok(path);
  CHECK(model->input_shape() == Shape{2, 3, 8, 8});
  const Tensor input = random_tensor(Shape{2, 3, 8, 8}, 31);
  const Ref want = net.reference(input);
  for (const std::string& algorithm : winfer::conv_algorithm_names()) {
    CAPTURE(algorithm);
    const Tensor got = run_at(model, input, algorithm);
    CHECK(relative_error(got, want) < 1e-5);
  }
  // The Gemms and the MatMul + Add became linear layers (the Add the MatMul's bias), the batch
  // norm folded into conv2, the Flatten one layer: nothing of the ONNX spelling is left.
  winfer::LoadOptions unfused;
  unfused.fuse = false;
  const std::vector<std::string> types = layer_types(load_ok(path, unfused));
  CHECK(count_of(types, "linear") == 3);
  CHECK(count_of(types, "add") == 1);
  CHECK(count_of(types, "batchnorm2d") == 1);
  CHECK(count_of(types, "flatten") == 1);
  CHECK(count_of(layer_types(model), "batchnorm2d") == 0);
}

TEST_CASE("onnx import: winfer convert writes YAML + safetensors that run bit for bit like the ONNX file") {
  TempDir dir;
  const TinyNet net;
  const std::string onnx_path = net.write(dir.file("tiny.onnx"));
  const std::string yaml_path = dir.file("out/tiny.yaml");
  std::filesystem::create_directories(dir.file("out"));
  const winfer::Status converted = winfer::convert_onnx_model(onnx_path, yaml_path);
  REQUIRE_MESSAGE(converted.ok(), converted.message());
  CHECK(std::filesystem::exists(dir.file("out/tiny.safetensors")));
  const std::string yaml = read_bytes(yaml_path);
  CHECK(contains(yaml, "format: winfer/1"));
  CHECK(contains(yaml, "weights: 'tiny.safetensors'"));
  // torchvision-style parameter names from the initializers.
  auto weights = winfer::SafeTensorsFile::open(dir.file("out/tiny.safetensors"));
  REQUIRE_MESSAGE(weights.ok(), weights.status().message());
  CHECK(weights.value()->find("conv1.weight") != nullptr);
  CHECK(weights.value()->find("conv2.weight") != nullptr);
  CHECK(weights.value()->find("fc1.weight") != nullptr);

  auto from_onnx = load_ok(onnx_path);
  auto from_yaml = load_ok(yaml_path);
  const Tensor input = random_tensor(Shape{2, 3, 8, 8}, 32);
  for (const std::string& algorithm : winfer::conv_algorithm_names()) {
    CAPTURE(algorithm);
    CHECK(same_bits(run_at(from_onnx, input, algorithm), run_at(from_yaml, input, algorithm)));
  }
  // Converting again replaces the pair; a file of another kind is never overwritten.
  CHECK(winfer::convert_onnx_model(onnx_path, yaml_path).ok());
  write_bytes(dir.file("precious.txt"), "not a model\n");
  const winfer::Status refused = winfer::convert_onnx_model(onnx_path, dir.file("precious.txt"));
  CHECK_FALSE(refused.ok());
  CHECK(read_bytes(dir.file("precious.txt")) == "not a model\n");
  // Only .onnx files are converted.
  const winfer::Status not_onnx = winfer::convert_onnx_model(yaml_path, dir.file("x.yaml"));
  REQUIRE_FALSE(not_onnx.ok());
  CHECK(contains(not_onnx.message(), "is not an .onnx file"));
}

TEST_CASE("onnx import: weights from float_data and from an external file equal raw_data's") {
  TempDir dir;
  const TinyNet net;
  const std::string inline_path = net.write(dir.file("inline.onnx"));
  const std::vector<float>& w = net.w1;
  const std::string bytes(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  // External: 16 bytes of something else first, then the weight, then more.
  write_bytes(dir.file("weights.bin"), std::string(16, '\x7f') + bytes + std::string(8, '\x01'));
  OnnxBuilder external;
  net.build(external, {2, 3, 8, 8}, false);
  external.external_initializer("conv1.weight", {4, 3, 3, 3}, "weights.bin", 16, int64_t(bytes.size()));
  const std::string external_path = external.write(dir.file("external.onnx"));
  // Without offset/length: the whole file.
  write_bytes(dir.file("whole.bin"), bytes);
  OnnxBuilder whole;
  net.build(whole, {2, 3, 8, 8}, false);
  whole.external_initializer("conv1.weight", {4, 3, 3, 3}, "whole.bin");
  const std::string whole_path = whole.write(dir.file("whole.onnx"));
  OnnxBuilder typed;
  net.build(typed, {2, 3, 8, 8}, false);
  typed.float_data_initializer("conv1.weight", {4, 3, 3, 3}, w);
  const std::string typed_path = typed.write(dir.file("typed.onnx"));

  const Tensor input = random_tensor(Shape{2, 3, 8, 8}, 33);
  const Tensor want = run_at(load_ok(inline_path), input);
  CHECK(same_bits(run_at(load_ok(external_path), input), want));
  CHECK(same_bits(run_at(load_ok(whole_path), input), want));
  CHECK(same_bits(run_at(load_ok(typed_path), input), want));
}

// ---- folding of shape subgraphs and export patterns ------------------------------------------

TEST_CASE("onnx import: a Reshape to Shape -> Gather -> Unsqueeze -> Concat becomes flatten") {
  TempDir dir;
  const std::vector<float> w = onnx_random_values(4 * 3 * 3 * 3, 41), fc = onnx_random_values(5 * 64, 42);
  const std::vector<float> fc_bias = onnx_random_values(5, 43);
  auto build = [&](bool as_shape_subgraph) {
    OnnxBuilder b;
    b.input("x", {"batch", 3, 4, 4});
    b.initializer("conv.weight", {4, 3, 3, 3}, w);
    b.initializer("fc.weight", {5, 64}, fc);
    b.initializer("fc.bias", {5}, fc_bias);
    auto& conv = b.node("Conv", {"x", "conv.weight"}, {"c"}, "/conv/Conv");
    set_ints(conv, "pads", {1, 1, 1, 1});
    if (as_shape_subgraph) {
      // torch's x.view(x.size(0), -1)
      b.int_initializer("zero", {}, {0});
      b.int_initializer("axes", {1}, {0});
      b.int_initializer("minus_one", {1}, {-1});
      b.node("Shape", {"c"}, {"shape"}, "/Shape");
      b.node("Gather", {"shape", "zero"}, {"n"}, "/Gather");
      b.node("Unsqueeze", {"n", "axes"}, {"n1"}, "/Unsqueeze");
      auto& concat = b.node("Concat", {"n1", "minus_one"}, {"target"}, "/Concat");
      set_int(concat, "axis", 0);
      b.node("Reshape", {"c", "target"}, {"flat"}, "/Reshape");
    } else {
      b.node("Flatten", {"c"}, {"flat"}, "/Flatten");
    }
    auto& gemm = b.node("Gemm", {"flat", "fc.weight", "fc.bias"}, {"y"}, "/fc/Gemm");
    set_int(gemm, "transB", 1);
    b.output("y");
    return b;
  };
  auto folded = load_ok(build(true).write(dir.file("view.onnx")));
  auto flatten = load_ok(build(false).write(dir.file("flatten.onnx")));
  const std::vector<std::string> types = layer_types(folded);
  CHECK(count_of(types, "flatten") == 1);
  CHECK(types == layer_types(flatten));
  // Folded for the import shape (batch 1), it holds at any batch.
  for (int64_t batch : {1, 3}) {
    const Tensor input = random_tensor(Shape{batch, 3, 4, 4}, 44);
    CHECK(same_bits(run_at(folded, input), run_at(flatten, input)));
  }
}

TEST_CASE("onnx import: Reshape -> Transpose(0,2,1,3,4) -> Reshape becomes channel_shuffle") {
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {2, 6, 3, 3});
  b.int_initializer("to5", {5}, {2, 2, 3, 3, 3});
  b.int_initializer("to4", {4}, {2, -1, 3, 3});
  b.node("Relu", {"x"}, {"r"}, "/relu/Relu");
  b.node("Reshape", {"r", "to5"}, {"g"}, "/Reshape");
  auto& transpose = b.node("Transpose", {"g"}, {"t"}, "/Transpose");
  set_ints(transpose, "perm", {0, 2, 1, 3, 4});
  b.node("Reshape", {"t", "to4"}, {"y"}, "/Reshape_1");
  b.output("y");
  auto model = load_ok(b.write(dir.file("shuffle.onnx")));
  const std::vector<std::string> types = layer_types(model);
  CHECK(count_of(types, "channel_shuffle") == 1);
  const Tensor input = random_tensor(Shape{2, 6, 3, 3}, 51);
  const Tensor got = run_at(model, input);
  // groups 2 of 3 channels: output channel j*2 + i is input channel i*3 + j, after the ReLU.
  bool all_equal = true;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        for (int64_t p = 0; p < 9; ++p) {
          const float in = input.data()[(n * 6 + i * 3 + j) * 9 + p];
          all_equal &= got.data()[(n * 6 + j * 2 + i) * 9 + p] == std::max(in, 0.0f);
        }
  CHECK(all_equal);
}

TEST_CASE("onnx import: two Slices of a tensor's channels become one split") {
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {"N", 4, 3, 3});
  b.int_initializer("zero", {1}, {0});
  b.int_initializer("two", {1}, {2});
  b.int_initializer("end", {1}, {std::numeric_limits<int64_t>::max()});
  b.int_initializer("axis", {1}, {1});
  b.node("Relu", {"x"}, {"r"}, "/relu/Relu");
  b.node("Slice", {"r", "zero", "two", "axis"}, {"low"}, "/Slice");
  b.node("Slice", {"r", "two", "end", "axis"}, {"high"}, "/Slice_1");
  auto& concat = b.node("Concat", {"high", "low"}, {"y"}, "/Concat");
  set_int(concat, "axis", 1);
  b.output("y");
  auto model = load_ok(b.write(dir.file("slices.onnx")));
  const std::vector<std::string> types = layer_types(model);
  CHECK(count_of(types, "split") == 1);
  CHECK(count_of(types, "concat") == 1);
  const Tensor input = random_tensor(Shape{2, 4, 3, 3}, 61);
  const Tensor got = run_at(model, input);
  bool all_equal = true;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 4; ++c)
      for (int64_t p = 0; p < 9; ++p) {
        const float in = input.data()[(n * 4 + (c + 2) % 4) * 9 + p];
        all_equal &= got.data()[(n * 4 + c) * 9 + p] == std::max(in, 0.0f);
      }
  CHECK(all_equal);
}

// Squeeze-and-excitation as torchvision exports it (MobileNetV3, EfficientNet): x * Sigmoid(x)
// (SiLU), GlobalAveragePool -> 1x1 Conv -> Relu -> 1x1 Conv -> HardSigmoid -> Mul(scale, x),
// x * HardSigmoid(x) (Hardswish before opset 14), then Sigmoid (opset 13) or HardSwish (17).
struct SqueezeExciteNet {
  static constexpr int64_t kIn = 4, kC = 6, kSqueeze = 3;
  std::vector<float> w = onnx_random_values(kC * kIn * 9, 61), b = onnx_random_values(kC, 62);
  std::vector<float> w1 = onnx_random_values(kSqueeze * kC, 63), b1 = onnx_random_values(kSqueeze, 64);
  std::vector<float> w2 = onnx_random_values(kC * kSqueeze, 65), b2 = onnx_random_values(kC, 66);

  std::string write(const std::string& path, int64_t opset) const {
    OnnxBuilder o(opset);
    o.input("x", {2, kIn, 5, 7});
    o.initializer("conv.weight", {kC, kIn, 3, 3}, w);
    o.initializer("conv.bias", {kC}, b);
    o.initializer("se.fc1.weight", {kSqueeze, kC, 1, 1}, w1);
    o.initializer("se.fc1.bias", {kSqueeze}, b1);
    o.initializer("se.fc2.weight", {kC, kSqueeze, 1, 1}, w2);
    o.initializer("se.fc2.bias", {kC}, b2);
    set_ints(o.node("Conv", {"x", "conv.weight", "conv.bias"}, {"c"}, "/conv/Conv"), "pads", {1, 1, 1, 1});
    o.node("Sigmoid", {"c"}, {"s"}, "/act/Sigmoid");
    o.node("Mul", {"c", "s"}, {"a"}, "/act/Mul");
    o.node("GlobalAveragePool", {"a"}, {"g"}, "/se/avgpool/GlobalAveragePool");
    o.node("Conv", {"g", "se.fc1.weight", "se.fc1.bias"}, {"f1"}, "/se/fc1/Conv");
    o.node("Relu", {"f1"}, {"r"}, "/se/activation/Relu");
    o.node("Conv", {"r", "se.fc2.weight", "se.fc2.bias"}, {"f2"}, "/se/fc2/Conv");
    auto& gate = o.node("HardSigmoid", {"f2"}, {"h"}, "/se/scale_activation/HardSigmoid");
    set_float(gate, "alpha", 1.f / 6.f);
    o.node("Mul", {"h", "a"}, {"se"}, "/se/Mul");  // torchvision: scale * input
    set_float(o.node("HardSigmoid", {"se"}, {"hs"}, "/hs/HardSigmoid"), "alpha", 1.f / 6.f);
    o.node("Mul", {"se", "hs"}, {"y1"}, "/hs/Mul");
    o.node(opset >= 14 ? "HardSwish" : "Sigmoid", {"y1"}, {"out"}, "/last");
    o.output("out");
    return o.write(path);
  }

  static double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
  static double hardsigmoid(double x) { return std::min(std::max(x + 3, 0.0), 6.0) / 6; }

  Ref reference(const Tensor& input, int64_t opset) const {
    Ref a = ref_conv(ref_of(input), w, kC, 3, &b, 1);
    for (double& v : a.v) v *= sigmoid(v);
    const Ref g = ref_global_average(a);  // [N, C]
    for (int64_t n = 0; n < 2; ++n) {
      std::vector<double> squeezed(kSqueeze);
      for (int64_t j = 0; j < kSqueeze; ++j) {
        double t = b1[size_t(j)];
        for (int64_t c = 0; c < kC; ++c) t += double(w1[size_t(j * kC + c)]) * g.v[size_t(n * kC + c)];
        squeezed[size_t(j)] = std::max(t, 0.0);
      }
      for (int64_t c = 0; c < kC; ++c) {
        double t = b2[size_t(c)];
        for (int64_t j = 0; j < kSqueeze; ++j) t += double(w2[size_t(c * kSqueeze + j)]) * squeezed[size_t(j)];
        for (int64_t y = 0; y < 5; ++y)
          for (int64_t x = 0; x < 7; ++x) a.at(n, c, y, x) *= hardsigmoid(t);
      }
    }
    for (double& v : a.v) {
      v *= hardsigmoid(v);
      v = opset >= 14 ? v * hardsigmoid(v) : sigmoid(v);
    }
    return a;
  }
};

TEST_CASE("onnx import: squeeze-and-excitation, SiLU and Hardswish (opsets 13 and 17) equal float64") {
  TempDir dir;
  const SqueezeExciteNet net;
  const Tensor input = random_tensor(Shape{2, 4, 5, 7}, 67);
  for (int64_t opset : {13, 17}) {
    CAPTURE(opset);
    const std::string path = net.write(dir.file("se" + std::to_string(opset) + ".onnx"), opset);
    auto model = load_ok(path);
    // x * Sigmoid(x) became silu and x * HardSigmoid(x) hardswish; the scale is mul's second input.
    // Counted unfused: loading fuses a pointwise activation into the conv before it (conv_pointwise).
    winfer::LoadOptions unfused;
    unfused.fuse = false;
    const std::vector<std::string> types = layer_types(load_ok(path, unfused));
    CHECK(count_of(types, "silu") == 1);
    CHECK(count_of(types, "hardsigmoid") == 1);
    CHECK(count_of(types, "hardswish") == (opset >= 14 ? 2 : 1));
    CHECK(count_of(types, "sigmoid") == (opset >= 14 ? 0 : 1));
    CHECK(count_of(types, "mul") == 1);
    const Ref want = net.reference(input, opset);
    for (const std::string& algorithm : winfer::conv_algorithm_names()) {
      CAPTURE(algorithm);
      CHECK(relative_error(run_at(model, input, algorithm), want) < 1e-5);
    }
  }
  // Mul with the scale second and Mul of two tensors of one shape: mul as written.
  {
    OnnxBuilder o;
    o.input("x", {2, 3, 4, 5});
    o.node("Relu", {"x"}, {"r"}, "/relu");
    o.node("GlobalAveragePool", {"r"}, {"g"}, "/pool");
    o.node("Mul", {"r", "g"}, {"y"}, "/scale");
    o.node("Mul", {"y", "r"}, {"z"}, "/square");
    o.output("z");
    auto model = load_ok(o.write(dir.file("muls.onnx")));
    CHECK(count_of(layer_types(model), "mul") == 2);
    const Tensor x = random_tensor(Shape{2, 3, 4, 5}, 68);
    Ref want = ref_of(x);
    for (double& v : want.v) v = std::max(v, 0.0);
    const Ref mean = ref_global_average(want);
    for (size_t i = 0; i < want.v.size(); ++i) want.v[i] *= want.v[i] * mean.v[i / 20];
    CHECK(relative_error(run_at(model, x), want) < 1e-6);
  }
  // HardSigmoid other than torch's (ONNX's default alpha 0.2) and Mul by a constant are refused.
  OnnxBuilder o;
  o.input("x", {1, 2, 3, 3});
  o.node("HardSigmoid", {"x"}, {"y"}, "/hs");
  o.output("y");
  expect_onnx_error(o.write(dir.file("alpha.onnx")), {"/hs", "HardSigmoid with alpha 0.2", "alpha 1/6, beta 0.5"});
  OnnxBuilder m;
  m.input("x", {1, 2, 3, 3});
  m.initializer("k", {1}, {2.f});
  m.node("Mul", {"x", "k"}, {"y"}, "/mul");
  m.output("y");
  expect_onnx_error(m.write(dir.file("constant.onnx")), {"/mul", "Mul of an activation and a constant"});
  OnnxBuilder w;
  w.input("x", {1, 2, 3, 3});
  w.node("GlobalAveragePool", {"x"}, {"g"}, "/pool");
  w.node("Flatten", {"g"}, {"f"}, "/flatten");
  w.node("Mul", {"x", "f"}, {"y"}, "/mul");
  w.output("y");
  expect_onnx_error(w.write(dir.file("shapes.onnx")), {"/mul", "Mul of [1,2,3,3] and [1,2]"});
}

TEST_CASE("onnx import: symbolic batch, height and width run at any shape, a fixed dim that disagrees is refused") {
  TempDir dir;
  const TinyNet net;
  auto model = load_ok(net.write(dir.file("dynamic.onnx"), {"N", 3, "H", "W"}));
  CHECK(model->input_dim_fixed() == std::vector<bool>{false, true, false, false});
  for (const Shape& shape : {Shape{2, 3, 8, 8}, Shape{1, 3, 12, 10}}) {
    CAPTURE(shape.to_string());
    const Tensor input = random_tensor(shape, 71);
    CHECK(relative_error(run_at(model, input), net.reference(input)) < 1e-5);
  }
  // The static export fixes every dim: another height is refused, naming the dim.
  auto fixed = load_ok(net.write(dir.file("static.onnx")));
  CHECK(fixed->input_dim_fixed() == std::vector<bool>{true, true, true, true});
  winfer::SessionOptions options;
  options.input_shape = {2, 3, 10, 8};
  auto session = winfer::Session::create(fixed, options);
  REQUIRE_FALSE(session.ok());
  INFO("message: " << session.status().message());
  CHECK(contains(session.status().message(), "static.onnx"));
  CHECK(contains(session.status().message(), "dim 2"));
  CHECK(contains(session.status().message(), "fixed"));
}

// ---- bad files -------------------------------------------------------------------------------

TEST_CASE("onnx error: empty, truncated and non-protobuf files name the file") {
  TempDir dir;
  write_bytes(dir.file("empty.onnx"), "");
  expect_onnx_error(dir.file("empty.onnx"), {dir.file("empty.onnx"), "the file is empty"});

  const std::string valid = read_bytes(TinyNet().write(dir.file("tiny.onnx")));
  write_bytes(dir.file("half.onnx"), valid.substr(0, valid.size() / 2));
  expect_onnx_error(dir.file("half.onnx"), {dir.file("half.onnx"), "not an ONNX model", "protobuf cannot parse"});

  write_bytes(dir.file("yaml.onnx"), read_bytes(repo_path("models/examples/tiny_net.yaml")));
  expect_onnx_error(dir.file("yaml.onnx"), {dir.file("yaml.onnx"), "not an ONNX model"});

  std::string noise;
  std::mt19937 gen(5);
  for (int i = 0; i < 4096; ++i) noise.push_back(static_cast<char>(gen() & 0xff));
  write_bytes(dir.file("noise.onnx"), noise);
  expect_onnx_error(dir.file("noise.onnx"), {dir.file("noise.onnx"), "not an ONNX model"});

  // Protobuf that is not a model: an empty message (only unknown fields) has no graph.
  write_bytes(dir.file("nograph.onnx"), std::string("\xf8\x07\x01", 3));  // field 127, varint 1
  expect_onnx_error(dir.file("nograph.onnx"), {dir.file("nograph.onnx"), "not an ONNX model", "no graph"});
}

TEST_CASE("onnx error: a cycle and an input nothing produces name the nodes") {
  TempDir dir;
  OnnxBuilder cycle;
  cycle.input("x", {1, 3, 4, 4});
  cycle.node("Add", {"x", "b"}, {"a"}, "node_a");
  cycle.node("Relu", {"a"}, {"b"}, "node_b");
  cycle.output("b");
  expect_onnx_error(cycle.write(dir.file("cycle.onnx")),
                    {dir.file("cycle.onnx"), "cycle", "'node_a' (Add)", "'node_b' (Relu)"});

  OnnxBuilder ghost;
  ghost.input("x", {1, 3, 4, 4});
  ghost.node("Add", {"x", "ghost"}, {"y"}, "/add/Add");
  ghost.output("y");
  expect_onnx_error(ghost.write(dir.file("ghost.onnx")),
                    {dir.file("ghost.onnx"), "node '/add/Add' (Add)", "'ghost'", "no node produces"});
}

TEST_CASE("onnx error: an initializer whose data disagrees with its dims names the tensor") {
  TempDir dir;
  OnnxBuilder raw = conv_model_without_weight();
  raw.initializer("w", {4, 3, 3, 3}, onnx_random_values(4 * 3 * 3 * 3 - 1, 23));
  expect_onnx_error(raw.write(dir.file("raw.onnx")),
                    {dir.file("raw.onnx"), "initializer 'w'", "428 bytes of raw_data", "need 432"});

  OnnxBuilder typed = conv_model_without_weight();
  typed.float_data_initializer("w", {4, 3, 3, 3}, onnx_random_values(4 * 3 * 3 * 3 + 2, 24));
  expect_onnx_error(typed.write(dir.file("typed.onnx")),
                    {dir.file("typed.onnx"), "initializer 'w'", "110 values in float_data", "need 108"});

  OnnxBuilder negative = conv_model_without_weight();
  negative.initializer("w", {4, -3, 3, 3}, kConvWeight);
  expect_onnx_error(negative.write(dir.file("negative.onnx")), {dir.file("negative.onnx"), "'w'", "negative"});
}

TEST_CASE("onnx error: external data missing, too short, or outside the model's folder") {
  TempDir dir;
  const std::string bytes(reinterpret_cast<const char*>(kConvWeight.data()), kConvWeight.size() * sizeof(float));

  OnnxBuilder missing = conv_model_without_weight();
  missing.external_initializer("w", {4, 3, 3, 3}, "nowhere.bin");
  expect_onnx_error(missing.write(dir.file("missing.onnx")), {dir.file("missing.onnx"), "'w'", "nowhere.bin"});

  write_bytes(dir.file("short.bin"), bytes.substr(0, 100));
  OnnxBuilder short_length = conv_model_without_weight();
  short_length.external_initializer("w", {4, 3, 3, 3}, "short.bin", 0, 432);
  expect_onnx_error(short_length.write(dir.file("short.onnx")),
                    {dir.file("short.onnx"), "'w'", "short.bin", "100 bytes, too short for 432 bytes at offset 0"});
  OnnxBuilder short_whole = conv_model_without_weight();
  short_whole.external_initializer("w", {4, 3, 3, 3}, "short.bin");
  expect_onnx_error(short_whole.write(dir.file("short_whole.onnx")),
                    {dir.file("short_whole.onnx"), "'w'", "external data holds 100 bytes", "need 432"});
  write_bytes(dir.file("w.bin"), bytes);
  OnnxBuilder past_end = conv_model_without_weight();
  past_end.external_initializer("w", {4, 3, 3, 3}, "w.bin", 8, 432);
  expect_onnx_error(past_end.write(dir.file("past_end.onnx")), {dir.file("past_end.onnx"), "'w'", "too short"});

  for (const std::string& location :
       {std::string("../w.bin"), std::string("sub/../../w.bin"), std::string("/etc/passwd")}) {
    CAPTURE(location);
    OnnxBuilder escape = conv_model_without_weight();
    escape.external_initializer("w", {4, 3, 3, 3}, location);
    expect_onnx_error(escape.write(dir.file("escape.onnx")),
                      {dir.file("escape.onnx"), "'w'", "'" + location + "'", "inside the model's folder"});
  }
  OnnxBuilder bad_offset = conv_model_without_weight();
  bad_offset.external_initializer("w", {4, 3, 3, 3}, "w.bin");
  auto* entry = bad_offset.graph().mutable_initializer(bad_offset.graph().initializer_size() - 1)->add_external_data();
  entry->set_key("offset");
  entry->set_value("-4");
  expect_onnx_error(bad_offset.write(dir.file("bad_offset.onnx")), {"'w'", "offset '-4' is not a byte count"});
}

TEST_CASE("onnx error: a weight that is not float32 is refused naming it and its type") {
  TempDir dir;
  for (int32_t type : {int32_t(onnx::TensorProto::DOUBLE), int32_t(onnx::TensorProto::FLOAT16)}) {
    OnnxBuilder b = conv_model_without_weight();
    onnx::TensorProto& w = b.tensor_header("w", {4, 3, 3, 3}, type);
    w.set_raw_data(std::string(size_t(108) * (type == onnx::TensorProto::DOUBLE ? 8 : 2), '\0'));
    const std::string name = type == onnx::TensorProto::DOUBLE ? "DOUBLE" : "FLOAT16";
    CAPTURE(name);
    auto model = winfer::Model::load(b.write(dir.file("typed.onnx")));
    REQUIRE_FALSE(model.ok());
    CHECK(model.status().code() == winfer::ErrorCode::kUnsupported);
    INFO("message: " << model.status().message());
    CHECK(contains(model.status().message(), dir.file("typed.onnx")));
    CHECK(contains(model.status().message(), "initializer 'w'"));
    CHECK(contains(model.status().message(), "is " + name));
    CHECK(contains(model.status().message(), "float32"));
  }
}

TEST_CASE("onnx error: an unsupported operator names the node, op type and opset and lists the supported ones") {
  TempDir dir;
  OnnxBuilder b = conv_model();
  b.node("Tanh", {"out"}, {"s"}, "/act/Tanh");
  b.graph().mutable_output(0)->set_name("s");
  auto model = winfer::Model::load(b.write(dir.file("tanh.onnx")));
  REQUIRE_FALSE(model.ok());
  CHECK(model.status().code() == winfer::ErrorCode::kUnsupported);
  const std::string& message = model.status().message();
  INFO("message: " << message);
  for (const char* part : {"node '/act/Tanh' (Tanh, opset 13)", "operator Tanh is not supported", "Conv",
                           "BatchNormalization", "Gemm", "Reshape"}) {
    CHECK(contains(message, part));
  }
  CHECK(contains(message, dir.file("tanh.onnx")));
  // Another domain is refused even for a known op type.
  OnnxBuilder domain = conv_model();
  domain.graph().mutable_node(1)->set_domain("com.microsoft");
  expect_onnx_error(domain.write(dir.file("domain.onnx")), {"node '/relu/Relu'", "domain 'com.microsoft'"});
}

TEST_CASE("onnx error: opsets outside 7..18 are refused, 7 and 18 load") {
  TempDir dir;
  for (int64_t opset : {6, 19}) {
    CAPTURE(opset);
    expect_onnx_error(conv_model(opset).write(dir.file("opset.onnx")),
                      {dir.file("opset.onnx"), "opset " + std::to_string(opset), "7 to 18"});
  }
  for (int64_t opset : {7, 18}) {
    CAPTURE(opset);
    load_ok(conv_model(opset).write(dir.file("opset.onnx")));
  }
  OnnxBuilder none = conv_model();
  none.model().mutable_opset_import(0)->set_domain("ai.onnx.ml");
  expect_onnx_error(none.write(dir.file("none.onnx")), {dir.file("none.onnx"), "no version of the default ONNX"});
}

TEST_CASE("onnx error: two graph inputs, a symbolic channel dim, a non-float input") {
  TempDir dir;
  OnnxBuilder two = conv_model();
  two.input("mask", {1, 1, 6, 6});
  expect_onnx_error(two.write(dir.file("two.onnx")), {dir.file("two.onnx"), "2 inputs", "'x'", "'mask'"});

  OnnxBuilder channels;
  channels.input("x", {1, "C", 6, 6});
  channels.node("Relu", {"x"}, {"y"});
  channels.output("y");
  expect_onnx_error(channels.write(dir.file("channels.onnx")),
                    {dir.file("channels.onnx"), "graph input 'x'", "dim 1 (channels) is symbolic ('C')"});

  OnnxBuilder ints;
  ints.input("x", {1, 3, 6, 6}, onnx::TensorProto::INT64);
  ints.node("Relu", {"x"}, {"y"});
  ints.output("y");
  expect_onnx_error(ints.write(dir.file("ints.onnx")), {dir.file("ints.onnx"), "graph input 'x'", "INT64"});
}

TEST_CASE("onnx limits: file size, node count and folded constants are bounded") {
  TempDir dir;
  // A sparse file one byte over 2 GiB - 1: its size is refused before a byte is read (the disk
  // holds none of it).
  const std::string big = dir.file("big.onnx");
  write_bytes(big, "");
  REQUIRE(::truncate(big.c_str(), off_t(1) << 31) == 0);
  expect_onnx_error(big, {big, "2147483648 bytes", "2147483647"});
  std::filesystem::remove(big);

  OnnxBuilder many;
  many.input("x", {1, 3, 4, 4});
  std::string last = "x";
  for (int i = 0; i < 100001; ++i) {
    const std::string next = "v" + std::to_string(i);
    many.node("Identity", {last}, {next}, "n" + std::to_string(i));
    last = next;
  }
  many.output(last);
  expect_onnx_error(many.write(dir.file("many.onnx")), {dir.file("many.onnx"), "100001 nodes", "limit of 100000"});

  OnnxBuilder folded;
  folded.input("x", {1, 3, 4, 4});
  folded.int_initializer("dims", {2}, {2048, 1024});
  folded.node("ConstantOfShape", {"dims"}, {"big"}, "/ConstantOfShape");
  folded.node("Reshape", {"x", "big"}, {"y"}, "/Reshape");
  folded.output("y");
  expect_onnx_error(folded.write(dir.file("folded.onnx")),
                    {dir.file("folded.onnx"), "node '/ConstantOfShape'", "2^20"});
}

// ---- the fuzz seed corpus (tests/fuzz/corpus/onnx/) ------------------------------------------

namespace {

OnnxBuilder seed_tiny_net() {
  OnnxBuilder b;
  TinyNet().build(b, {1, 3, 8, 8});
  return b;
}

// Shape -> Gather -> Unsqueeze -> Concat -> Reshape (torch's view(x.size(0), -1)), symbolic batch.
OnnxBuilder seed_view_flatten() {
  OnnxBuilder b;
  b.input("x", {"batch", 3, 4, 4});
  b.initializer("conv.weight", {2, 3, 3, 3}, onnx_random_values(54, 81));
  b.initializer("fc.weight", {3, 32}, onnx_random_values(96, 82));
  b.int_initializer("zero", {}, {0});
  b.int_initializer("axes", {1}, {0});
  b.int_initializer("minus_one", {1}, {-1});
  auto& conv = b.node("Conv", {"x", "conv.weight"}, {"c"}, "/conv/Conv");
  set_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Shape", {"c"}, {"shape"}, "/Shape");
  b.node("Gather", {"shape", "zero"}, {"n"}, "/Gather");
  b.node("Unsqueeze", {"n", "axes"}, {"n1"}, "/Unsqueeze");
  set_int(b.node("Concat", {"n1", "minus_one"}, {"target"}, "/Concat"), "axis", 0);
  b.node("Reshape", {"c", "target"}, {"flat"}, "/Reshape");
  set_int(b.node("Gemm", {"flat", "fc.weight"}, {"y"}, "/fc/Gemm"), "transB", 1);
  b.output("y");
  return b;
}

OnnxBuilder seed_shuffle_slices() {
  OnnxBuilder b;
  b.input("x", {1, 4, 3, 3});
  b.int_initializer("to5", {5}, {1, 2, 2, 3, 3});
  b.int_initializer("to4", {4}, {1, -1, 3, 3});
  b.int_initializer("zero", {1}, {0});
  b.int_initializer("two", {1}, {2});
  b.int_initializer("end", {1}, {std::numeric_limits<int64_t>::max()});
  b.int_initializer("axis", {1}, {1});
  b.node("Slice", {"x", "zero", "two", "axis"}, {"low"}, "/Slice");
  b.node("Slice", {"x", "two", "end", "axis"}, {"high"}, "/Slice_1");
  b.node("Relu", {"high"}, {"r"}, "/relu/Relu");
  set_int(b.node("Concat", {"low", "r"}, {"cat"}, "/Concat"), "axis", 1);
  b.node("Reshape", {"cat", "to5"}, {"g"}, "/Reshape");
  set_ints(b.node("Transpose", {"g"}, {"t"}, "/Transpose"), "perm", {0, 2, 1, 3, 4});
  b.node("Reshape", {"t", "to4"}, {"y"}, "/Reshape_1");
  b.output("y");
  return b;
}

// Opset 13 attributes-as-inputs and the folded arithmetic: a Conv whose bias is a following Add,
// Clip(0, 6) from inputs, AveragePool, Dropout, Identity, Split with sizes, ReduceMean, and a
// Reshape target computed by Shape, Range, Gather, ConstantOfShape, Mul, Div, Sub, Cast.
OnnxBuilder seed_opset13_misc() {
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6});
  b.initializer("conv.weight", {4, 4, 1, 1}, onnx_random_values(16, 83));
  b.initializer("conv.bias", {1, 4, 1, 1}, onnx_random_values(4, 84));
  b.initializer("low", {}, {0.f});
  b.initializer("high", {}, {6.f});
  b.int_initializer("sizes", {2}, {1, 3});
  b.int_initializer("two", {1}, {2});
  b.int_initializer("r0", {}, {0});
  b.int_initializer("r2", {}, {2});
  b.int_initializer("r1", {}, {1});
  b.int_initializer("zeros", {2}, {0, 0});
  b.node("Conv", {"x", "conv.weight"}, {"c"}, "/conv/Conv");
  b.node("Add", {"c", "conv.bias"}, {"cb"}, "/conv/Add");
  b.node("Clip", {"cb", "low", "high"}, {"clip"}, "/Clip");
  auto& pool = b.node("AveragePool", {"clip"}, {"ap"}, "/AveragePool");
  set_ints(pool, "kernel_shape", {3, 3});
  set_ints(pool, "pads", {1, 1, 1, 1});
  b.node("Dropout", {"ap"}, {"d"}, "/Dropout");
  b.node("Identity", {"d"}, {"i"}, "/Identity");
  set_int(b.node("Split", {"i", "sizes"}, {"s0", "s1"}, "/Split"), "axis", 1);
  set_int(b.node("Concat", {"s1", "s0"}, {"cat"}, "/Concat"), "axis", 1);
  auto& mean = b.node("ReduceMean", {"cat"}, {"m"}, "/ReduceMean");
  set_ints(mean, "axes", {2, 3});
  set_int(mean, "keepdims", 0);
  b.node("Shape", {"m"}, {"shape"}, "/Shape");
  b.node("Range", {"r0", "r2", "r1"}, {"idx"}, "/Range");
  b.node("Gather", {"shape", "idx"}, {"dims"}, "/Gather");
  set_int_tensor(b.node("ConstantOfShape", {"two"}, {"ones"}, "/ConstantOfShape"), "value", {1}, {1});
  b.node("Mul", {"dims", "ones"}, {"mul"}, "/Mul");
  b.node("Div", {"mul", "ones"}, {"div"}, "/Div");
  b.node("Sub", {"div", "zeros"}, {"sub"}, "/Sub");
  set_int(b.node("Cast", {"sub"}, {"target"}, "/Cast"), "to", onnx::TensorProto::INT64);
  b.node("Reshape", {"m", "target"}, {"flat"}, "/Reshape");
  set_int(b.node("Softmax", {"flat"}, {"y"}, "/Softmax"), "axis", 1);
  b.output("y");
  return b;
}

// Opset 9: Unsqueeze and Slice take attributes; a Constant node; Softmax's default axis.
OnnxBuilder seed_opset9() {
  OnnxBuilder b(9);
  b.input("x", {1, 3, 4, 4});
  b.initializer("conv.weight", {2, 3, 3, 3}, onnx_random_values(54, 85));
  b.initializer("conv.bias", {2}, onnx_random_values(2, 86));
  b.initializer("fc.weight", {8, 5}, onnx_random_values(40, 87));
  b.initializer("fc.bias", {5}, onnx_random_values(5, 88));
  auto& conv = b.node("Conv", {"x", "conv.weight", "conv.bias"}, {"c"}, "/conv/Conv");
  set_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"}, "/Relu");
  auto& pool = b.node("MaxPool", {"r"}, {"p"}, "/MaxPool");
  set_ints(pool, "kernel_shape", {2, 2});
  set_ints(pool, "strides", {2, 2});
  b.node("Shape", {"p"}, {"shape"}, "/Shape");
  auto& slice = b.node("Slice", {"shape"}, {"n"}, "/Slice");
  set_ints(slice, "starts", {0});
  set_ints(slice, "ends", {1});
  set_int_tensor(b.node("Constant", {}, {"minus_one"}, "/Constant"), "value", {1}, {-1});
  set_int(b.node("Concat", {"n", "minus_one"}, {"target"}, "/Concat"), "axis", 0);
  b.node("Reshape", {"p", "target"}, {"flat"}, "/Reshape");
  b.node("Gemm", {"flat", "fc.weight", "fc.bias"}, {"g"}, "/fc/Gemm");
  b.node("Softmax", {"g"}, {"y"}, "/Softmax");
  b.output("y");
  return b;
}

// A Conv weight in an external file that is the model file itself ("model.onnx", the name the
// fuzz target writes its input to): the bytes of an unused initializer, found by their offset.
OnnxBuilder seed_external_self() {
  const std::vector<float> w = onnx_random_values(4 * 3 * 3 * 3, 89);
  OnnxBuilder b = conv_model_without_weight();
  b.initializer("carrier", {108}, w);
  b.external_initializer("w", {4, 3, 3, 3}, "model.onnx", 0, 432);
  onnx::TensorProto* t = b.graph().mutable_initializer(b.graph().initializer_size() - 1);
  // A fixed-width offset, so that writing the real one keeps every byte where it is.
  t->mutable_external_data(1)->set_value("00000000");
  const std::string bytes = b.serialize();
  const size_t at = bytes.find(std::string(reinterpret_cast<const char*>(w.data()), 432));
  REQUIRE(at != std::string::npos);
  char offset[16];
  std::snprintf(offset, sizeof offset, "%08zu", at);
  t->mutable_external_data(1)->set_value(offset);
  REQUIRE(b.serialize().size() == bytes.size());
  return b;
}

std::vector<std::pair<std::string, OnnxBuilder>> onnx_seeds() {
  std::vector<std::pair<std::string, OnnxBuilder>> seeds;
  seeds.emplace_back("tiny_net.onnx", seed_tiny_net());
  seeds.emplace_back("view_flatten.onnx", seed_view_flatten());
  seeds.emplace_back("shuffle_slices.onnx", seed_shuffle_slices());
  seeds.emplace_back("opset13_misc.onnx", seed_opset13_misc());
  seeds.emplace_back("opset9.onnx", seed_opset9());
  seeds.emplace_back("external_self.onnx", seed_external_self());
  return seeds;
}

}  // namespace

TEST_CASE("onnx fuzz corpus: the seed models load and run, each as the fuzz target's model.onnx") {
  // WINFER_WRITE_ONNX_SEEDS=DIR writes the seeds there (how tests/fuzz/corpus/onnx/ was made).
  if (const char* out = std::getenv("WINFER_WRITE_ONNX_SEEDS")) {
    for (auto& [name, builder] : onnx_seeds()) builder.write(std::string(out) + "/" + name);
  }
  for (auto& seed : onnx_seeds()) {
    // Not a structured binding: clang refuses one inside CAPTURE's lambda.
    const std::string& name = seed.first;
    auto& builder = seed.second;
    CAPTURE(name);
    TempDir dir;
    const std::string bytes = builder.serialize();
    CHECK(bytes.size() < 16384);  // within scripts/fuzz.sh's -max_len
    write_bytes(dir.file("model.onnx"), bytes);
    auto model = load_ok(dir.file("model.onnx"));
    const Tensor input = random_tensor(model->input_shape(), 91);
    const Tensor output = run_at(model, input);
    CHECK(output.numel() > 0);
    // The committed seed is this one (regenerate with WINFER_WRITE_ONNX_SEEDS when it changes).
    const std::string committed = repo_path("tests/fuzz/corpus/onnx/" + name);
    CHECK(read_bytes(committed) == bytes);
  }
}

TEST_CASE("onnx error: dims that promise terabytes are refused before anything is allocated for them") {
  // A weight of 2^40 floats (4 TiB) with no data: the data's size is checked before the tensor
  // is allocated (it was allocated first).
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {1, int64_t(1) << 20, 1, 1});
  b.tensor_header("w", {int64_t(1) << 20, int64_t(1) << 20, 1, 1}, onnx::TensorProto::FLOAT);
  b.node("Conv", {"x", "w"}, {"y"}, "/conv/Conv");
  b.output("y");
  expect_onnx_error(b.write(dir.file("huge.onnx")),
                    {dir.file("huge.onnx"), "initializer 'w'", "0 values in float_data", "1099511627776"});
  // The same through a Gemm whose weight the importer transposes (read at import).
  OnnxBuilder gemm;
  gemm.input("x", {1, int64_t(1) << 20});
  gemm.tensor_header("w", {int64_t(1) << 20, int64_t(1) << 20}, onnx::TensorProto::FLOAT);
  gemm.node("Gemm", {"x", "w"}, {"y"}, "/fc/Gemm");
  gemm.output("y");
  expect_onnx_error(gemm.write(dir.file("gemm.onnx")), {dir.file("gemm.onnx"), "initializer 'w'", "1099511627776"});
}

TEST_CASE("onnx error: broken shape arithmetic is refused, not computed out of bounds or overflowed") {
  TempDir dir;
  auto reshape_by = [&dir](const std::string& name, const std::function<void(OnnxBuilder&)>& target) {
    OnnxBuilder b;
    b.input("x", {1, 3, 4, 4});
    target(b);  // writes "target"
    b.node("Reshape", {"x", "target"}, {"y"}, "/Reshape");
    b.output("y");
    return b.write(dir.file(name));
  };
  expect_onnx_error(reshape_by("unsqueeze.onnx",
                               [](OnnxBuilder& b) {
                                 b.int_initializer("v", {1}, {48});
                                 b.int_initializer("axes", {2}, {0, 0});
                                 b.node("Unsqueeze", {"v", "axes"}, {"target"}, "/Unsqueeze");
                               }),
                    {"node '/Unsqueeze' (Unsqueeze, opset 13)", "axis 0 is given twice"});
  expect_onnx_error(reshape_by("concat.onnx",
                               [](OnnxBuilder& b) {
                                 b.int_initializer("a", {4, 1}, {1, 3, 4, 4});
                                 b.int_initializer("b", {1, 1}, {1});
                                 set_int(b.node("Concat", {"a", "b"}, {"target"}, "/Concat"), "axis", 1);
                               }),
                    {"node '/Concat' (Concat, opset 13)", "shapes differ"});
  expect_onnx_error(reshape_by("overflow.onnx",
                               [](OnnxBuilder& b) {
                                 b.int_initializer("a", {1}, {std::numeric_limits<int64_t>::max()});
                                 b.int_initializer("b", {1}, {2});
                                 b.node("Mul", {"a", "b"}, {"target"}, "/Mul");
                               }),
                    {"node '/Mul' (Mul, opset 13)", "integer overflow"});
  expect_onnx_error(reshape_by("negative.onnx",
                               [](OnnxBuilder& b) {
                                 b.int_initializer("target", {4}, {-2, -3, 4, 2});
                               }),
                    {"node '/Reshape' (Reshape, opset 13)", "negative dim -2"});
  expect_onnx_error(reshape_by("huge.onnx",
                               [](OnnxBuilder& b) {
                                 b.int_initializer("target", {3}, {int64_t(1) << 40, int64_t(1) << 40, -1});
                               }),
                    {"node '/Reshape' (Reshape, opset 13)", "cannot reshape [1,3,4,4]"});
}

TEST_CASE("onnx import: LoadOptions::confine_to applies to external data, symlinks resolved") {
  // models/ holds the model and a symlink to weights outside it: loaded as usual without
  // confine_to, refused with it (as a YAML model's weights: file is), naming where it leads.
  TempDir dir;
  std::filesystem::create_directories(dir.file("models"));
  const TinyNet net;
  const std::vector<float>& w = net.w1;
  write_bytes(dir.file("outside.bin"), std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float)));
  std::filesystem::create_symlink(dir.file("outside.bin"), dir.file("models/weights.bin"));
  OnnxBuilder b;
  net.build(b, {2, 3, 8, 8}, false);
  b.external_initializer("conv1.weight", {4, 3, 3, 3}, "weights.bin");
  const std::string path = b.write(dir.file("models/net.onnx"));
  const Tensor input = random_tensor(Shape{2, 3, 8, 8}, 35);
  const Tensor want = run_at(load_ok(net.write(dir.file("inline.onnx"))), input);
  CHECK(same_bits(run_at(load_ok(path), input), want));
  winfer::LoadOptions confined;
  confined.confine_to = dir.file("models");
  auto refused = winfer::Model::load(path, confined);
  REQUIRE_FALSE(refused.ok());
  const std::string& message = refused.status().message();
  INFO("message: " << message);
  CHECK(contains(message, "net.onnx"));
  CHECK(contains(message, "'conv1.weight'"));
  CHECK(contains(message, "outside.bin"));
  CHECK(contains(message, "--confine-to"));
  // A file inside the folder is fine with confine_to.
  std::filesystem::remove(dir.file("models/weights.bin"));
  std::filesystem::copy_file(dir.file("outside.bin"), dir.file("models/weights.bin"));
  CHECK(same_bits(run_at(load_ok(path, confined), input), want));
}

TEST_CASE("onnx import: torch's AvgPool2d(padding, count_include_pad) as Pad + AveragePool, a Pad of nothing") {
  // torch 1.13 writes AvgPool2d(3, 1, padding=1) as a zero Pad then an AveragePool without pads
  // (DenseNet, Inception): the same as ONNX's AveragePool with pads and count_include_pad = 1.
  // A Pad of zeros (torch writes one even for padding 0) is the identity, before any op.
  TempDir dir;
  auto model_with = [&](bool as_pad, const std::string& file) {
    OnnxBuilder b(13);
    b.input("x", {2, 3, 7, 9});
    std::string pooled_input = "x";
    if (as_pad) {
      b.int_initializer("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
      b.node("Pad", {"x", "pads"}, {"p"}, "/pool/Pad");
      pooled_input = "p";
    }
    auto& pool = b.node("AveragePool", {pooled_input}, {"a"}, "/pool/AveragePool");
    set_ints(pool, "kernel_shape", {3, 3});
    set_ints(pool, "strides", {1, 1});
    if (!as_pad) {
      set_ints(pool, "pads", {1, 1, 1, 1});
      set_int(pool, "count_include_pad", 1);
    }
    b.int_initializer("nothing", {8}, {0, 0, 0, 0, 0, 0, 0, 0});
    b.node("Pad", {"a", "nothing"}, {"q"}, "/nothing/Pad");
    auto& max = b.node("MaxPool", {"q"}, {"m"}, "/max/MaxPool");
    set_ints(max, "kernel_shape", {2, 2});
    set_ints(max, "strides", {2, 2});
    b.output("m");
    return b.write(dir.file(file));
  };
  const Tensor input = random_tensor(Shape{2, 3, 7, 9}, 37);
  const Tensor want = run_at(load_ok(model_with(false, "pads.onnx")), input);
  CHECK(same_bits(run_at(load_ok(model_with(true, "pad_then_pool.onnx")), input), want));
  // A zero Pad before a MaxPool would pad with zeros, not with -inf: refused by name.
  OnnxBuilder m(13);
  m.input("x", {1, 2, 5, 5});
  m.int_initializer("pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  m.node("Pad", {"x", "pads"}, {"p"}, "/Pad");
  auto& max = m.node("MaxPool", {"p"}, {"y"}, "/MaxPool");
  set_ints(max, "kernel_shape", {3, 3});
  m.output("y");
  expect_onnx_error(m.write(dir.file("pad_max.onnx")), {"/MaxPool", "is a Pad", "Conv or an AveragePool"});
}

TEST_CASE("onnx import: images_per_run splits a symbolic batch, a static export's fixed batch is refused, saying why") {
  TempDir dir;
  const TinyNet net;
  const Tensor input = random_tensor(Shape{3, 3, 8, 8}, 72);
  winfer::SessionOptions options;
  options.input_shape = {3, 3, 8, 8};
  options.images_per_run = 2;
  auto dynamic = winfer::Session::create(load_ok(net.write(dir.file("dynamic.onnx"), {"N", 3, 8, 8})), options);
  REQUIRE_MESSAGE(dynamic.ok(), dynamic.status().message());
  auto out = dynamic.value()->run(input);
  REQUIRE(out.ok());
  CHECK(relative_error(out.value(), net.reference(input)) < 1e-5);
  // The default export ([2, 3, 8, 8]) fixes the batch at 2.
  options.input_shape.clear();
  options.images_per_run = 1;
  auto fixed = winfer::Session::create(load_ok(net.write(dir.file("static.onnx"))), options);
  REQUIRE_FALSE(fixed.ok());
  INFO("message: " << fixed.status().message());
  CHECK(contains(fixed.status().message(), "static.onnx: images_per_run = 1: the model fixes its batch at 2"));
  CHECK(contains(fixed.status().message(), "winfer convert"));
}
