// ONNX import: an .onnx file -> winfer's own model (its description, or its YAML text, and a
// source of its parameters), which the model loader then reads like any YAML model, so that
// fusion, planning and every convolution algorithm apply unchanged, and `winfer convert` writes
// the model that is loaded. What is supported and refused: docs/MODEL_FORMAT.md, "ONNX".
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/src/model_description.h"
#include "engine/src/onnx/onnx_file.h"
#include "engine/src/param_sources.h"

namespace winfer::onnx_import {

// The parameters of an imported model: initializers of the ONNX file (copied out one at a time
// and freed once their last user has them) and tensors the importer computed (a transposed
// Gemm weight, a scaled bias).
class OnnxParamSource : public NamedParamSource {
 public:
  explicit OnnxParamSource(std::unique_ptr<OnnxFile> file) : file_(std::move(file)) {}
  Status get(const std::string& name, const Shape& expected, Tensor* out) override;
  bool has(const std::string& name) const override { return entries_.count(name) != 0; }
  size_t block_bytes(size_t at_most) const override {
    size_t bytes = 0;
    for (const auto& [name, entry] : entries_) {
      if (entry.tensor != nullptr) bytes += param_block_bytes(entry.shape, at_most);
    }
    return bytes;
  }

  // `name` reads initializer `tensor` (counted: each add is one use).
  void add_initializer(const std::string& name, onnx::TensorProto* tensor, Shape shape, std::string what);
  void add_computed(const std::string& name, Shape shape, std::vector<float> values);
  // Every parameter with its shape, in the order added (winfer convert writes them all).
  const std::vector<std::pair<std::string, Shape>>& names() const { return order_; }
  OnnxFile& file() { return *file_; }

 private:
  struct Entry {
    onnx::TensorProto* tensor = nullptr;  // an initializer, or null for a computed tensor
    std::vector<float> values;            // computed
    Shape shape;
    std::string what;
  };
  std::unique_ptr<OnnxFile> file_;
  std::map<std::string, Entry> entries_;
  std::map<const onnx::TensorProto*, int> uses_left_;  // initializer -> parameters not yet read
  std::vector<std::pair<std::string, Shape>> order_;
};

struct ImportedModel {
  std::string yaml;  // a winfer/1 model without `weights:` (the parameters come from `params`)
  // import_onnx(..., as_description = true): the same model as the loader's description of it
  // (model_description.h), built directly (`yaml` then stays empty): Model::load's way, which
  // spares writing the text, yaml-cpp's parse of it and any YAML tree, most of a small model's
  // start-up (docs/PERFORMANCE.md, "Start-up and load memory").
  std::unique_ptr<ModelDescription> description;
  std::unique_ptr<OnnxParamSource> params;
  std::vector<bool> input_dim_fixed;  // per input dim: fixed in the file (true) or symbolic
};

// Reads and converts an ONNX model. Errors name the file and the node (name, op type, opset).
// `confine_to`: LoadOptions::confine_to, applied to external data files.
// `as_description`: ImportedModel::description instead of ImportedModel::yaml.
Result<ImportedModel> import_onnx(const std::string& path, const std::string& confine_to = "",
                                  bool as_description = false);

// True when `path` names an ONNX file (by its extension, .onnx in any case).
bool is_onnx_path(const std::string& path);

}  // namespace winfer::onnx_import
