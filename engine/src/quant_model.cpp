#include "engine/src/quant_model.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "layers/conv2d.h"
#include "layers/conv2d_int8.h"
#include "layers/dequantize.h"
#include "layers/linear.h"
#include "layers/linear_int8.h"
#include "layers/quantize.h"

namespace winfer {
namespace quant {
namespace {

int line_of(const YAML::Node& node) { return node.Mark().line >= 0 ? node.Mark().line + 1 : 0; }

std::string at(const std::string& file, const YAML::Node& node) {
  const int line = line_of(node);
  return file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": ";
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

Status scalar(const std::string& file, const YAML::Node& node, const std::string& what, std::string* out) {
  if (!node.IsScalar()) return invalid_argument(at(file, node) + what + " must be a string");
  *out = node.Scalar();
  return Status::Ok();
}

Status number(const std::string& file, const YAML::Node& node, const std::string& what, double* out) {
  if (!node) return invalid_argument(what + ": missing");
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, *out)) {
    return invalid_argument(at(file, node) + what + " must be a number, got " +
                            (node.IsScalar() ? quoted(node.Scalar()) : std::string("a list or mapping")));
  }
  return Status::Ok();
}

Status read_tensor(const std::string& file, const std::string& name, const YAML::Node& node, TensorEntry* out) {
  const std::string what = "quantization.tensors." + quoted(name);
  if (!node.IsMap()) return invalid_argument(at(file, node) + what + " must be a mapping {scale, zero_point}");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (key != "scale" && key != "zero_point" && key != "min" && key != "max") {
      return invalid_argument(at(file, kv.first) + what + ": unknown key " + quoted(key) +
                              " (known: scale, zero_point, min, max)");
    }
  }
  out->line = line_of(node);
  if (!node["scale"]) return invalid_argument(at(file, node) + what + ": missing 'scale' (a float > 0)");
  if (!node["zero_point"]) {
    return invalid_argument(at(file, node) + what + ": missing 'zero_point' (an integer in [0, 255])");
  }
  double scale = 0;
  WINFER_RETURN_IF_ERROR(number(file, node["scale"], what + ".scale", &scale));
  if (!std::isfinite(scale) || !(scale > 0) || !(static_cast<float>(scale) > 0)) {
    return invalid_argument(at(file, node["scale"]) + what + ".scale is " + node["scale"].Scalar() +
                            "; expected a finite number > 0");
  }
  int64_t zero = 0;
  if (!node["zero_point"].IsScalar() || !YAML::convert<int64_t>::decode(node["zero_point"], zero)) {
    return invalid_argument(at(file, node["zero_point"]) + what + ".zero_point must be an integer in [0, 255]");
  }
  if (zero < kActivationMin || zero > kActivationMax) {
    return invalid_argument(at(file, node["zero_point"]) + what + ".zero_point is " + std::to_string(zero) +
                            "; expected an integer in [0, 255] (u8 activations)");
  }
  out->quant.scale = static_cast<float>(scale);
  out->quant.zero_point = static_cast<int>(zero);
  double v = 0;
  if (node["min"]) {
    WINFER_RETURN_IF_ERROR(number(file, node["min"], what + ".min", &v));
    out->min = static_cast<float>(v);
  }
  if (node["max"]) {
    WINFER_RETURN_IF_ERROR(number(file, node["max"], what + ".max", &v));
    out->max = static_cast<float>(v);
  }
  return Status::Ok();
}

Status read_layer(const std::string& file, const std::string& name, const YAML::Node& node, LayerPrecision* out) {
  const std::string what = "quantization.layers." + quoted(name);
  if (!node.IsMap()) return invalid_argument(at(file, node) + what + " must be a mapping {precision, reason}");
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (key != "precision" && key != "reason") {
      return invalid_argument(at(file, kv.first) + what + ": unknown key " + quoted(key) +
                              " (known: precision, reason)");
    }
  }
  out->line = line_of(node);
  if (!node["precision"]) return invalid_argument(at(file, node) + what + ": missing 'precision' (int8 or fp32)");
  std::string precision;
  WINFER_RETURN_IF_ERROR(scalar(file, node["precision"], what + ".precision", &precision));
  if (precision != "int8" && precision != "fp32") {
    return invalid_argument(at(file, node["precision"]) + what + ".precision is " + quoted(precision) +
                            "; expected int8 or fp32");
  }
  out->int8 = precision == "int8";
  if (node["reason"]) WINFER_RETURN_IF_ERROR(scalar(file, node["reason"], what + ".reason", &out->reason));
  return Status::Ok();
}

bool quantizable(const std::string& type) { return type == "conv2d" || type == "linear"; }

// ---- Weights -------------------------------------------------------------------------------

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class QuantizedParamSource : public NamedParamSource {
 public:
  QuantizedParamSource(std::shared_ptr<const SafeTensorsFile> file, std::map<std::string, float> input_scales,
                       std::shared_ptr<Int8WeightTable> keep)
      : file_(file), fp32_(file), input_scales_(std::move(input_scales)), keep_(std::move(keep)) {}

  bool has(const std::string& name) const override { return file_->find(name) != nullptr; }

  Status get(const std::string& name, const Shape& expected, Tensor* out) override {
    for (const char* suffix : {".weight", ".bias"}) {
      if (!ends_with(name, suffix)) continue;
      const std::string prefix = name.substr(0, name.size() - std::strlen(suffix));
      auto it = input_scales_.find(prefix);
      if (it == input_scales_.end()) break;
      return std::strcmp(suffix, ".weight") == 0 ? weight(prefix, expected, out)
                                                 : bias(prefix, it->second, expected, out);
    }
    return fp32_.get(name, expected, out);
  }

 private:
  std::string where(const std::string& name) const {
    return "tensor " + quoted(name) + " in " + quoted(file_->path()) + " (INT8 layer)";
  }

  Result<const SafeTensor*> typed(const std::string& name, const std::string& dtype, const Shape& shape,
                                  const std::string& meaning) const {
    const SafeTensor* t = file_->find(name);
    if (t == nullptr) {
      return not_found("weights file " + quoted(file_->path()) + " has no tensor " + quoted(name) + " (" + meaning +
                       ")");
    }
    if (t->dtype != dtype) {
      return invalid_argument(where(name) + " has dtype " + t->dtype + ", expected " + dtype + " (" + meaning + ")");
    }
    if (t->shape != shape) {
      return shape_mismatch(where(name) + " has shape " + t->shape.to_string() + ", expected " + shape.to_string() +
                            " (" + meaning + ")");
    }
    return t;
  }

  Result<std::vector<float>> weight_scales(const std::string& prefix, int64_t channels) const {
    const std::string name = prefix + ".weight_scale";
    const SafeTensor* t = file_->find(name);
    if (t == nullptr) {
      return not_found("weights file " + quoted(file_->path()) + " has no tensor " + quoted(name) +
                       " (the per-output-channel weight scales of an INT8 layer, F32 [" + std::to_string(channels) +
                       "])");
    }
    if (t->dtype != "F32") return invalid_argument(where(name) + " has dtype " + t->dtype + ", expected F32");
    if (t->shape != Shape{channels}) {
      return shape_mismatch(where(name) + " has shape " + t->shape.to_string() + " (" +
                            std::to_string(t->shape.numel()) + " scales), expected [" + std::to_string(channels) +
                            "]: one scale per output channel");
    }
    std::vector<float> scales(static_cast<size_t>(channels));
    std::memcpy(scales.data(), t->data, scales.size() * sizeof(float));
    for (size_t o = 0; o < scales.size(); ++o) {
      if (!std::isfinite(scales[o]) || !(scales[o] > 0)) {
        return invalid_argument(where(name) + ": scale of output channel " + std::to_string(o) + " is " +
                                std::to_string(scales[o]) + "; expected a finite number > 0");
      }
    }
    return scales;
  }

  Status weight(const std::string& prefix, const Shape& expected, Tensor* out) {
    const std::string name = prefix + ".weight";
    WINFER_ASSIGN_OR_RETURN(const SafeTensor* t, typed(name, "I8", expected, "s8 weights"));
    const int64_t channels = expected[0];
    WINFER_ASSIGN_OR_RETURN(std::vector<float> scales, weight_scales(prefix, channels));
    const int64_t per = expected.numel() / channels;
    const auto* q = static_cast<const int8_t*>(t->data);
    if (keep_ != nullptr) {
      // For the INT8 kernels: the s8 copy; the float32 tensor stays untouched (no pages) unless
      // the layer falls back to simulated (lower_int8_layers fills it then).
      Int8LayerWeights& raw = (*keep_)[prefix];
      raw.weight.assign(q, q + expected.numel());
      raw.weight_scale = scales;
      *out = Tensor::allocate_untouched(expected);
      return Status::Ok();
    }
    *out = Tensor::allocate(expected);
    for (int64_t o = 0; o < channels; ++o) {
      for (int64_t i = 0; i < per; ++i) out->data()[o * per + i] = scales[o] * static_cast<float>(q[o * per + i]);
    }
    return Status::Ok();
  }

  Status bias(const std::string& prefix, float input_scale, const Shape& expected, Tensor* out) {
    const std::string name = prefix + ".bias";
    WINFER_ASSIGN_OR_RETURN(const SafeTensor* t,
                            typed(name, "I32", expected, "s32 bias at input scale x weight scale"));
    WINFER_ASSIGN_OR_RETURN(std::vector<float> scales, weight_scales(prefix, expected[0]));
    std::vector<int32_t> q(static_cast<size_t>(expected[0]));
    std::memcpy(q.data(), t->data, q.size() * sizeof(int32_t));
    if (keep_ != nullptr) (*keep_)[prefix].bias = q;
    *out = Tensor::allocate(expected);
    for (size_t o = 0; o < q.size(); ++o) {
      out->data()[o] = static_cast<float>(double(q[o]) * double(input_scale) * double(scales[o]));
    }
    return Status::Ok();
  }

  std::shared_ptr<const SafeTensorsFile> file_;
  SafeTensorsParamSource fp32_;
  std::map<std::string, float> input_scales_;  // INT8 layers' parameter prefixes -> their input's scale
  std::shared_ptr<Int8WeightTable> keep_;      // where the raw INT8 parameters go, or null
};

// ---- Simulated INT8 layers ------------------------------------------------------------------

constexpr size_t kAlign = 64;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

class SimulatedInt8Kernel : public Kernel {
 public:
  SimulatedInt8Kernel(std::unique_ptr<Kernel> inner, std::vector<TensorQuant> in_q, TensorQuant out_q,
                      std::vector<Shape> inputs)
      : inner_(std::move(inner)), in_q_(std::move(in_q)), out_q_(out_q), inputs_(std::move(inputs)) {
    inner_workspace_ = aligned(inner_->workspace_bytes());
    size_t offset = inner_workspace_;
    for (const Shape& s : inputs_) {
      offsets_.push_back(offset);
      offset += aligned(static_cast<size_t>(s.numel()) * sizeof(float));
    }
    workspace_ = offset;
  }
  size_t workspace_bytes() const override { return workspace_; }
  size_t owned_weight_bytes() const override { return inner_->owned_weight_bytes(); }
  void for_each_owned_weight(const std::function<void(Tensor&)>& f) override { inner_->for_each_owned_weight(f); }
  size_t shared_weight_bytes() const override { return inner_->shared_weight_bytes(); }
  int in_place_input() const override { return inner_->in_place_input(); }
  std::string describe() const override {
    return "simulated int8 (u8 in, " + inner_->describe() + " on dequantized s8 weights, u8 out)";
  }
  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs, void* workspace,
           int threads) const override {
    char* base = static_cast<char*>(workspace);
    std::vector<Tensor> views;
    views.reserve(inputs.size());
    std::vector<const Tensor*> rounded;
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto* buffer = reinterpret_cast<float*>(base + offsets_[i]);
      fake_quantize(inputs[i]->data(), buffer, inputs[i]->numel(), in_q_[i]);
      views.push_back(Tensor::view(buffer, inputs[i]->shape(), inputs[i]->layout()));
    }
    for (const Tensor& v : views) rounded.push_back(&v);
    inner_->run(rounded, outputs, inner_workspace_ > 0 ? workspace : nullptr, threads);
    for (Tensor* out : outputs) fake_quantize(out->data(), out->numel(), out_q_);
  }

 private:
  std::unique_ptr<Kernel> inner_;
  std::vector<TensorQuant> in_q_;
  TensorQuant out_q_;
  std::vector<Shape> inputs_;
  std::vector<size_t> offsets_;
  size_t inner_workspace_ = 0, workspace_ = 0;
};

class SimulatedInt8Op : public Op {
 public:
  SimulatedInt8Op(std::unique_ptr<Op> inner, std::vector<TensorQuant> in_q, TensorQuant out_q)
      : inner_(std::move(inner)), in_q_(std::move(in_q)), out_q_(out_q) {
    record_fused_of(*inner_);
  }
  // Not the inner op's type: backends that map op types to kernels (CUDA) must not take the
  // wrapper for the op it wraps.
  const char* type() const override { return "simulated_int8"; }
  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    return inner_->infer_shapes(inputs, outputs);
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override {
    // The place where real INT8 kernels will be chosen per layer; until then, the FP32 kernel
    // between roundings to the u8 grids.
    WINFER_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> inner, inner_->compile(inputs, outputs, options));
    return std::unique_ptr<Kernel>(new SimulatedInt8Kernel(std::move(inner), in_q_, out_q_, inputs));
  }
  void pack_weights_at_load(const std::vector<Shape>& inputs, const ConvAlgorithm& conv) override {
    inner_->pack_weights_at_load(inputs, conv);
  }
  const ConvCapability* conv() const override { return inner_->conv(); }
  int64_t flops(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) const override {
    return inner_->flops(inputs, outputs);
  }
  int64_t param_count() const override { return inner_->param_count(); }
  size_t weight_bytes() const override { return inner_->weight_bytes(); }

 private:
  std::unique_ptr<Op> inner_;
  std::vector<TensorQuant> in_q_;
  TensorQuant out_q_;
};

}  // namespace

Status parse_quantization(const YAML::Node& node, const std::string& file, ModelQuantization* out) {
  if (!node.IsMap()) return invalid_argument(at(file, node) + "'quantization' must be a mapping");
  static const std::set<std::string> kKeys = {"activations", "weights", "method", "calibration", "tensors", "layers"};
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (!kKeys.count(key)) {
      return invalid_argument(at(file, kv.first) + "unknown key 'quantization." + key +
                              "' (known: activations, weights, method, calibration, tensors, layers)");
    }
  }
  const std::pair<const char*, const char*> schemes[] = {{"activations", kActivationScheme},
                                                         {"weights", kWeightScheme}};
  for (const auto& [key, expected] : schemes) {
    if (!node[key]) {
      return invalid_argument(at(file, node) + "missing 'quantization." + key + ": " + expected + "'");
    }
    std::string value;
    WINFER_RETURN_IF_ERROR(scalar(file, node[key], std::string("quantization.") + key, &value));
    if (value != expected) {
      return invalid_argument(at(file, node[key]) + "quantization." + key + " is " + quoted(value) + "; expected " +
                              expected + " (the only scheme winfer runs)");
    }
  }
  if (node["method"]) WINFER_RETURN_IF_ERROR(scalar(file, node["method"], "quantization.method", &out->method));
  if (node["calibration"]) {
    WINFER_RETURN_IF_ERROR(scalar(file, node["calibration"], "quantization.calibration", &out->calibration));
  }
  for (const char* key : {"tensors", "layers"}) {
    if (!node[key] || !node[key].IsMap()) {
      return invalid_argument(at(file, node[key] ? node[key] : node) + "'quantization." + key +
                              "' must be a mapping by " + (std::strcmp(key, "tensors") == 0 ? "tensor" : "layer") +
                              " name");
    }
  }
  for (const auto& kv : node["tensors"]) {
    TensorEntry entry;
    WINFER_RETURN_IF_ERROR(read_tensor(file, kv.first.Scalar(), kv.second, &entry));
    if (!out->tensors.emplace(kv.first.Scalar(), entry).second) {
      return invalid_argument(at(file, kv.first) + "quantization.tensors: " + quoted(kv.first.Scalar()) +
                              " is given twice");
    }
  }
  for (const auto& kv : node["layers"]) {
    LayerPrecision layer;
    WINFER_RETURN_IF_ERROR(read_layer(file, kv.first.Scalar(), kv.second, &layer));
    if (!out->layers.emplace(kv.first.Scalar(), layer).second) {
      return invalid_argument(at(file, kv.first) + "quantization.layers: " + quoted(kv.first.Scalar()) +
                              " is given twice");
    }
  }
  return Status::Ok();
}

Status check_quantization(const Graph& graph, const ModelQuantization& q, const std::string& file) {
  std::map<std::string, const GraphNode*> nodes;
  for (const GraphNode& node : graph.nodes) nodes[node.name] = &node;
  for (const auto& [name, layer] : q.layers) {
    auto it = nodes.find(name);
    const std::string where = file + (layer.line > 0 ? ":" + std::to_string(layer.line) : std::string()) +
                              ": quantization.layers." + quoted(name);
    if (it == nodes.end()) return invalid_argument(where + ": the model has no layer " + quoted(name));
    if (!quantizable(it->second->type)) {
      return invalid_argument(where + ": layer " + quoted(name) + " is a " + it->second->type +
                              "; only conv2d and linear layers have a precision");
    }
  }
  for (const GraphNode& node : graph.nodes) {
    if (!quantizable(node.type)) continue;
    if (!q.layers.count(node.name)) {
      return invalid_argument(node.context(file) +
                              ": not listed under quantization.layers; give its precision (int8 "
                              "or fp32)");
    }
    if (!q.int8(node.name)) continue;
    for (int consumer : graph.tensors[node.outputs[0]].consumers) {
      if (graph.nodes[consumer].type != "batchnorm2d") continue;
      return invalid_argument(node.context(file) + ": INT8 layer is followed by batch norm '" +
                              graph.nodes[consumer].name +
                              "'; its s8 weights must have the batch norm folded in (winfer quantize folds it)");
    }
    const std::string& input = graph.tensors[node.inputs[0]].name;
    if (!q.tensors.count(input)) {
      return invalid_argument(node.context(file) + ": INT8 layer reads tensor " + quoted(input) +
                              ", which has no scale under quantization.tensors (missing {scale, zero_point})");
    }
  }
  return Status::Ok();
}

std::unique_ptr<NamedParamSource> make_quantized_param_source(std::shared_ptr<const SafeTensorsFile> file,
                                                              const Graph& graph, const ModelQuantization& q,
                                                              std::shared_ptr<Int8WeightTable> keep) {
  std::map<std::string, float> input_scales;
  for (const GraphNode& node : graph.nodes) {
    if (!q.int8(node.name)) continue;
    input_scales[node.param_prefix] = q.tensors.at(graph.tensors[node.inputs[0]].name).quant.scale;
  }
  return std::make_unique<QuantizedParamSource>(std::move(file), std::move(input_scales), std::move(keep));
}

namespace {

// The u8 grids of an INT8 node's inputs and output; errors name the node and the tensor.
Status node_grids(const Graph& graph, const GraphNode& node, const ModelQuantization& q, const std::string& file,
                  std::vector<TensorQuant>* in_q, TensorQuant* out_q) {
  auto grid_of = [&](int t, const char* role, TensorQuant* out) -> Status {
    const std::string& name = graph.tensors[t].name;
    auto it = q.tensors.find(name);
    if (it == q.tensors.end()) {
      return invalid_argument(node.context(file) + ": INT8 layer's " + role + " " + quoted(name) +
                              " has no scale under quantization.tensors (missing {scale, zero_point})");
    }
    *out = it->second.quant;
    return Status::Ok();
  };
  for (int t : node.inputs) {
    in_q->emplace_back();
    WINFER_RETURN_IF_ERROR(grid_of(t, "input", &in_q->back()));
  }
  if (node.outputs.size() != 1) return internal_error(node.context(file) + ": an INT8 layer has one output");
  return grid_of(node.outputs[0], "output", out_q);
}

// The float32 weights of an INT8 layer that falls back to simulated, from its s8 copy: the
// param source left them untouched (Tensor::allocate_untouched) for the INT8 kernels.
void fill_float_weights(const Op& op, const Int8LayerWeights& raw) {
  Tensor weight;  // shares the op's storage
  if (const auto* conv = dynamic_cast<const Conv2dOp*>(&op)) {
    auto oihw = conv->weight_oihw("simulated int8");
    if (oihw.ok()) weight = oihw.value();
  } else if (const auto* linear = dynamic_cast<const LinearOp*>(&op)) {
    weight = linear->weight();
  }
  if (weight.empty() || static_cast<size_t>(weight.numel()) != raw.weight.size()) return;
  const size_t per = raw.weight.size() / raw.weight_scale.size();
  for (size_t i = 0; i < raw.weight.size(); ++i) {
    weight.data()[i] = raw.weight_scale[i / per] * static_cast<float>(raw.weight[i]);
  }
}

// The INT8 op of a conv2d/linear node, or kUnsupported saying why its kernels cannot run it.
Result<std::unique_ptr<Op>> real_int8_op(const Graph& graph, const GraphNode& node, const Int8LayerWeights& weights,
                                         const std::vector<TensorQuant>& in_q, const TensorQuant& out_q) {
  Int8LayerQuant quant;
  quant.input = in_q[0];
  quant.output = out_q;
  if (in_q.size() > 1) quant.residual = in_q[1];
  if (const auto* conv = dynamic_cast<const Conv2dOp*>(node.op.get())) {
    return Conv2dInt8Op::from(*conv, graph.tensors[node.inputs[0]].shape, weights, quant);
  }
  if (const auto* linear = dynamic_cast<const LinearOp*>(node.op.get()))
    return LinearInt8Op::from(*linear, weights, quant);
  return unsupported(std::string("no INT8 kernel for a ") + node.op->type());
}

// A node inserted by the lowering (quantize or dequantize), to run just before node `before`.
struct Insertion {
  GraphNode node;
  int before = 0;
};

// u8 tensors between the real INT8 nodes: each float32 tensor such a node reads or writes gets a
// u8 twin ("name#u8") that the INT8 nodes use instead; a quantize node fills the twin of a
// tensor that a float32 layer (or the user) writes, a dequantize node fills a tensor that an INT8
// layer writes and a float32 layer (or the user) reads. Each runs just before the first node that
// needs it, so that neither copy is alive longer than it must be.
void insert_u8_tensors(Graph& graph, const std::set<int>& real, const ModelQuantization& q) {
  std::map<int, int> twin;
  auto twin_of = [&graph, &twin](int t) {
    auto it = twin.find(t);
    if (it != twin.end()) return it->second;
    const int u = static_cast<int>(graph.tensors.size());
    GraphTensor tensor;
    tensor.name = graph.tensors[t].name + "#u8";
    tensor.shape = graph.tensors[t].shape;
    tensor.dtype = DType::kUInt8;
    graph.tensors.push_back(tensor);
    twin[t] = u;
    return u;
  };
  for (int n : real) {
    for (int& t : graph.nodes[n].inputs) t = twin_of(t);
    for (int& t : graph.nodes[n].outputs) t = twin_of(t);
  }
  graph.link();
  const int count = static_cast<int>(graph.nodes.size());
  std::vector<Insertion> inserts;
  for (const auto& [t, u] : twin) {
    const GraphTensor& fp32 = graph.tensors[t];
    const GraphTensor& u8 = graph.tensors[u];
    const TensorQuant grid = q.tensors.at(fp32.name).quant;
    const bool is_output = std::find(graph.outputs.begin(), graph.outputs.end(), t) != graph.outputs.end();
    Insertion ins;
    if (u8.producer < 0) {
      ins.node.name = fp32.name + "#quantize";
      ins.node.type = "quantize";
      ins.node.op = std::make_unique<QuantizeOp>(grid);
      ins.node.inputs = {t};
      ins.node.outputs = {u};
      ins.before = *std::min_element(u8.consumers.begin(), u8.consumers.end());
    } else if (!fp32.consumers.empty() || is_output) {
      ins.node.name = fp32.name + "#dequantize";
      ins.node.type = "dequantize";
      ins.node.op = std::make_unique<DequantizeOp>(grid);
      ins.node.inputs = {u};
      ins.node.outputs = {t};
      ins.before =
          fp32.consumers.empty() ? u8.producer + 1 : *std::min_element(fp32.consumers.begin(), fp32.consumers.end());
    } else {
      continue;
    }
    inserts.push_back(std::move(ins));
  }
  std::stable_sort(inserts.begin(), inserts.end(),
                   [](const Insertion& a, const Insertion& b) { return a.before < b.before; });
  std::vector<GraphNode> nodes;
  nodes.reserve(graph.nodes.size() + inserts.size());
  size_t next = 0;
  for (int n = 0; n <= count; ++n) {
    for (; next < inserts.size() && inserts[next].before == n; ++next) nodes.push_back(std::move(inserts[next].node));
    if (n < count) nodes.push_back(std::move(graph.nodes[n]));
  }
  graph.nodes = std::move(nodes);
  graph.link();
}

}  // namespace

Status lower_int8_layers(Graph& graph, const ModelQuantization& q, Int8WeightTable* weights, bool simulate,
                         const std::string& file, Int8Lowering* report) {
  std::set<int> real;
  // Each layer's s8 copy is dropped once the last layer reading it is lowered (packed or filled
  // into float32), so that the copies and the packed weights are never all alive at once.
  std::map<std::string, int> readers;
  for (const GraphNode& node : graph.nodes) readers[node.param_prefix] += q.int8(node.name);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    GraphNode& node = graph.nodes[n];
    if (!q.int8(node.name)) continue;
    std::vector<TensorQuant> in_q;
    TensorQuant out_q;
    WINFER_RETURN_IF_ERROR(node_grids(graph, node, q, file, &in_q, &out_q));
    std::string why =
        simulate ? "LoadOptions::int8_mode = kSimulated" : "its weights are not a quantized weights file's";
    const auto raw = weights != nullptr ? weights->find(node.param_prefix) : Int8WeightTable::iterator();
    const bool have_raw = weights != nullptr && raw != weights->end();
    bool lowered = false;
    if (!simulate && have_raw) {
      auto op = real_int8_op(graph, node, raw->second, in_q, out_q);
      if (op.ok()) {
        node.op = std::move(op.value());
        real.insert(static_cast<int>(n));
        lowered = true;
      } else if (op.status().code() != ErrorCode::kUnsupported) {
        return Status(op.status()).with_context(node.context(file));
      } else {
        why = op.status().message();
      }
    }
    if (!lowered) {
      if (have_raw) fill_float_weights(*node.op, raw->second);
      node.op = std::make_unique<SimulatedInt8Op>(std::move(node.op), std::move(in_q), out_q);
      report->simulated.push_back(node.name + " (" + why + ")");
    }
    if (have_raw && --readers[node.param_prefix] == 0) weights->erase(raw);
  }
  report->real = static_cast<int>(real.size());
  if (!real.empty()) insert_u8_tensors(graph, real, q);
  return Status::Ok();
}

std::string precision_of(const Op& op) {
  if (dynamic_cast<const SimulatedInt8Op*>(&op) != nullptr) return "int8 (simulated)";
  if (dynamic_cast<const Conv2dInt8Op*>(&op) != nullptr || dynamic_cast<const LinearInt8Op*>(&op) != nullptr) {
    return "int8";
  }
  return "";
}

}  // namespace quant
}  // namespace winfer
