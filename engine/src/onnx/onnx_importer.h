// The importer's working state, shared by its converters: onnx_importer.cpp walks the graph,
// onnx_shape_ops.cpp folds the integer "shape" subgraphs to constants, onnx_layer_ops.cpp turns
// the data operators into winfer layers. Internal to engine/src/onnx/.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/src/attrs.h"
#include "engine/src/onnx/onnx_import.h"
#include "winfer/shape.h"

namespace winfer::onnx_import {

// A tensor known at import time: a folded shape computation, a Constant, a small initializer.
struct Constant {
  std::vector<int64_t> dims;
  bool floating = false;
  std::vector<int64_t> ints;   // when !floating
  std::vector<double> floats;  // when floating
  int64_t size() const { return static_cast<int64_t>(floating ? floats.size() : ints.size()); }
  double at(int64_t i) const { return floating ? floats[i] : double(ints[i]); }
};

// What an ONNX value name stands for during the import.
struct Value {
  enum class Kind {
    kData,         // a winfer tensor (a layer's output or the graph input)
    kConstant,     // folded
    kInitializer,  // an initializer (weights), read when a layer takes it
    kShuffle,      // Reshape [N,C,H,W] -> [N,g,C/g,H,W] (then Transpose 1<->2): a channel shuffle in progress
    kPadded,       // a zero Pad of H and W, which the Conv reading it takes as its own padding
  };
  Kind kind = Kind::kData;
  std::string tensor;  // kData: winfer's tensor name; kShuffle: the shuffled tensor
  Shape shape;         // kData: at the import shape; kShuffle: the 4-D tensor's
  Constant constant;
  onnx::TensorProto* initializer = nullptr;
  std::vector<int64_t> pads;  // kPadded: [top, left, bottom, right]
  int64_t groups = 0;         // kShuffle
  bool transposed = false;    // kShuffle
};

// One winfer layer, as it will be written in the model text.
struct Layer {
  std::string name, op;
  std::vector<std::pair<std::string, AttrValue>> attrs;
  std::vector<std::string> inputs;
  std::string params;  // the parameter prefix when it is not the layer's name
  // A conv2d or linear without a bias whose output a following Add of a per-channel constant
  // may still give one (exporters write MatMul + Add, or Conv + Add): its channel count, else 0.
  int64_t open_bias_channels = 0;
};

// A split of a tensor's channels the importer made for Slice nodes: the part boundaries
// (0 = b0 < b1 < ... = C) and the split layer's name, so that the Slice of another part reuses it.
struct ChannelSplit {
  std::string layer;
  std::vector<int64_t> bounds;
};

class Importer;
using Converter = Status (*)(Importer&);
using ConverterTable = std::map<std::string, Converter>;
void add_shape_ops(ConverterTable& table);  // onnx_shape_ops.cpp
void add_layer_ops(ConverterTable& table);  // onnx_layer_ops.cpp
// Operators that are folded when their inputs are constants and become layers on activations:
// the shape-ops converter hands the activation case to these (onnx_layer_ops.cpp).
Status convert_add_layer(Importer& im);
Status convert_mul_layer(Importer& im);
Status convert_concat_layer(Importer& im);
Status convert_slice_layer(Importer& im);
Status convert_reshape_layer(Importer& im);

class Importer {
 public:
  explicit Importer(std::unique_ptr<OnnxFile> file);
  Result<ImportedModel> run(bool as_description = false);

  // ---- for converters: the node being converted ----
  const onnx::NodeProto& node() const { return *node_; }
  int64_t opset() const { return params_->file().opset(); }
  OnnxFile& file() const { return params_->file(); }
  // True when every present input is known at import time (folded, Constant, initializer).
  bool all_inputs_constant() const;
  // "net.onnx: node '/conv1/Conv' (Conv, opset 13): " + message, as a kUnsupported or
  // kInvalidArgument error.
  Status unsupported_here(const std::string& message) const;
  Status invalid_here(const std::string& message) const;

  int input_count() const;            // present inputs (a trailing "" counts as absent)
  bool has_input(int i) const;        // present and not ""
  Result<const Value*> input(int i);  // fails when absent
  // A kData value, else a clear error; with padded_ok a Pad kept for a Conv (kPadded) too.
  Result<const Value*> data_input(int i, bool padded_ok = false);
  // The input as a constant: folded, Constant, or an initializer read as numbers.
  Result<Constant> constant_input(int i, const std::string& what);
  Result<std::vector<int64_t>> ints_input(int i, const std::string& what);
  void set_output(int i, Value value);

  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, const std::vector<int64_t>& fallback) const;
  const onnx::TensorProto* attr_tensor(const std::string& name) const;
  // Fails naming any attribute of the node not in `known` (an attribute winfer would ignore).
  Status check_attrs(const std::vector<std::string>& known) const;

  // Emits a layer named after the node; its outputs become the node's outputs 0..n-1 (as kData
  // values with the shapes winfer's op infers, whose errors are reported against the node).
  Status emit(Layer layer, const std::vector<std::string>& inputs, int outputs = 1);
  // The parameter prefix of a layer whose weight is the initializer `weight_name` (torchvision's
  // module path "layer1.0.conv1" when the name is "layer1.0.conv1.weight"), else the layer name.
  std::string param_prefix(const std::string& layer_name, const std::string& weight_name);
  // The layer a node becomes is named after the node (or its graph output).
  std::string layer_name() const;
  // A new unique layer name: `base`, or layer_name() when empty. emit() keeps a layer's given name.
  std::string new_layer_name(const std::string& base = std::string()) {
    return unique_layer_name(base.empty() ? layer_name() : base);
  }
  std::multimap<std::string, ChannelSplit>& channel_splits() { return channel_splits_; }
  // Registers parameter prefix + "." + suffix as read from an initializer / computed values.
  Status add_param(const std::string& name, const Value& initializer, const Shape& expected, const std::string& what);
  void add_computed_param(const std::string& name, const Shape& shape, std::vector<float> values);
  // Reads a float initializer (for the importer's own arithmetic: Gemm transposes, scales).
  Result<std::vector<float>> read_floats(const Value& initializer, const std::string& what);
  Result<Shape> initializer_shape(const Value& initializer, const std::string& what);

  // The last layer emitted for a tensor, for peepholes (MatMul + Add -> linear with bias).
  Layer* producer_of(const std::string& tensor);
  const Shape& tensor_shape(const std::string& tensor) const { return tensor_shapes_.at(tensor); }
  // How many live nodes read the ONNX value `name`.
  int consumers(const std::string& name) const;

 private:
  Status read_inputs_and_outputs();
  Status order_nodes(std::vector<const onnx::NodeProto*>* order);
  Status convert(const onnx::NodeProto& node);
  std::string unique_layer_name(std::string base);
  std::string write_yaml() const;
  ModelDescription describe() const;  // what the loader reads of write_yaml()'s text, without the text

  std::unique_ptr<OnnxParamSource> params_;
  ConverterTable converters_;
  const onnx::NodeProto* node_ = nullptr;
  int node_index_ = 0;
  std::map<std::string, Value> values_;
  std::map<std::string, onnx::TensorProto*> initializers_;
  std::map<std::string, int> consumers_;
  std::vector<Layer> layers_;
  std::map<std::string, size_t> layer_of_tensor_;
  std::map<std::string, Shape> tensor_shapes_;               // winfer tensors (layer outputs, the input)
  std::multimap<std::string, ChannelSplit> channel_splits_;  // by the tensor split
  std::map<std::string, int> layer_names_;
  std::map<std::string, int> param_prefixes_;
  std::string input_name_;
  Shape input_shape_;
  std::vector<bool> input_fixed_;
  std::vector<std::string> output_names_;  // ONNX graph outputs
};

}  // namespace winfer::onnx_import
