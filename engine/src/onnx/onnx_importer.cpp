#include "engine/src/onnx/onnx_importer.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "engine/src/op_registry.h"

namespace winfer::onnx_import {
namespace {

// Symbolic input dims get these values until a session chooses its own shape: one image of
// ImageNet's 224x224. Only the folding of shape computations sees them, and what it folds to
// (flatten, channel shuffle, split) does not depend on them.
constexpr int64_t kDefaultBatch = 1, kDefaultSide = 224;

// Layer names may not hold ':' (it separates a layer from its output index) or control bytes.
std::string clean_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    out += (c == ':' || u < 0x20 || u == 0x7f) ? '_' : c;
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& item : items) s += (s.empty() ? "" : ", ") + item;
  return s;
}

}  // namespace

// ---- the parameter source ---------------------------------------------------------------

void OnnxParamSource::add_initializer(const std::string& name, onnx::TensorProto* tensor, Shape shape,
                                      std::string what) {
  Entry& e = entries_[name];
  e.tensor = tensor;
  e.shape = std::move(shape);
  e.what = std::move(what);
  ++uses_left_[tensor];
  order_.emplace_back(name, e.shape);
}

void OnnxParamSource::add_computed(const std::string& name, Shape shape, std::vector<float> values) {
  Entry& e = entries_[name];
  e.values = std::move(values);
  e.shape = std::move(shape);
  e.what = "tensor '" + name + "' (computed from the file's)";
  order_.emplace_back(name, e.shape);
}

Status OnnxParamSource::get(const std::string& name, const Shape& expected, Tensor* out) {
  auto it = entries_.find(name);
  if (it == entries_.end()) return not_found(file_->path() + ": the imported model has no parameter '" + name + "'");
  Entry& e = it->second;
  if (e.shape != expected) {
    return shape_mismatch(file_->path() + ": " + e.what + " has shape " + e.shape.to_string() + ", expected " +
                          expected.to_string());
  }
  if (e.tensor != nullptr) WINFER_RETURN_IF_ERROR(file_->check_floats(*e.tensor, e.what, expected.numel()));
  if (e.tensor == nullptr) {
    *out = Tensor::allocate(expected);
    std::copy(e.values.begin(), e.values.end(), out->data());
    std::vector<float>().swap(e.values);  // read once: held by the layer from now on
    return Status::Ok();
  }
  // read_floats writes every element (check_floats above: the initializer holds exactly that many).
  *out = allocate_weight(expected);
  WINFER_RETURN_IF_ERROR(file_->read_floats(*e.tensor, e.what, out->data(), expected.numel()));
  // The initializer's last reader has it: free its bytes, so the weights are not held twice.
  if (--uses_left_[e.tensor] == 0) {
    e.tensor->clear_raw_data();
    e.tensor->mutable_raw_data()->shrink_to_fit();
    e.tensor->clear_float_data();
  }
  return Status::Ok();
}

// ---- the importer -------------------------------------------------------------------------

Importer::Importer(std::unique_ptr<OnnxFile> file) : params_(new OnnxParamSource(std::move(file))) {
  add_shape_ops(converters_);
  add_layer_ops(converters_);
}

Status Importer::unsupported_here(const std::string& message) const {
  return unsupported(file().path() + ": node '" + node_->name() + "' (" + node_->op_type() + ", opset " +
                     std::to_string(opset()) + "): " + message);
}

Status Importer::invalid_here(const std::string& message) const {
  return invalid_argument(file().path() + ": node '" + node_->name() + "' (" + node_->op_type() + ", opset " +
                          std::to_string(opset()) + "): " + message);
}

int Importer::input_count() const {
  int n = node_->input_size();
  while (n > 0 && node_->input(n - 1).empty()) --n;
  return n;
}

bool Importer::all_inputs_constant() const {
  for (int i = 0; i < node_->input_size(); ++i) {
    if (node_->input(i).empty()) continue;
    auto it = values_.find(node_->input(i));
    if (it == values_.end()) return false;
    if (it->second.kind != Value::Kind::kConstant && it->second.kind != Value::Kind::kInitializer) return false;
  }
  return true;
}

bool Importer::has_input(int i) const { return i < node_->input_size() && !node_->input(i).empty(); }

Result<const Value*> Importer::input(int i) {
  if (!has_input(i)) return invalid_here("input " + std::to_string(i) + " is missing");
  auto it = values_.find(node_->input(i));
  if (it == values_.end()) return internal_error("ONNX value '" + node_->input(i) + "' was not converted");
  return &it->second;
}

Result<const Value*> Importer::data_input(int i, bool padded_ok) {
  WINFER_ASSIGN_OR_RETURN(const Value* v, input(i));
  if (v->kind == Value::Kind::kData || (padded_ok && v->kind == Value::Kind::kPadded)) return v;
  if (v->kind == Value::Kind::kPadded) {
    return unsupported_here(
        "input '" + node_->input(i) +
        "' is a Pad; winfer imports a zero Pad of H and W only right before a Conv or an AveragePool, as "
        "its padding");
  }
  if (v->kind == Value::Kind::kShuffle) {
    return unsupported_here("input '" + node_->input(i) +
                            "' is a 5-D reshape of a tensor; winfer imports it only as part of a channel shuffle "
                            "(Reshape to [N, g, C/g, H, W], Transpose perm [0, 2, 1, 3, 4], Reshape back)");
  }
  return unsupported_here("input '" + node_->input(i) +
                          "' is a constant (an initializer or folded); winfer imports this operator on activations "
                          "only");
}

Result<Constant> Importer::constant_input(int i, const std::string& what) {
  WINFER_ASSIGN_OR_RETURN(const Value* v, input(i));
  if (v->kind == Value::Kind::kConstant) return v->constant;
  if (v->kind == Value::Kind::kInitializer) {
    const onnx::TensorProto& t = *v->initializer;
    const std::string name = "initializer '" + t.name() + "' (" + what + ")";
    WINFER_ASSIGN_OR_RETURN(int64_t count, file().element_count(t, name));
    if (count > (int64_t(1) << 20)) {
      return unsupported_here(what + " is an initializer of " + std::to_string(count) +
                              " values; winfer folds constants of at most 2^20 values");
    }
    Constant c;
    c.dims.assign(t.dims().begin(), t.dims().end());
    if (t.data_type() == onnx::TensorProto::FLOAT || t.data_type() == onnx::TensorProto::DOUBLE) {
      c.floating = true;
      WINFER_ASSIGN_OR_RETURN(c.floats, file().read_doubles(t, name));
    } else {
      WINFER_ASSIGN_OR_RETURN(c.ints, file().read_ints(t, name));
    }
    return c;
  }
  return unsupported_here(what + " (input '" + node_->input(i) +
                          "') is computed from the activations at run time; winfer needs it to be a constant "
                          "(an initializer, a Constant, or a shape computation it can fold)");
}

Result<std::vector<int64_t>> Importer::ints_input(int i, const std::string& what) {
  WINFER_ASSIGN_OR_RETURN(Constant c, constant_input(i, what));
  if (c.floating) return invalid_here(what + " must be integers");
  return c.ints;
}

void Importer::set_output(int i, Value value) {
  if (i < node_->output_size() && !node_->output(i).empty()) values_[node_->output(i)] = std::move(value);
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

bool Importer::has_attr(const std::string& name) const { return find_attr(*node_, name) != nullptr; }

int64_t Importer::attr_int(const std::string& name, int64_t fallback) const {
  const onnx::AttributeProto* a = find_attr(*node_, name);
  return a ? a->i() : fallback;
}

double Importer::attr_float(const std::string& name, double fallback) const {
  const onnx::AttributeProto* a = find_attr(*node_, name);
  return a ? a->f() : fallback;
}

std::string Importer::attr_string(const std::string& name, const std::string& fallback) const {
  const onnx::AttributeProto* a = find_attr(*node_, name);
  return a ? a->s() : fallback;
}

std::vector<int64_t> Importer::attr_ints(const std::string& name, const std::vector<int64_t>& fallback) const {
  const onnx::AttributeProto* a = find_attr(*node_, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}

const onnx::TensorProto* Importer::attr_tensor(const std::string& name) const {
  const onnx::AttributeProto* a = find_attr(*node_, name);
  return a && a->has_t() ? &a->t() : nullptr;
}

Status Importer::check_attrs(const std::vector<std::string>& known) const {
  for (const onnx::AttributeProto& a : node_->attribute()) {
    if (std::find(known.begin(), known.end(), a.name()) == known.end()) {
      return unsupported_here("attribute '" + a.name() + "' is not supported (winfer reads: " + join(known) + ")");
    }
  }
  return Status::Ok();
}

std::string Importer::layer_name() const {
  for (int i = 0; i < node_->output_size(); ++i) {
    if (std::find(output_names_.begin(), output_names_.end(), node_->output(i)) != output_names_.end()) {
      return clean_name(node_->output(i));
    }
  }
  if (!node_->name().empty()) return clean_name(node_->name());
  return node_->op_type() + "_" + std::to_string(node_index_);
}

std::string Importer::unique_layer_name(std::string base) {
  if (base.empty()) base = "layer";
  int& count = layer_names_[base];
  if (++count == 1 && base != input_name_) return base;
  std::string name;
  do {
    name = base + "_" + std::to_string(++count);
  } while (layer_names_.count(name) || name == input_name_);
  layer_names_[name] = 1;
  return name;
}

std::string Importer::param_prefix(const std::string& layer_name, const std::string& weight_name) {
  const std::string suffix = ".weight";
  std::string prefix = layer_name;
  if (weight_name.size() > suffix.size() &&
      weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) == 0) {
    prefix = clean_name(weight_name.substr(0, weight_name.size() - suffix.size()));
  }
  if (param_prefixes_[prefix]++ > 0) prefix = layer_name + ".p" + std::to_string(param_prefixes_[prefix]);
  return prefix;
}

Result<Shape> Importer::initializer_shape(const Value& initializer, const std::string& what) {
  const onnx::TensorProto& t = *initializer.initializer;
  WINFER_RETURN_IF_ERROR(file().element_count(t, "initializer '" + t.name() + "' (" + what + ")").status());
  return Shape(std::vector<int64_t>(t.dims().begin(), t.dims().end()));
}

Status Importer::add_param(const std::string& name, const Value& initializer, const Shape& expected,
                           const std::string& what) {
  if (initializer.kind != Value::Kind::kInitializer) {
    return unsupported_here(what + " must be an initializer (a weight stored in the file)");
  }
  const onnx::TensorProto& t = *initializer.initializer;
  const std::string described = "initializer '" + t.name() + "' (" + what + ")";
  WINFER_ASSIGN_OR_RETURN(Shape shape, initializer_shape(initializer, what));
  if (t.data_type() != onnx::TensorProto::FLOAT) {
    return unsupported(file().path() + ": " + described + " is " + data_type_name(t.data_type()) +
                       "; winfer reads float32 (FLOAT) weights only");
  }
  if (shape.numel() != expected.numel()) {
    return invalid_here(described + " has shape " + shape.to_string() + ", expected " + expected.to_string());
  }
  params_->add_initializer(name, initializer.initializer, expected, described);
  return Status::Ok();
}

void Importer::add_computed_param(const std::string& name, const Shape& shape, std::vector<float> values) {
  params_->add_computed(name, shape, std::move(values));
}

Result<std::vector<float>> Importer::read_floats(const Value& initializer, const std::string& what) {
  if (initializer.kind != Value::Kind::kInitializer) {
    return unsupported_here(what + " must be an initializer (a weight stored in the file)");
  }
  const onnx::TensorProto& t = *initializer.initializer;
  const std::string described = "initializer '" + t.name() + "' (" + what + ")";
  WINFER_ASSIGN_OR_RETURN(int64_t count, file().element_count(t, described));
  WINFER_RETURN_IF_ERROR(file().check_floats(t, described, count));
  std::vector<float> values(static_cast<size_t>(count));
  WINFER_RETURN_IF_ERROR(file().read_floats(t, described, values.data(), count));
  return values;
}

Layer* Importer::producer_of(const std::string& tensor) {
  auto it = layer_of_tensor_.find(tensor);
  return it == layer_of_tensor_.end() ? nullptr : &layers_[it->second];
}

int Importer::consumers(const std::string& name) const {
  auto it = consumers_.find(name);
  return it == consumers_.end() ? 0 : it->second;
}

Status Importer::emit(Layer layer, const std::vector<std::string>& inputs, int outputs) {
  if (layer.name.empty()) layer.name = new_layer_name();
  layer.inputs = inputs;
  Attrs attrs;
  for (const auto& kv : layer.attrs) attrs.set(kv.first, kv.second);
  const OpEntry* entry = op_registry().find_entry(layer.op);
  if (entry == nullptr) return internal_error("the ONNX importer emits unknown op '" + layer.op + "'");
  auto op = entry->create(attrs);
  if (!op.ok()) return invalid_here("as winfer's " + layer.op + ": " + op.status().message());
  std::vector<Shape> in_shapes;
  for (const std::string& t : inputs) in_shapes.push_back(tensor_shapes_.at(t));
  std::vector<Shape> out_shapes;
  Status s = op.value()->infer_shapes(in_shapes, &out_shapes);
  if (!s.ok()) {
    std::string shapes;
    for (const Shape& sh : in_shapes) shapes += (shapes.empty() ? "" : ", ") + sh.to_string();
    return Status(s.code(), file().path() + ": node '" + node_->name() + "' (" + node_->op_type() + ", opset " +
                                std::to_string(opset()) + ") as winfer's " + layer.op + " on " + shapes + ": " +
                                s.message());
  }
  const size_t index = layers_.size();
  for (int i = 0; i < outputs; ++i) {
    Value v;
    v.kind = Value::Kind::kData;
    v.tensor = outputs == 1 ? layer.name : layer.name + ":" + std::to_string(i);
    v.shape = out_shapes[i];
    layer_of_tensor_[v.tensor] = index;
    tensor_shapes_[v.tensor] = v.shape;
    set_output(i, std::move(v));
  }
  layers_.push_back(std::move(layer));
  return Status::Ok();
}

Status Importer::read_inputs_and_outputs() {
  const onnx::GraphProto& g = file().graph();
  for (onnx::TensorProto& t : *params_->file().mutable_graph()->mutable_initializer()) {
    initializers_[t.name()] = &t;
    Value v;
    v.kind = Value::Kind::kInitializer;
    v.initializer = &t;
    values_[t.name()] = v;
  }
  for (const onnx::SparseTensorProto& t : g.sparse_initializer()) {
    return unsupported(file().path() + ": sparse initializer '" + t.values().name() +
                       "': winfer reads dense float32 weights only");
  }
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (!initializers_.count(in.name())) inputs.push_back(&in);  // old exports list weights as inputs too
  }
  if (inputs.size() != 1) {
    std::vector<std::string> names;
    for (const auto* in : inputs) names.push_back("'" + in->name() + "'");
    return unsupported(file().path() + ": the graph has " + std::to_string(inputs.size()) + " inputs" +
                       (names.empty() ? std::string() : " (" + join(names) + ")") +
                       "; winfer runs models with one input image tensor");
  }
  const onnx::ValueInfoProto& in = *inputs[0];
  input_name_ = clean_name(in.name());
  const std::string what = file().path() + ": graph input '" + in.name() + "'";
  if (!in.type().has_tensor_type()) return unsupported(what + " is not a tensor");
  const onnx::TypeProto_Tensor& type = in.type().tensor_type();
  if (type.elem_type() != onnx::TensorProto::FLOAT) {
    return unsupported(what + " is " + data_type_name(type.elem_type()) + "; winfer's input is float32 (FLOAT)");
  }
  if (!type.has_shape()) return unsupported(what + " has no shape; export with a fixed rank (e.g. N, C, H, W)");
  const int rank = type.shape().dim_size();
  if (rank != 4 && rank != 2) {
    return unsupported(what + " has rank " + std::to_string(rank) + "; winfer's input is [N, C, H, W] or [N, F]");
  }
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) {
    const onnx::TensorShapeProto_Dimension& dim = type.shape().dim(d);
    const bool fixed = dim.has_dim_value() && dim.dim_value() > 0;
    if (dim.has_dim_value() && dim.dim_value() <= 0) {
      return invalid_argument(what + ": dim " + std::to_string(d) + " is " + std::to_string(dim.dim_value()));
    }
    if (!fixed && d == 1) {
      return unsupported(what + ": dim 1 (channels) is symbolic ('" + dim.dim_param() +
                         "'); winfer needs the channel count fixed in the file");
    }
    input_fixed_.push_back(fixed);
    dims.push_back(fixed ? dim.dim_value() : (d == 0 ? kDefaultBatch : kDefaultSide));
  }
  auto shape = Shape::make(dims);
  if (!shape.ok()) return Status(shape.status()).with_context(what);
  input_shape_ = shape.value();
  Value v;
  v.kind = Value::Kind::kData;
  v.tensor = input_name_;
  v.shape = input_shape_;
  values_[in.name()] = v;
  tensor_shapes_[input_name_] = input_shape_;
  layer_names_[input_name_] = 1;
  if (g.output_size() == 0) return invalid_argument(file().path() + ": the graph has no outputs");
  for (const onnx::ValueInfoProto& out : g.output()) output_names_.push_back(out.name());
  return Status::Ok();
}

// Nodes in an order where each comes after the producers of its inputs, only those the graph's
// outputs depend on. ONNX requires files to be sorted already; this also reports the two ways a
// graph can be broken: an input nothing produces, and a cycle.
Status Importer::order_nodes(std::vector<const onnx::NodeProto*>* order) {
  const onnx::GraphProto& g = file().graph();
  std::map<std::string, int> producer;
  for (int n = 0; n < g.node_size(); ++n) {
    for (const std::string& out : g.node(n).output()) {
      if (out.empty()) continue;
      if (producer.count(out) || values_.count(out)) {
        return invalid_argument(file().path() + ": value '" + out + "' is produced twice (by node '" +
                                g.node(n).name() + "' and before); ONNX graphs are in SSA form");
      }
      producer[out] = n;
    }
  }
  auto known = [&](const std::string& name) { return name.empty() || values_.count(name) || producer.count(name); };
  for (int n = 0; n < g.node_size(); ++n) {
    for (const std::string& in : g.node(n).input()) {
      if (!known(in)) {
        return invalid_argument(file().path() + ": node '" + g.node(n).name() + "' (" + g.node(n).op_type() +
                                ") reads '" + in + "', which no node produces and is not a graph input or initializer");
      }
    }
  }
  // Live nodes: what the outputs need, found backwards.
  std::vector<bool> live(g.node_size(), false);
  std::vector<int> stack;
  for (const std::string& out : output_names_) {
    if (producer.count(out)) {
      stack.push_back(producer[out]);
    } else if (!values_.count(out)) {
      return invalid_argument(file().path() + ": graph output '" + out + "' is produced by no node");
    }
  }
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (live[n]) continue;
    live[n] = true;
    for (const std::string& in : g.node(n).input()) {
      if (producer.count(in)) stack.push_back(producer[in]);
    }
  }
  // Kahn's algorithm over the live nodes, keeping file order among the ready ones.
  std::vector<int> waiting(g.node_size(), 0);
  std::map<std::string, std::vector<int>> readers;
  for (int n = 0; n < g.node_size(); ++n) {
    if (!live[n]) continue;
    std::set<std::string> seen;
    for (const std::string& in : g.node(n).input()) {
      if (!producer.count(in)) continue;
      ++consumers_[in];
      if (seen.insert(in).second) {
        ++waiting[n];
        readers[in].push_back(n);
      }
    }
  }
  std::set<int> ready;
  for (int n = 0; n < g.node_size(); ++n) {
    if (live[n] && waiting[n] == 0) ready.insert(n);
  }
  while (!ready.empty()) {
    const int n = *ready.begin();
    ready.erase(ready.begin());
    order->push_back(&g.node(n));
    for (const std::string& out : g.node(n).output()) {
      for (int r : readers[out]) {
        if (--waiting[r] == 0) ready.insert(r);
      }
    }
  }
  const size_t live_count = std::count(live.begin(), live.end(), true);
  if (order->size() != live_count) {
    std::vector<std::string> cycle;
    for (int n = 0; n < g.node_size() && cycle.size() < 8; ++n) {
      if (live[n] && waiting[n] > 0) cycle.push_back("'" + g.node(n).name() + "' (" + g.node(n).op_type() + ")");
    }
    return invalid_argument(file().path() + ": the graph has a cycle through the nodes " + join(cycle) +
                            "; an ONNX graph must be acyclic");
  }
  return Status::Ok();
}

Status Importer::convert(const onnx::NodeProto& node) {
  node_ = &node;
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    return unsupported_here("operator domain '" + node.domain() +
                            "' is not supported (winfer imports the default ONNX domain only)");
  }
  auto it = converters_.find(node.op_type());
  if (it == converters_.end()) {
    std::vector<std::string> known;
    for (const auto& kv : converters_) known.push_back(kv.first);
    return unsupported_here("operator " + node.op_type() + " is not supported; winfer imports: " + join(known));
  }
  return it->second(*this);
}

std::string Importer::write_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << "winfer/1";
  const std::string path = file().path();
  out << YAML::Key << "name" << YAML::Value << std::filesystem::path(path).stem().string();
  const onnx::ModelProto& m = params_->file().model();
  std::string producer = m.producer_name() + (m.producer_version().empty() ? "" : " " + m.producer_version());
  out << YAML::Key << "description" << YAML::Value
      << "imported from " + std::filesystem::path(path).filename().string() + " (ONNX IR " +
             std::to_string(m.ir_version()) + ", opset " + std::to_string(opset()) +
             (producer.empty() ? std::string() : ", written by " + producer) + ")";
  out << YAML::Key << "input" << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << input_name_;
  out << YAML::Key << "shape" << YAML::Value << YAML::Flow << input_shape_.dims();
  out << YAML::EndMap;
  out << YAML::Key << "outputs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const std::string& name : output_names_) out << values_.at(name).tensor;
  out << YAML::EndSeq;
  out << YAML::Key << "layers" << YAML::Value << YAML::BeginSeq;
  for (const Layer& layer : layers_) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << layer.name;
    out << YAML::Key << "op" << YAML::Value << layer.op;
    if (layer.inputs.size() == 1) {
      out << YAML::Key << "input" << YAML::Value << layer.inputs[0];
    } else {
      out << YAML::Key << "inputs" << YAML::Value << YAML::Flow << layer.inputs;
    }
    if (!layer.params.empty() && layer.params != layer.name)
      out << YAML::Key << "params" << YAML::Value << layer.params;
    for (const auto& kv : layer.attrs) {
      out << YAML::Key << kv.first << YAML::Value;
      if (kv.second.kind == AttrValue::Kind::kScalar) {
        out << kv.second.items[0];
      } else {
        out << YAML::Flow << kv.second.items;
      }
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

ModelDescription Importer::describe() const {
  ModelDescription d;
  d.name = std::filesystem::path(file().path()).stem().string();
  d.input_name = input_name_;
  d.input_shape = input_shape_.dims();
  for (const std::string& name : output_names_) d.outputs.push_back(values_.at(name).tensor);
  d.layers.reserve(layers_.size());
  for (const Layer& layer : layers_) {
    LayerDescription l;
    l.name = layer.name;
    l.op = layer.op;
    l.inputs = layer.inputs;
    // write_yaml() leaves out a prefix equal to the name; the loader reads either as the name.
    if (layer.params != layer.name) l.params = layer.params;
    l.attrs = layer.attrs;
    d.layers.push_back(std::move(l));
  }
  return d;
}

Result<ImportedModel> Importer::run(bool as_description) {
  WINFER_RETURN_IF_ERROR(read_inputs_and_outputs());
  std::vector<const onnx::NodeProto*> order;
  WINFER_RETURN_IF_ERROR(order_nodes(&order));
  for (size_t i = 0; i < order.size(); ++i) {
    node_index_ = static_cast<int>(i);
    WINFER_RETURN_IF_ERROR(convert(*order[i]));
  }
  for (const std::string& name : output_names_) {
    const Value& v = values_.at(name);
    if (v.kind != Value::Kind::kData) {
      return unsupported(file().path() + ": graph output '" + name +
                         "' is a constant or an unfinished reshape, not a computed tensor");
    }
    if (v.tensor == input_name_) {
      return unsupported(file().path() + ": graph output '" + name + "' is the graph input itself");
    }
  }
  if (layers_.empty()) return unsupported(file().path() + ": the graph computes nothing (no layers after import)");
  ImportedModel model;
  if (as_description) {
    model.description = std::make_unique<ModelDescription>(describe());
  } else {
    model.yaml = write_yaml();
  }
  model.input_dim_fixed = input_fixed_;
  model.params = std::move(params_);
  return model;
}

bool is_onnx_path(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".onnx";
}

Result<ImportedModel> import_onnx(const std::string& path, const std::string& confine_to, bool as_description) {
  WINFER_ASSIGN_OR_RETURN(std::unique_ptr<OnnxFile> file, OnnxFile::open(path, confine_to));
  return Importer(std::move(file)).run(as_description);
}

}  // namespace winfer::onnx_import
