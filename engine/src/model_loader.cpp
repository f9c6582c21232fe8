// Model loading: YAML -> Graph (validated) -> shapes -> parameters -> fusion.
// Every error is prefixed with the file and, where it applies, the line and the layer.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "engine/src/core/file_io.h"
#include "engine/src/fusion.h"
#include "engine/src/graph.h"
#include "engine/src/huge_page_weights.h"
#include "engine/src/model_description.h"
#include "engine/src/onnx/onnx_import.h"
#include "engine/src/op_registry.h"
#include "engine/src/param_sources.h"
#include "engine/src/preprocess_yaml.h"
#include "engine/src/quant_model.h"
#include "engine/src/yaml_node_limit.h"
#include "engine/src/yaml_text.h"
#include "kernels/cpu/conv_algorithm.h"
#include "winfer/log.h"
#include "winfer/model.h"

namespace winfer {
namespace fs = std::filesystem;

namespace {

using detail::escaped;
using detail::first_control_character;

constexpr const char* kFormat = "winfer/1";
const std::set<std::string> kTopLevelKeys = {"format",     "name",    "description", "input",  "weights",     "labels",
                                             "preprocess", "outputs", "tensors",     "layers", "quantization"};
const std::set<std::string> kLayerKeys = {"name", "op", "input", "inputs", "params"};

// Sanity bounds (docs/ERRORS.md, "Limits"). A model description is text: the largest zoo
// model (resnet152.yaml) is 39 KB with ~500 layers, so anything past these is corrupt or hostile,
// and refusing it early keeps the parser's memory and time bounded.
// The file's bytes are bounded, and so are its YAML nodes (kMaxYamlNodes, yaml_node_limit.h):
// the node count is what bounds the memory of loading.
constexpr detail::InputKind kModelFile{"model file", kMaxModelTextBytes};
constexpr size_t kMaxLayers = 10000;                // 20x resnet152's; within kMaxYamlNodes at 5 nodes a layer
constexpr int64_t kMaxInputDim = int64_t(1) << 24;  // per dimension of input.shape, as for attributes

int line_of(const YAML::Node& node) { return node.Mark().line >= 0 ? node.Mark().line + 1 : 0; }

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
  return s;
}

// Reads YAML with typed errors: "model.yaml:7: 'input.shape' must be a list of integers".
class YamlReader {
 public:
  explicit YamlReader(std::string file, bool show_lines = true) : file_(std::move(file)), show_lines_(show_lines) {}
  const std::string& file() const { return file_; }

  Status error(const YAML::Node& node, const std::string& message) const {
    return invalid_argument(at(node) + message);
  }
  std::string at(const YAML::Node& node) const {
    const int line = show_lines_ ? line_of(node) : 0;  // an imported model's text is the importer's
    return file_ + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": ";
  }

  // Every string the loader reads is a name, a path or a keyword: printable text only.
  Status string(const YAML::Node& node, const std::string& what, std::string* out) const {
    if (!node.IsScalar()) return error(node, "'" + what + "' must be a string");
    WINFER_RETURN_IF_ERROR(printable(node, node.Scalar(), "'" + what + "'"));
    *out = node.Scalar();
    return Status::Ok();
  }

  Status printable(const YAML::Node& node, const std::string& text, const std::string& what) const {
    const size_t at = first_control_character(text);
    if (at == std::string::npos) return Status::Ok();
    return error(node, not_printable(text, what, at));
  }
  // The same check for text that comes from no YAML node (an imported model's description).
  Status printable(const std::string& text, const std::string& what) const {
    const size_t at = first_control_character(text);
    if (at == std::string::npos) return Status::Ok();
    return invalid_argument(file_ + ": " + not_printable(text, what, at));
  }

  // The keys of a mapping: plain printable names, each given once. yaml-cpp keeps both entries
  // of a repeated key and node["key"] finds the first, so a duplicate would silently lose one
  // of its values; every mapping the loader reads is checked here first.
  Status keys(const YAML::Node& map, const std::string& what) const {
    std::map<std::string, int> first_line;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) return error(kv.first, "a key of " + what + " must be a name, not a list or a mapping");
      const std::string& key = kv.first.Scalar();
      WINFER_RETURN_IF_ERROR(printable(kv.first, key, "key of " + what));
      const auto [it, added] = first_line.emplace(key, line_of(kv.first));
      if (!added) {
        return error(kv.first, "duplicate key '" + key + "' in " + what + " (first at line " +
                                   std::to_string(it->second) + "); give each key once");
      }
    }
    return Status::Ok();
  }

  Status int_list(const YAML::Node& node, const std::string& what, std::vector<int64_t>* out) const {
    if (!node.IsSequence()) return error(node, "'" + what + "' must be a list of integers");
    out->clear();
    for (const YAML::Node& item : node) {
      int64_t v = 0;
      if (!item.IsScalar() || !YAML::convert<int64_t>::decode(item, v)) {
        return error(item, "'" + what + "' must be a list of integers, got '" +
                               (item.IsScalar() ? escaped(item.Scalar()) : std::string("a nested value")) + "'");
      }
      out->push_back(v);
    }
    return Status::Ok();
  }

  Status float_list(const YAML::Node& node, const std::string& what, std::vector<float>* out) const {
    if (!node.IsSequence()) return error(node, "'" + what + "' must be a list of numbers");
    out->clear();
    out->reserve(node.size());
    for (const YAML::Node& item : node) {
      double v = 0;
      if (!item.IsScalar() || !YAML::convert<double>::decode(item, v)) {
        return error(item, "'" + what + "' must be a list of numbers");
      }
      out->push_back(static_cast<float>(v));
    }
    return Status::Ok();
  }

 private:
  static std::string not_printable(const std::string& text, const std::string& what, size_t at) {
    return what + " is '" + escaped(text) + "', with a control character at byte " + std::to_string(at) +
           "; names, keys and values must be printable text";
  }

  std::string file_;
  bool show_lines_ = true;
};

// `load` (a loader and what it reads, all gone when it returns), then the memory they freed handed
// back (FreeHeapPages::loader_gone).
template <typename Load>
Result<std::shared_ptr<const Model>> load_then_trim(Load load) {
  Result<std::shared_ptr<const Model>> model = load();
  FreeHeapPages::loader_gone();
  return model;
}

}  // namespace

class ModelLoader {
 public:
  ModelLoader(const std::string& path, const LoadOptions& options)
      : path_(path), options_(options), yaml_(path), model_(new Model()) {}
  // Model::load_from_memory: the YAML text itself, `path` only names it in messages; weights
  // from `weights` when not null (they take the place of the YAML's `weights:` file).
  ModelLoader(const std::string& name, const std::string* yaml_text, std::shared_ptr<const SafeTensorsFile> weights,
              const LoadOptions& options)
      : path_(name),
        options_(options),
        yaml_(name),
        model_(new Model()),
        yaml_text_(yaml_text),
        memory_weights_(std::move(weights)) {}
  // An imported model (ONNX): its winfer text, written by the importer (errors name `path`, no
  // lines), and its parameters.
  ModelLoader(const std::string& path, onnx_import::ImportedModel* imported, const LoadOptions& options)
      : path_(path),
        options_(options),
        yaml_(path, false),
        model_(new Model()),
        yaml_text_(imported->description ? nullptr : &imported->yaml),
        description_(std::move(imported->description)),
        imported_params_(std::move(imported->params)),
        imported_(true) {
    model_->input_dim_fixed_ = imported->input_dim_fixed;
  }

  Result<std::shared_ptr<const Model>> load() {
    YAML::Node root;
    if (description_ != nullptr) {
      WINFER_RETURN_IF_ERROR(read_description(*description_));
    } else {
      WINFER_RETURN_IF_ERROR(read_file(&root));
      WINFER_RETURN_IF_ERROR(read_header(root));
      WINFER_RETURN_IF_ERROR(read_layers(root["layers"]));
      WINFER_RETURN_IF_ERROR(read_outputs(root["outputs"]));
    }
    Graph& graph = *model_->graph_;
    {
      Status s = graph.sort_topologically();
      if (!s.ok()) return s.with_context(path_);
    }
    std::vector<Shape> shapes;
    WINFER_RETURN_IF_ERROR(graph.infer_shapes(model_->input_shape_, &shapes, path_));
    for (size_t t = 0; t < shapes.size(); ++t) graph.tensors[t].shape = shapes[t];
    ParamSpec spec;
    WINFER_RETURN_IF_ERROR(read_param_spec(root, &spec));
    if (root["quantization"]) WINFER_RETURN_IF_ERROR(read_quantization(root["quantization"]));
    // The parse tree (several hundred KiB for a ShuffleNet) or the description is released before
    // the weights are allocated, so that they reuse its pages instead of adding to the peak.
    root = YAML::Node();
    description_.reset();
    WINFER_RETURN_IF_ERROR(load_params(std::move(spec)));
    // A quantized model keeps pointwise -> depthwise pairs apart (the tensor between them is
    // rounded to u8 like every other, quant_model.h), and its INT8 layers' element-wise
    // functions (a sigmoid, hardswish, SiLU) run as float32 layers after them, on their own
    // output's grid; its FP32 form (Int8Mode::kFloat32) fuses as any FP32 model.
    const bool as_fp32 = options_.int8_mode == LoadOptions::Int8Mode::kFloat32;
    FusionOptions fusion;
    fusion.conv_pairs = !quant_ || as_fp32;
    fusion.channel_scale = !quant_ || as_fp32;
    if (quant_ && !as_fp32) {
      const quant::ModelQuantization* q = &*quant_;
      fusion.no_pointwise = [q](const GraphNode& node) { return q->int8(node.name); };
    }
    if (options_.fuse && !model_->structure_only_) fuse_graph(graph, fusion);
    if (quant_ && !model_->structure_only_ && !as_fp32) {
      quant::Int8Lowering lowering;
      WINFER_RETURN_IF_ERROR(quant::lower_int8_layers(graph, *quant_, int8_weights_.get(),
                                                      options_.int8_mode == LoadOptions::Int8Mode::kSimulated, path_,
                                                      &lowering));
      if (!lowering.simulated.empty()) {
        std::string names;
        for (const std::string& s : lowering.simulated) names += (names.empty() ? "" : ", ") + s;
        log_message(LogLevel::kWarning, path_ + ": " + std::to_string(lowering.simulated.size()) +
                                            " INT8 layer(s) run simulated (FP32 kernels between u8 roundings: the "
                                            "accuracy of INT8, not its speed): " +
                                            names);
      }
    }
    int8_weights_.reset();  // packed by now
    graph.remove_dead_tensors();
    WINFER_RETURN_IF_ERROR(pack_weights(graph));
    // Final once packed: the weights every session of that algorithm shares.
    if (!options_.pack_for.empty() && !model_->structure_only_) gather_weights(graph);
    return std::shared_ptr<const Model>(std::move(model_));
  }

 private:
  // LoadOptions::pack_for: every op packs its weights once for that CPU algorithm.
  Status pack_weights(Graph& graph) {
    if (options_.pack_for.empty() || model_->structure_only_) return Status::Ok();
    const ConvAlgorithm* conv = find_conv_algorithm(options_.pack_for);
    if (conv == nullptr || !conv->user_selectable()) {
      std::string known;
      for (const ConvAlgorithm* a : selectable_conv_algorithms()) {
        known += (known.empty() ? "" : ", ") + std::string(a->name());
      }
      return invalid_argument(path_ + ": LoadOptions::pack_for names no CPU convolution algorithm: '" +
                              options_.pack_for + "' (known: " + known + "; empty for none)");
    }
    FreeHeapPages heap;
    for (GraphNode& node : graph.nodes) {
      std::vector<Shape> inputs;
      for (int t : node.inputs) inputs.push_back(graph.tensors[t].shape);
      node.op->pack_weights_at_load(inputs, *conv);
      // Only a layer with weights can have freed any (mallinfo2 costs ~6 us a call: RegNet-Y-400MF
      // 108 calls, 0.57 ms of its 17 ms load; 74 with weights).
      if (node.op->weight_bytes() > 0) heap.layer_packed();
    }
    return Status::Ok();
  }

  void gather_weights(Graph& graph) {
    std::vector<Tensor*> weights;
    for (GraphNode& node : graph.nodes) node.op->for_each_weight([&](Tensor& t) { weights.push_back(&t); });
    if (read_into_) read_into_->release_holes(std::vector<const Tensor*>(weights.begin(), weights.end()));
    gather_weights_in_huge_pages(weights, read_into_ ? &*read_into_ : nullptr);
    if (read_into_) read_into_->promote();
  }

  Status read_file(YAML::Node* root) {
    if (yaml_text_ != nullptr) return parse_yaml(*yaml_text_, root);
    WINFER_ASSIGN_OR_RETURN(std::string text, detail::read_input_file(path_, kModelFile));
    return parse_yaml(text, root);
  }

  // Parses the model's YAML (from the file or from memory) into *root, after counting its nodes
  // (kMaxYamlNodes); a syntax error names path_ and the line.
  Status parse_yaml(const std::string& text, YAML::Node* root) {
    if (text.size() > kModelFile.max_bytes) {
      return invalid_argument(path_ + ": the model text is " + std::to_string(text.size()) +
                              " bytes, more than the limit of " + std::to_string(kModelFile.max_bytes) + " bytes");
    }
    return parse_yaml_tree(
        [&] {
          count_yaml_nodes(text);
          return YAML::Load(text);
        },
        root);
  }

  // Runs `load` (the parse); a syntax error names path_ and the line.
  template <typename LoadYaml>
  Status parse_yaml_tree(LoadYaml load, YAML::Node* root) {
    try {
      *root = load();
    } catch (const TooManyYamlNodes& e) {
      return invalid_argument(path_ + ":" + std::to_string(e.line) + ": the model has more than " +
                              std::to_string(kMaxYamlNodes) +
                              " YAML values (numbers, strings, lists, mappings); put large tensors in a "
                              "safetensors file (docs/ERRORS.md, \"Limits\")");
    } catch (const YAML::DeepRecursion& e) {
      // yaml-cpp's guard against overflowing the stack, whose own message is "bad file".
      const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
      return parse_error(path_ + (line > 0 ? ":" + std::to_string(line) : std::string()) +
                         ": YAML nesting deeper than " + std::to_string(e.depth() - 1) +
                         " levels (yaml-cpp's limit; a model file nests 4)");
    } catch (const YAML::Exception& e) {
      const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
      return parse_error(path_ + (line > 0 ? ":" + std::to_string(line) : std::string()) +
                         ": YAML syntax error: " + e.msg);
    }
    if (!root->IsMap()) return parse_error(path_ + ": expected a YAML mapping with 'format', 'input' and 'layers'");
    start_graph();
    return Status::Ok();
  }

  void start_graph() {
    model_->path_ = path_;
    model_->graph_.reset(new Graph());
  }

  // An imported model's description (model_description.h): what read_header, read_layers and
  // read_outputs take from a YAML file, with the same checks, from plain strings.
  Status read_description(const ModelDescription& d) {
    start_graph();
    WINFER_RETURN_IF_ERROR(yaml_.printable(d.name, "'name'"));
    model_->name_ = d.name;
    WINFER_RETURN_IF_ERROR(yaml_.printable(d.input_name, "'input.name'"));
    const auto fail = [&](const std::string& message) { return invalid_argument(path_ + ": " + message); };
    WINFER_RETURN_IF_ERROR(set_input(d.input_name, d.input_shape, fail, fail, path_ + ": "));
    if (d.layers.empty()) return fail("'layers' must be a non-empty list");
    if (d.layers.size() > kMaxLayers) {
      return fail("'layers' has " + std::to_string(d.layers.size()) + " layers, more than the limit of " +
                  std::to_string(kMaxLayers));
    }
    std::string previous = model_->input_name_;
    for (const LayerDescription& layer : d.layers) WINFER_RETURN_IF_ERROR(read_described_layer(layer, &previous));
    WINFER_RETURN_IF_ERROR(resolve_inputs());
    for (const std::string& name : d.outputs) WINFER_RETURN_IF_ERROR(yaml_.printable(name, "'outputs'"));
    if (d.outputs.empty()) return fail("'outputs' must be a tensor name or a non-empty list of names");
    return set_outputs(d.outputs, fail);
  }

  Status read_described_layer(const LayerDescription& l, std::string* previous_output) {
    WINFER_RETURN_IF_ERROR(yaml_.printable(l.name, "'name'"));
    WINFER_RETURN_IF_ERROR(
        check_layer_name(l.name, [&](const std::string& m) { return invalid_argument(path_ + ": " + m); }));
    WINFER_RETURN_IF_ERROR(yaml_.printable(l.op, "'op'"));
    Attrs attrs;
    for (const auto& [key, value] : l.attrs) {
      WINFER_RETURN_IF_ERROR(yaml_.printable(key, "key of layer '" + l.name + "'"));
      for (const std::string& item : value.items) {
        WINFER_RETURN_IF_ERROR(yaml_.printable(item, "attribute '" + key + "'"));
      }
      attrs.set(key, value);
    }
    for (const std::string& name : l.inputs) WINFER_RETURN_IF_ERROR(yaml_.printable(name, "'inputs'"));
    WINFER_RETURN_IF_ERROR(yaml_.printable(l.params, "'params'"));
    GraphNode g;
    g.name = l.name;
    g.type = l.op;
    std::optional<std::string> params;
    if (!l.params.empty()) params = l.params;
    return add_layer(std::move(g), attrs, l.inputs, params, path_ + ": layer '" + l.name + "'", previous_output);
  }

  Status read_header(const YAML::Node& root) {
    WINFER_RETURN_IF_ERROR(yaml_.keys(root, "the model's top level"));
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      if (!kTopLevelKeys.count(key)) {
        return yaml_.error(kv.first, "unknown top-level key '" + key +
                                         "' (known: " + join({kTopLevelKeys.begin(), kTopLevelKeys.end()}) + ")");
      }
    }
    std::string format;
    if (!root["format"]) return invalid_argument(path_ + ": missing 'format: " + kFormat + "'");
    WINFER_RETURN_IF_ERROR(yaml_.string(root["format"], "format", &format));
    if (format != kFormat) {
      return yaml_.error(root["format"], "unsupported format '" + format + "', expected '" + kFormat + "'");
    }
    model_->name_ = fs::path(path_).stem().string();
    if (root["name"]) WINFER_RETURN_IF_ERROR(yaml_.string(root["name"], "name", &model_->name_));
    WINFER_RETURN_IF_ERROR(read_input(root["input"]));
    if (root["labels"]) {
      std::string labels;
      WINFER_RETURN_IF_ERROR(yaml_.string(root["labels"], "labels", &labels));
      WINFER_ASSIGN_OR_RETURN(model_->labels_path_, side_file(root["labels"], "labels", labels));
    }
    if (root["preprocess"]) WINFER_RETURN_IF_ERROR(read_preprocess(root["preprocess"]));
    return Status::Ok();
  }

  std::string relative_to_model(const std::string& file) const {
    const fs::path p(file);
    return p.is_absolute() ? file : (fs::path(path_).parent_path() / p).lexically_normal().string();
  }

  // A file the model names (`key: file`), relative to the model's folder; with
  // LoadOptions::confine_to, refused unless it resolves inside that folder.
  Result<std::string> side_file(const YAML::Node& node, const std::string& key, const std::string& file) const {
    const std::string path = relative_to_model(file);
    if (options_.confine_to.empty()) return path;
    std::error_code root_error, path_error;
    const fs::path root = fs::weakly_canonical(options_.confine_to, root_error);
    const fs::path resolved = fs::weakly_canonical(path, path_error);
    if (root_error) {
      return invalid_argument("LoadOptions::confine_to '" + options_.confine_to +
                              "' cannot be resolved: " + root_error.message());
    }
    const bool inside =
        !path_error && std::mismatch(root.begin(), root.end(), resolved.begin(), resolved.end()).first == root.end();
    if (!inside) {
      return yaml_.error(node, "'" + key + ": " + file + "' " +
                                   (path_error ? "cannot be resolved (" + path_error.message() + ")"
                                               : "resolves to '" + resolved.string() + "'") +
                                   ", outside the folder '" + root.string() +
                                   "' that model files may name (--confine-to, LoadOptions::confine_to)");
    }
    return path;
  }

  Status read_input(const YAML::Node& node) {
    if (!node) return invalid_argument(path_ + ": missing 'input: {name: input, shape: [N, C, H, W]}'");
    if (!node.IsMap()) return yaml_.error(node, "'input' must be a mapping with 'shape' (and 'name')");
    WINFER_RETURN_IF_ERROR(yaml_.keys(node, "'input'"));
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (key != "name" && key != "shape") return yaml_.error(kv.first, "unknown key 'input." + key + "'");
    }
    std::string name = "input";
    if (node["name"]) WINFER_RETURN_IF_ERROR(yaml_.string(node["name"], "input.name", &name));
    if (!node["shape"]) return yaml_.error(node, "missing 'input.shape'");
    std::vector<int64_t> dims;
    WINFER_RETURN_IF_ERROR(yaml_.int_list(node["shape"], "input.shape", &dims));
    return set_input(
        name, dims, [&](const std::string& m) { return yaml_.error(node["name"], m); },
        [&](const std::string& m) { return yaml_.error(node["shape"], m); }, yaml_.at(node["shape"]));
  }

  // The input's name and shape, checked; name_error and shape_error make the messages (with the
  // YAML line where there is one), shape_at prefixes a Shape's own error.
  template <typename NameError, typename ShapeError>
  Status set_input(const std::string& name, const std::vector<int64_t>& dims, NameError name_error,
                   ShapeError shape_error, const std::string& shape_at) {
    model_->input_name_ = name;
    // The same rule as for layer names: an empty name would read as "the previous layer had
    // several outputs" to the first layer, which defaults to it.
    if (name.empty() || name.find(':') != std::string::npos) {
      return name_error("input name '" + name + "' must be non-empty and contain no ':'");
    }
    if (dims.size() != 4 && dims.size() != 2) {
      return shape_error("'input.shape' must have 4 dims [N, C, H, W] (or 2 [N, F]), got " +
                         std::to_string(dims.size()));
    }
    for (int64_t d : dims) {
      if (d < 1) return shape_error("'input.shape' dims must be >= 1, got " + Shape(dims).to_string());
      if (d > kMaxInputDim) {
        return shape_error("'input.shape' dims must be <= 2^24 (" + std::to_string(kMaxInputDim) + "), got " +
                           Shape(dims).to_string());
      }
    }
    auto shape = Shape::make(dims);
    if (!shape.ok()) return Status(shape.status()).with_context(shape_at + "input.shape");
    model_->input_shape_ = shape.value();
    auto id = model_->graph_->add_tensor(model_->input_name_);
    if (!id.ok()) return Status(id.status()).with_context(path_);
    model_->graph_->input = id.value();
    return Status::Ok();
  }

  Status read_preprocess(const YAML::Node& node) {
    return detail::read_preprocess_yaml(node, yaml_.file(), "preprocess", &model_->preprocess_);
  }

  // One layer: structural keys, then everything else becomes an attribute of the op.
  Status read_layer(const YAML::Node& node, size_t index, std::string* previous_output) {
    if (!node.IsMap()) return yaml_.error(node, "layer " + std::to_string(index) + " must be a mapping");
    WINFER_RETURN_IF_ERROR(yaml_.keys(node, "layer " + std::to_string(index)));
    // The layer's own keys, found in one pass: node["key"] compares the key with every entry,
    // converting each to text, and was most of reading a layer (keys are unique, checked above).
    std::optional<YAML::Node> name_node, op_node, input_node, inputs_node, params_node;
    for (const auto& kv : node) {
      const std::string& key = kv.first.Scalar();
      if (key == "name") {
        name_node.emplace(kv.second);
      } else if (key == "op") {
        op_node.emplace(kv.second);
      } else if (key == "input") {
        input_node.emplace(kv.second);
      } else if (key == "inputs") {
        inputs_node.emplace(kv.second);
      } else if (key == "params") {
        params_node.emplace(kv.second);
      }
    }
    GraphNode g;
    g.line = line_of(node);
    if (!name_node) return yaml_.error(node, "layer " + std::to_string(index) + " has no 'name'");
    WINFER_RETURN_IF_ERROR(yaml_.string(*name_node, "name", &g.name));
    WINFER_RETURN_IF_ERROR(check_layer_name(g.name, [&](const std::string& m) { return yaml_.error(*name_node, m); }));
    const std::string where = yaml_.at(node) + "layer '" + g.name + "'";
    if (!op_node) return invalid_argument(where + ": missing 'op'");
    WINFER_RETURN_IF_ERROR(yaml_.string(*op_node, "op", &g.type));
    const std::string context = where + " (" + g.type + ")";

    Attrs attrs;
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (kLayerKeys.count(key)) continue;
      // Attribute values reach strtoll and friends as C strings: a NUL would cut "3\0junk" to 3.
      if (kv.second.IsScalar()) {
        WINFER_RETURN_IF_ERROR(yaml_.printable(kv.second, kv.second.Scalar(), "attribute '" + key + "'"));
        attrs.set(key, AttrValue::scalar(kv.second.Scalar(), line_of(kv.second)));
      } else if (kv.second.IsSequence()) {
        std::vector<std::string> items;
        for (const YAML::Node& item : kv.second) {
          if (!item.IsScalar()) return invalid_argument(context + ": attribute '" + key + "' must be a flat list");
          WINFER_RETURN_IF_ERROR(yaml_.printable(item, item.Scalar(), "attribute '" + key + "'"));
          items.push_back(item.Scalar());
        }
        attrs.set(key, AttrValue::list(std::move(items), line_of(kv.second)));
      } else {
        return invalid_argument(context + ": attribute '" + key + "' must be a value or a list");
      }
    }

    // Inputs: 'input' (one name), 'inputs' (list), or the previous layer's output.
    std::vector<std::string> input_names;
    if (input_node && inputs_node) return invalid_argument(context + ": give 'input' or 'inputs', not both");
    if (input_node) {
      std::string name;
      WINFER_RETURN_IF_ERROR(yaml_.string(*input_node, "input", &name));
      input_names.push_back(name);
    } else if (inputs_node) {
      if (!inputs_node->IsSequence()) return invalid_argument(context + ": 'inputs' must be a list of tensor names");
      for (const YAML::Node& item : *inputs_node) {
        std::string name;
        WINFER_RETURN_IF_ERROR(yaml_.string(item, "inputs", &name));
        input_names.push_back(name);
      }
    } else if (previous_output->empty()) {
      return invalid_argument(context +
                              ": the previous layer has several outputs; name this layer's 'input' "
                              "(e.g. '" +
                              model_->graph_->nodes.back().name + ":0')");
    } else {
      input_names.push_back(*previous_output);
    }
    std::optional<std::string> params;
    if (params_node) WINFER_RETURN_IF_ERROR(yaml_.string(*params_node, "params", &params.emplace()));
    return add_layer(std::move(g), attrs, std::move(input_names), params, where, previous_output);
  }

  template <typename Error>
  static Status check_layer_name(const std::string& name, Error error) {
    if (name.empty() || name.find(':') != std::string::npos) {
      return error("layer name '" + name + "' must be non-empty and contain no ':'");
    }
    return Status::Ok();
  }

  // A layer however it was described (YAML or an importer's description): its op created from
  // its attributes, its inputs counted, its outputs named. `where`: "file:line: layer 'name'".
  Status add_layer(GraphNode g, const Attrs& attrs, std::vector<std::string> input_names,
                   const std::optional<std::string>& params, const std::string& where, std::string* previous_output) {
    const OpEntry* info = op_registry().find_entry(g.type);
    if (info == nullptr) {
      return invalid_argument(where + ": unknown op '" + g.type + "' (known ops: " + join(op_registry().types()) + ")");
    }
    const std::string context = where + " (" + g.type + ")";
    auto op = info->create(attrs);
    if (!op.ok()) return Status(op.status()).with_context(context);
    const std::vector<std::string> unknown = attrs.unread_keys();
    if (!unknown.empty()) {
      return invalid_argument(context + ": unknown attribute '" + unknown[0] + "' for op " + g.type);
    }
    g.op = std::move(op).value();

    const int count = static_cast<int>(input_names.size());
    if (count < info->min_inputs || (info->max_inputs >= 0 && count > info->max_inputs)) {
      std::string expected = std::to_string(info->min_inputs);
      if (info->max_inputs != info->min_inputs) {
        expected += info->max_inputs < 0 ? " or more" : " to " + std::to_string(info->max_inputs);
      }
      return invalid_argument(context + ": takes " + expected + " input(s), got " + std::to_string(count));
    }
    pending_inputs_.push_back(std::move(input_names));
    g.param_prefix = params ? *params : g.name;

    const int outputs = info->num_outputs(attrs);
    for (int i = 0; i < outputs; ++i) {
      const std::string tensor = outputs == 1 ? g.name : g.name + ":" + std::to_string(i);
      auto id = model_->graph_->add_tensor(tensor);
      if (!id.ok()) return invalid_argument(context + ": " + id.status().message());
      g.outputs.push_back(id.value());
    }
    // A layer with several outputs (split) has no single "previous output" to default to.
    *previous_output = outputs == 1 ? model_->graph_->tensors[g.outputs[0]].name : std::string();
    model_->graph_->nodes.push_back(std::move(g));
    return Status::Ok();
  }

  Status read_layers(const YAML::Node& node) {
    if (!node) return invalid_argument(path_ + ": missing 'layers'");
    if (!node.IsSequence() || node.size() == 0) return yaml_.error(node, "'layers' must be a non-empty list");
    if (node.size() > kMaxLayers) {
      return yaml_.error(node, "'layers' has " + std::to_string(node.size()) + " layers, more than the limit of " +
                                   std::to_string(kMaxLayers));
    }
    std::string previous = model_->input_name_;
    size_t index = 0;
    for (const YAML::Node& layer : node) WINFER_RETURN_IF_ERROR(read_layer(layer, index++, &previous));
    return resolve_inputs();
  }

  // Inputs may name layers defined later (the graph is sorted afterwards), so they are resolved
  // once every layer is read.
  Status resolve_inputs() {
    Graph& graph = *model_->graph_;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      for (const std::string& name : pending_inputs_[n]) {
        const int id = graph.find_tensor(name);
        if (id < 0) {
          return invalid_argument(graph.nodes[n].context(path_) + ": input '" + name +
                                  "' is not the graph input or any layer's output");
        }
        graph.nodes[n].inputs.push_back(id);
      }
    }
    return Status::Ok();
  }

  Status read_outputs(const YAML::Node& node) {
    Graph& graph = *model_->graph_;
    if (!node) {
      if (graph.nodes.back().outputs.size() != 1) {
        return invalid_argument(path_ + ": the last layer has several outputs; list them under 'outputs'");
      }
      graph.outputs = {graph.nodes.back().outputs[0]};
      return Status::Ok();
    }
    std::vector<std::string> names;
    if (node.IsScalar()) {
      std::string name;
      WINFER_RETURN_IF_ERROR(yaml_.string(node, "outputs", &name));
      names.push_back(name);
    } else if (node.IsSequence() && node.size() > 0) {
      for (const YAML::Node& item : node) {
        std::string name;
        WINFER_RETURN_IF_ERROR(yaml_.string(item, "outputs", &name));
        names.push_back(name);
      }
    } else {
      return yaml_.error(node, "'outputs' must be a tensor name or a non-empty list of names");
    }
    return set_outputs(names, [&](const std::string& m) { return yaml_.error(node, m); });
  }

  template <typename Error>
  Status set_outputs(const std::vector<std::string>& names, Error error) {
    Graph& graph = *model_->graph_;
    for (const std::string& name : names) {
      const int id = graph.find_tensor(name);
      if (id < 0) return error("output '" + name + "' is not any layer's output");
      graph.outputs.push_back(id);
    }
    return Status::Ok();
  }

  // A quantized model's `quantization:` block (docs/MODEL_FORMAT.md, "Quantized models"),
  // checked against the graph before its weights are read.
  Status read_quantization(const YAML::Node& node) {
    quant_.emplace();
    WINFER_RETURN_IF_ERROR(quant::parse_quantization(node, path_, &*quant_));
    WINFER_RETURN_IF_ERROR(quant::check_quantization(*model_->graph_, *quant_, path_));
    model_->quantized_ = true;
    return Status::Ok();
  }

  // The weights file's parameters: a quantized model's INT8 layers read theirs dequantized.
  std::unique_ptr<NamedParamSource> file_params(std::shared_ptr<const SafeTensorsFile> file) {
    if (quant_) {
      // The raw s8 weights are kept (until packed) only for the INT8 kernels.
      if (options_.int8_mode == LoadOptions::Int8Mode::kKernels)
        int8_weights_ = std::make_shared<quant::Int8WeightTable>();
      return quant::make_quantized_param_source(std::move(file), *model_->graph_, *quant_, int8_weights_);
    }
    return std::make_unique<SafeTensorsParamSource>(std::move(file));
  }

  Status read_inline_tensors(const YAML::Node& node, std::map<std::string, InlineTensor>* out) {
    if (!node.IsMap()) return yaml_.error(node, "'tensors' must map parameter names to {shape, data}");
    WINFER_RETURN_IF_ERROR(yaml_.keys(node, "'tensors'"));
    for (const auto& kv : node) {
      const std::string name = kv.first.Scalar();
      const YAML::Node& t = kv.second;
      const std::string what = "tensors." + name;
      if (!t.IsMap() || !t["shape"] || !t["data"]) return yaml_.error(t, "'" + what + "' needs 'shape' and 'data'");
      WINFER_RETURN_IF_ERROR(yaml_.keys(t, "'" + what + "'"));
      InlineTensor tensor;
      tensor.line = line_of(t);
      std::vector<int64_t> dims;
      WINFER_RETURN_IF_ERROR(yaml_.int_list(t["shape"], what + ".shape", &dims));
      auto shape = Shape::make(dims);
      if (!shape.ok()) return Status(shape.status()).with_context(yaml_.at(t) + what);
      tensor.shape = shape.value();
      WINFER_RETURN_IF_ERROR(yaml_.float_list(t["data"], what + ".data", &tensor.data));
      if (static_cast<int64_t>(tensor.data.size()) != tensor.shape.numel()) {
        return yaml_.error(t["data"], "'" + what + "' has shape " + tensor.shape.to_string() + " (" +
                                          std::to_string(tensor.shape.numel()) + " numbers) but " +
                                          std::to_string(tensor.data.size()) + " numbers of data");
      }
      (*out)[name] = std::move(tensor);
    }
    return Status::Ok();
  }

  // What load_params needs from the YAML: its inline tensors and the weights file it names.
  struct ParamSpec {
    std::map<std::string, InlineTensor> inline_tensors;
    std::string weights;  // LoadOptions::weights_path, else the model's `weights:`, else empty
  };

  Status read_param_spec(const YAML::Node& root, ParamSpec* spec) {
    if (root["tensors"]) WINFER_RETURN_IF_ERROR(read_inline_tensors(root["tensors"], &spec->inline_tensors));
    spec->weights = options_.weights_path;
    if (spec->weights.empty() && root["weights"]) {
      WINFER_RETURN_IF_ERROR(yaml_.string(root["weights"], "weights", &spec->weights));
      WINFER_ASSIGN_OR_RETURN(spec->weights, side_file(root["weights"], "weights", spec->weights));
    }
    return Status::Ok();
  }

  Status load_params(ParamSpec spec) {
    const bool has_inline = !spec.inline_tensors.empty();
    auto inline_source = std::make_unique<InlineParamSource>(path_, std::move(spec.inline_tensors));

    std::unique_ptr<NamedParamSource> file_source;
    std::unique_ptr<RandomParamSource> random_source;
    const std::string& weights = spec.weights;
    if (imported_ && !options_.weights_path.empty()) {
      return invalid_argument(path_ + ": an ONNX model carries its weights; LoadOptions::weights_path (--weights '" +
                              options_.weights_path + "') applies to YAML models only");
    }
    if (imported_params_ && !options_.random_weights_seed) {
      file_source = std::move(imported_params_);
      model_->weights_source_ = path_;
    } else if (memory_weights_ && !options_.random_weights_seed) {
      for (const std::string& name : inline_source->names()) {
        if (memory_weights_->find(name) != nullptr) {
          return invalid_argument(path_ + ": tensor '" + name + "' is defined both inline and in the weights buffer");
        }
      }
      file_source = file_params(memory_weights_);
      model_->weights_source_ = "memory";
    } else if (options_.random_weights_seed) {
      random_source = std::make_unique<RandomParamSource>(*options_.random_weights_seed);
      model_->weights_source_ = "random(seed=" + std::to_string(*options_.random_weights_seed) + ")";
    } else if (!weights.empty()) {
      auto file = SafeTensorsFile::open(weights);
      if (!file.ok()) return Status(file.status()).with_context(path_ + ": weights");
      for (const std::string& name : inline_source->names()) {
        if (file.value()->find(name) != nullptr) {
          return invalid_argument(path_ + ": tensor '" + name + "' is defined both inline and in '" + weights + "'");
        }
      }
      file_source = file_params(file.value());
      model_->weights_source_ = weights;
    } else {
      model_->weights_source_ = has_inline ? "inline" : "none";
      if (!has_inline && options_.allow_missing_weights) {
        model_->structure_only_ = true;
        return Status::Ok();
      }
    }
    // Packed in their final place (LoadOptions::pack_for): the file's weights read straight into
    // 2 MiB pages (WeightBlock; gather_weights moves the rest).
    const size_t block_bytes =
        file_source && !options_.pack_for.empty() ? file_source->block_bytes(kOwnPagesAtMostBytes) : 0;
    if (block_bytes >= kGatherFromWeightBytes && Tensor::huge_pages_enabled()) read_into_.emplace(block_bytes);
    ModelParamSource params(path_, std::move(inline_source), std::move(file_source), std::move(random_source));
    Graph& graph = *model_->graph_;
    ReadWeightsInto reading(read_into_ ? &*read_into_ : nullptr);
    for (GraphNode& node : graph.nodes) {
      std::vector<Shape> inputs;
      for (int t : node.inputs) inputs.push_back(graph.tensors[t].shape);
      Status s = node.op->load_params(node.param_prefix, inputs, params);
      if (!s.ok()) return s.with_context(node.context(path_));
    }
    if (read_into_) read_into_->release_unused();
    return Status::Ok();
  }

  std::string path_;
  LoadOptions options_;
  YamlReader yaml_;
  std::unique_ptr<Model> model_;
  std::vector<std::vector<std::string>> pending_inputs_;   // per node, in file order
  const std::string* yaml_text_ = nullptr;                 // load_from_memory, imported models as text
  std::unique_ptr<ModelDescription> description_;          // imported models (import_onnx as_description)
  std::shared_ptr<const SafeTensorsFile> memory_weights_;  // load_from_memory
  std::unique_ptr<NamedParamSource> imported_params_;      // imported models
  std::optional<WeightBlock> read_into_;                   // where load_params read the weights
  bool imported_ = false;
  std::optional<quant::ModelQuantization> quant_;  // a quantized model's `quantization:` block
  // Its INT8 layers' s8 weights, scales and s32 biases as read, until they are packed.
  std::shared_ptr<quant::Int8WeightTable> int8_weights_;
};

Result<std::shared_ptr<const Model>> Model::load(const std::string& yaml_path, const LoadOptions& options) {
  try {
    if (onnx_import::is_onnx_path(yaml_path)) {
      return load_then_trim([&]() -> Result<std::shared_ptr<const Model>> {
        WINFER_ASSIGN_OR_RETURN(onnx_import::ImportedModel imported,
                                onnx_import::import_onnx(yaml_path, options.confine_to, /*as_description=*/true));
        return ModelLoader(yaml_path, &imported, options).load();
      });
    }
    return load_then_trim([&] { return ModelLoader(yaml_path, options).load(); });
  } catch (const std::bad_alloc&) {
    return invalid_argument(yaml_path + ": out of memory while loading the model");
  } catch (const std::exception& e) {
    // yaml-cpp can throw on conversions we did not foresee; never let it escape the library.
    return internal_error(yaml_path + ": unexpected error while loading: " + e.what());
  }
}

Result<std::shared_ptr<const Model>> Model::load_from_memory(const std::string& yaml_text, const void* weights,
                                                             size_t weights_size, const LoadOptions& options,
                                                             const std::string& name) {
  try {
    std::shared_ptr<const SafeTensorsFile> file;
    if (weights != nullptr || weights_size > 0) {
      auto opened = SafeTensorsFile::from_memory(weights, weights_size, name + " weights");
      if (!opened.ok()) return Status(opened.status()).with_context(name);
      file = opened.value();
    }
    return load_then_trim([&] { return ModelLoader(name, &yaml_text, std::move(file), options).load(); });
  } catch (const std::bad_alloc&) {
    return out_of_memory(name + ": out of memory while loading the model");
  } catch (const std::exception& e) {
    return internal_error(name + ": unexpected error while loading: " + e.what());
  }
}

}  // namespace winfer
