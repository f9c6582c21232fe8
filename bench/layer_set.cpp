#include "bench/layer_set.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "engine/src/attrs.h"
#include "engine/src/core/file_io.h"
#include "engine/src/graph.h"
#include "engine/src/yaml_node_limit.h"
#include "layers/conv2d.h"
#include "winfer/model.h"

namespace fs = std::filesystem;

namespace winfer::bench {
namespace {

constexpr const char* kFormat = "winfer-layers/1";

std::string where(const std::string& path, const YAML::Node& node) {
  return path + ":" + std::to_string(node.Mark().line + 1);
}

// A layer set or model file, opened as every input file is (engine/src/core/file_io.h).
Result<std::string> read_text(const std::string& path) {
  return detail::read_input_file(path, {"layer set", uint64_t(16) << 20});
}

// The YAML tree of a layer set's text, its node count bounded first (yaml_node_limit.h).
Result<YAML::Node> load_yaml(const std::string& yaml_text, const std::string& path) {
  try {
    count_yaml_nodes(yaml_text);
    return YAML::Load(yaml_text);
  } catch (const TooManyYamlNodes& e) {
    return invalid_argument(path + ":" + std::to_string(e.line) + ": more than " + std::to_string(kMaxYamlNodes) +
                            " YAML values; not a layer set");
  } catch (const YAML::Exception& e) {
    return parse_error(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

Result<Activation> parse_activation(const std::string& text, const std::string& context) {
  if (text == "relu") return Activation::kRelu;
  if (text == "relu6") return Activation::kRelu6;
  if (text == "none") return Activation::kNone;
  return invalid_argument(context + ": activation must be relu, relu6 or none, got '" + text + "'");
}

// A YAML scalar or flat list as a conv2d attribute (the same getters as in model files).
Status to_attr(const YAML::Node& value, const std::string& key, const std::string& context, Attrs* attrs) {
  const int line = value.Mark().line + 1;
  if (value.IsScalar()) {
    attrs->set(key, AttrValue::scalar(value.Scalar(), line));
    return Status::Ok();
  }
  if (!value.IsSequence()) return invalid_argument(context + ": '" + key + "' must be a value or a flat list");
  std::vector<std::string> items;
  for (const YAML::Node& item : value) {
    if (!item.IsScalar()) return invalid_argument(context + ": '" + key + "' must be a flat list");
    items.push_back(item.Scalar());
  }
  attrs->set(key, AttrValue::list(std::move(items), line));
  return Status::Ok();
}

// One entry of `layers:`. Keys other than name/size/activation are conv2d attributes, parsed
// and validated by the conv2d layer itself so that a set means exactly what a model file would.
Result<BenchLayer> parse_layer(const YAML::Node& node, const LayerSet& set, Activation default_activation) {
  const std::string context = where(set.path, node);
  if (!node.IsMap()) return invalid_argument(context + ": a layer must be a mapping");
  if (!node["name"] || !node["name"].IsScalar()) return invalid_argument(context + ": layer without a 'name'");
  BenchLayer layer;
  layer.name = node["name"].Scalar();
  const std::string layer_context = context + ": layer '" + layer.name + "'";
  layer.activation = default_activation;

  Attrs attrs;
  std::vector<int64_t> size;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (key == "name") continue;
    if (key == "activation") {
      WINFER_ASSIGN_OR_RETURN(layer.activation, parse_activation(kv.second.Scalar(), layer_context));
      continue;
    }
    WINFER_RETURN_IF_ERROR(to_attr(kv.second, key, layer_context, &attrs));
  }
  // `size` is read through Attrs too, so it gets the same int-or-list rules and errors.
  WINFER_RETURN_IF_ERROR(Status(attrs.get_ints("size", &size, {1, 2})).with_context(layer_context));
  if (size.size() == 1) size.push_back(size[0]);
  WINFER_RETURN_IF_ERROR(Status(attrs.get_bool("bias", &layer.bias, true)).with_context(layer_context));
  auto op = create_conv2d(attrs);
  if (!op.ok()) return Status(op.status()).with_context(layer_context);
  const std::vector<std::string> unknown = attrs.unread_keys();
  if (!unknown.empty()) return invalid_argument(layer_context + ": unknown key '" + unknown[0] + "'");

  int64_t in_channels = 0;
  WINFER_RETURN_IF_ERROR(attrs.get_int("in_channels", &in_channels));
  auto input = Shape::make({set.batch, in_channels, size[0], size[1]});
  if (!input.ok()) return Status(input.status()).with_context(layer_context);
  std::vector<Shape> outputs;
  WINFER_RETURN_IF_ERROR(Status(op.value()->infer_shapes({input.value()}, &outputs)).with_context(layer_context));
  layer.params = static_cast<const Conv2dOp&>(*op.value()).params_for(input.value());
  return layer;
}

Result<int64_t> parse_batch(const YAML::Node& node, const std::string& path) {
  int64_t batch = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, batch) || batch < 1) {
    return invalid_argument(where(path, node) + ": 'batch' must be a positive integer");
  }
  return batch;
}

Status read_models(const YAML::Node& list, LayerSet* set) {
  if (!list.IsSequence()) return invalid_argument(where(set->path, list) + ": 'models' must be a list of model files");
  const fs::path folder = fs::path(set->path).parent_path();
  for (const YAML::Node& item : list) {
    if (!item.IsScalar()) return invalid_argument(where(set->path, item) + ": 'models' entries must be file paths");
    fs::path model = item.Scalar();
    if (model.is_relative()) model = folder / model;
    auto layers = conv_layers_of_model(model.lexically_normal().string());
    if (!layers.ok()) return Status(layers.status()).with_context(where(set->path, item));
    for (BenchLayer& l : layers.value()) set->layers.push_back(std::move(l));
  }
  return Status::Ok();
}

// The activation a fused network would give this convolution: relu/relu6 when the only
// reader of its output (or of the batch norm that reads it) is one. Used for models loaded
// without weights, where the fusion pass does not run.
Activation structural_activation(const Graph& g, const GraphNode& conv) {
  int tensor = conv.outputs[0];
  for (int step = 0; step < 2; ++step) {
    const std::vector<int>& readers = g.tensors[static_cast<size_t>(tensor)].consumers;
    if (readers.size() != 1) return Activation::kNone;
    const GraphNode& next = g.nodes[static_cast<size_t>(readers[0])];
    if (next.type == "relu") return Activation::kRelu;
    if (next.type == "relu6") return Activation::kRelu6;
    if (next.type != "batchnorm2d" || step == 1) return Activation::kNone;
    tensor = next.outputs[0];
  }
  return Activation::kNone;
}

std::string shape_key(const ConvParams& p) { return p.to_string(); }

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

const char* activation_key(Activation a) {
  switch (a) {
    case Activation::kRelu: return "relu";
    case Activation::kRelu6: return "relu6";
    case Activation::kNone: break;
  }
  return "none";
}

std::vector<BenchLayer> distinct_shapes(const std::vector<BenchLayer>& layers) {
  std::vector<BenchLayer> out;
  std::map<std::string, size_t> seen;
  for (const BenchLayer& l : layers) {
    auto [it, inserted] = seen.emplace(shape_key(l.params), out.size());
    if (inserted) {
      out.push_back(l);
    } else {
      out[it->second].count += l.count;
    }
  }
  return out;
}

Result<std::vector<BenchLayer>> conv_layers_of_model(const std::string& model_path, const std::string& prefix) {
  LoadOptions options;
  options.allow_missing_weights = true;  // shapes are all we need
  auto model = Model::load(model_path, options);
  if (!model.ok()) return model.status();
  const Model& m = *model.value();
  const Graph& g = m.graph();
  const std::string name_prefix = (prefix.empty() ? m.name() : prefix) + ":";
  std::vector<BenchLayer> layers;
  for (const GraphNode& node : g.nodes) {
    const auto* conv = dynamic_cast<const Conv2dOp*>(node.op.get());
    if (conv == nullptr) continue;
    BenchLayer layer;
    layer.name = name_prefix + node.name;
    layer.params = conv->params_for(g.tensors[static_cast<size_t>(node.inputs[0])].shape);
    if (m.structure_only()) {
      // Without weights nothing was fused. Batch norm, which every zoo convolution without its
      // own bias is followed by, folds into a bias, so a bias is the realistic epilogue.
      layer.activation = structural_activation(g, node);
      layer.bias = true;
    } else {
      layer.activation = conv->activation();
      layer.bias = !conv->bias().empty();
    }
    layers.push_back(std::move(layer));
  }
  if (layers.empty()) return invalid_argument(model_path + ": the model has no conv2d layer");
  return distinct_shapes(layers);
}

Result<LayerSet> parse_layer_set(const std::string& yaml_text, const std::string& path) {
  WINFER_ASSIGN_OR_RETURN(YAML::Node root, load_yaml(yaml_text, path));
  if (!root.IsMap()) return parse_error(path + ": a layer set must be a mapping");
  if (!root["format"] || root["format"].Scalar() != kFormat) {
    return parse_error(path + ": not a layer set (expected 'format: " + std::string(kFormat) + "')");
  }
  LayerSet set;
  set.path = path;
  set.name = root["name"] ? root["name"].Scalar() : fs::path(path).stem().string();
  if (root["description"]) set.description = root["description"].Scalar();
  if (root["batch"]) {
    WINFER_ASSIGN_OR_RETURN(set.batch, parse_batch(root["batch"], path));
  }
  Activation default_activation = Activation::kRelu;
  if (root["activation"]) {
    WINFER_ASSIGN_OR_RETURN(default_activation,
                            parse_activation(root["activation"].Scalar(), where(path, root["activation"])));
  }
  static const std::set<std::string> kKeys = {"format",     "name",   "description", "batch",
                                              "activation", "layers", "models"};
  for (const auto& kv : root) {
    if (!kKeys.count(kv.first.Scalar())) {
      return invalid_argument(where(path, kv.first) + ": unknown key '" + kv.first.Scalar() +
                              "' (known: format, name, description, batch, activation, layers, models)");
    }
  }
  if (root["layers"]) {
    if (!root["layers"].IsSequence())
      return invalid_argument(where(path, root["layers"]) + ": 'layers' must be a list");
    std::set<std::string> names;
    for (const YAML::Node& node : root["layers"]) {
      WINFER_ASSIGN_OR_RETURN(BenchLayer layer, parse_layer(node, set, default_activation));
      if (!names.insert(layer.name).second)
        return invalid_argument(where(path, node) + ": duplicate layer name '" + layer.name + "'");
      set.layers.push_back(std::move(layer));
    }
  }
  if (root["models"]) {
    WINFER_RETURN_IF_ERROR(read_models(root["models"], &set));
    set.layers = distinct_shapes(set.layers);  // shapes shared between the models count once
  }
  if (set.layers.empty()) return invalid_argument(path + ": the layer set has no layers");
  set_batch(&set, set.batch);
  return set;
}

std::vector<std::string> layer_set_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("WINFER_BENCH_LAYERS"); env != nullptr && *env != '\0') dirs.push_back(env);
  const std::string exe = executable_dir();
  if (!exe.empty()) dirs.push_back((fs::path(exe) / ".." / ".." / "bench" / "layers").lexically_normal().string());
#ifdef WINFER_BENCH_LAYER_DIR
  dirs.push_back(WINFER_BENCH_LAYER_DIR);
#endif
  return dirs;
}

std::vector<std::string> available_layer_sets() {
  std::set<std::string> names;
  for (const std::string& dir : layer_set_dirs()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".yaml") names.insert(entry.path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

Result<LayerSet> load_layer_set(const std::string& name_or_path) {
  std::string path = name_or_path;
  const bool looks_like_path =
      name_or_path.find('/') != std::string::npos || fs::path(name_or_path).extension() == ".yaml";
  if (!looks_like_path) {
    path.clear();
    for (const std::string& dir : layer_set_dirs()) {
      const fs::path candidate = fs::path(dir) / (name_or_path + ".yaml");
      if (fs::exists(candidate)) {
        path = candidate.string();
        break;
      }
    }
    if (path.empty()) {
      std::string known;
      for (const std::string& n : available_layer_sets()) known += (known.empty() ? "" : ", ") + n;
      return not_found("no layer set named '" + name_or_path + "' (known: " + (known.empty() ? "none found" : known) +
                       "; or give a .yaml layer set or model file)");
    }
  }
  WINFER_ASSIGN_OR_RETURN(std::string text, read_text(path));
  // A model file (format winfer/1) stands for the set of its distinct convolution shapes.
  WINFER_ASSIGN_OR_RETURN(YAML::Node root, load_yaml(text, path));
  if (root.IsMap() && root["format"] && root["format"].Scalar() != kFormat) {
    WINFER_ASSIGN_OR_RETURN(std::vector<BenchLayer> layers, conv_layers_of_model(path));
    LayerSet set;
    set.path = path;
    set.name = fs::path(path).stem().string();
    set.description = "distinct conv shapes of " + path;
    set.batch = layers.front().params.batch;
    set.layers = std::move(layers);
    return set;
  }
  return parse_layer_set(text, path);
}

void set_batch(LayerSet* set, int64_t batch) {
  set->batch = batch;
  for (BenchLayer& l : set->layers) l.params.batch = batch;
}

}  // namespace winfer::bench
