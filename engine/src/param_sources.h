// Sources of layer parameters: a safetensors file, tensors written inline in the YAML, or a
// seeded generator for benchmarks without weight files.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/src/op.h"
#include "winfer/safetensors.h"

namespace winfer {

// A source that can say which names it holds (a weights file, an imported ONNX model).
class NamedParamSource : public ParamSource {
 public:
  virtual bool has(const std::string& name) const = 0;
  // The bytes its float32 parameters of at most `at_most` bytes take one after the other, each
  // rounded up to Tensor::kAlignment (what a WeightBlock for them needs); 0 when it cannot say.
  virtual size_t block_bytes(size_t /*at_most*/) const { return 0; }
};

// A parameter's bytes rounded up to Tensor::kAlignment, or 0 above `at_most` (NamedParamSource::block_bytes).
inline size_t param_block_bytes(const Shape& shape, size_t at_most) {
  const size_t bytes = static_cast<size_t>(shape.numel()) * sizeof(float);
  return bytes > at_most ? 0 : (bytes + Tensor::kAlignment - 1) / Tensor::kAlignment * Tensor::kAlignment;
}

class SafeTensorsParamSource : public NamedParamSource {
 public:
  explicit SafeTensorsParamSource(std::shared_ptr<const SafeTensorsFile> file) : file_(std::move(file)) {}
  Status get(const std::string& name, const Shape& expected, Tensor* out) override;
  bool has(const std::string& name) const override { return file_->find(name) != nullptr; }
  size_t block_bytes(size_t at_most) const override {
    size_t bytes = 0;
    for (const SafeTensor& t : file_->tensors()) {
      if (t.dtype == "F32") bytes += param_block_bytes(t.shape, at_most);
    }
    return bytes;
  }

 private:
  std::shared_ptr<const SafeTensorsFile> file_;
};

struct InlineTensor {
  Shape shape;
  std::vector<float> data;
  int line = 0;
};

class InlineParamSource : public ParamSource {
 public:
  InlineParamSource(std::string file, std::map<std::string, InlineTensor> tensors)
      : file_(std::move(file)), tensors_(std::move(tensors)) {}
  Status get(const std::string& name, const Shape& expected, Tensor* out) override;
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  bool empty() const { return tensors_.empty(); }
  std::vector<std::string> names() const {
    std::vector<std::string> result;
    for (const auto& kv : tensors_) result.push_back(kv.first);
    return result;
  }

 private:
  std::string file_;
  std::map<std::string, InlineTensor> tensors_;
};

// Deterministic weights from (seed, parameter name): the same model and seed always give the
// same numbers, whatever the layer order. Scales keep deep networks finite:
//   rank >= 2 "*.weight" (conv/linear): He-uniform, U(-a, a) with a = sqrt(6 / fan_in)
//   rank-1 "*.weight" (batch-norm gamma): U(0.9, 1.1);  "*.running_var": U(0.9, 1.1)
//   "*.running_mean", "*.bias": U(-0.1, 0.1)
class RandomParamSource : public ParamSource {
 public:
  explicit RandomParamSource(uint64_t seed) : seed_(seed) {}
  Status get(const std::string& name, const Shape& expected, Tensor* out) override;

 private:
  uint64_t seed_;
};

// Inline tensors first, then the weights (a safetensors file, an imported ONNX model's tensors).
class ModelParamSource : public ParamSource {
 public:
  ModelParamSource(std::string model_file, std::unique_ptr<InlineParamSource> inline_tensors,
                   std::unique_ptr<NamedParamSource> file, std::unique_ptr<RandomParamSource> random)
      : model_file_(std::move(model_file)),
        inline_(std::move(inline_tensors)),
        file_(std::move(file)),
        random_(std::move(random)) {}
  Status get(const std::string& name, const Shape& expected, Tensor* out) override;

 private:
  std::string model_file_;
  std::unique_ptr<InlineParamSource> inline_;
  std::unique_ptr<NamedParamSource> file_;
  std::unique_ptr<RandomParamSource> random_;
};

}  // namespace winfer
