// winfer quantize (winfer/quantize.h): fold batch norm, calibrate, quantize, write.
//
// The FP32 model is loaded unfused (every tensor of the file is then a tensor of the graph,
// observable) with its weights in OIHW. Batch norms are folded by the fusion rule that folds them
// at load (conv_batchnorm), applied to a copy of each convolution, so the quantized model holds
// exactly the weights the engine would compute. The tensors of the quantized model are those of
// the file less the folded batch norms: a convolution's output there is its batch norm's output
// here (the `renamed` map).
#include "winfer/quantize.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "engine/src/core/file_io.h"
#include "engine/src/graph.h"
#include "engine/src/quant_model.h"
#include "engine/src/quantization.h"
#include "engine/src/rewrites/rules.h"
#include "engine/src/session_impl.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/linear.h"
#include "winfer/idx_dataset.h"
#include "winfer/image.h"
#include "winfer/model.h"
#include "winfer/safetensors.h"

namespace winfer {
namespace fs = std::filesystem;
namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

Tensor deep_copy(const Tensor& t) {
  if (t.empty()) return Tensor();
  Tensor copy = Tensor::allocate(t.shape());
  std::memcpy(copy.data(), t.data(), t.bytes());
  return copy;
}

// Hands a convolution its weights (Conv2dOp::load_params) from tensors held here.
class TensorParams : public ParamSource {
 public:
  std::map<std::string, Tensor> tensors;
  Status get(const std::string& name, const Shape& expected, Tensor* out) override {
    auto it = tensors.find(name);
    if (it == tensors.end() || it->second.shape() != expected) return internal_error("no parameter " + name);
    *out = deep_copy(it->second);
    return Status::Ok();
  }
};

// A conv2d or linear layer's FP32 weights ([out, ...]) and bias (empty when none), BN folded.
struct LayerWeights {
  Tensor weight, bias;
};

bool quantizable(const std::string& type) { return type == "conv2d" || type == "linear"; }

// The extensions of the formats read_image decodes (as `winfer classify` filters a folder).
bool has_image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* known :
       {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".pgm", ".ppm", ".pnm", ".tga", ".psd", ".hdr", ".pic"}) {
    if (ext == known) return true;
  }
  return false;
}

// The calibration inputs, one NCHW tensor per batch.
Status calibration_batches(const Model& model, const QuantizeOptions& options, std::vector<Tensor>* batches,
                           std::string* what) {
  const Shape& input = model.input_shape();
  int given =
      !options.calibrate_dir.empty() + !options.dataset.empty() + !options.inputs.empty() + (options.random_images > 0);
  if (given != 1) {
    return invalid_argument(
        "quantize: give exactly one source of calibration data (a folder of images, a dataset, "
        "input tensors or random images); got " +
        std::to_string(given));
  }
  if (!options.inputs.empty()) {
    for (const Tensor& t : options.inputs) {
      if (t.shape().rank() != input.rank() || t.shape()[0] < 1) {
        return invalid_argument("quantize: calibration input of shape " + t.shape().to_string() +
                                "; expected the model's input shape " + input.to_string() + " (any batch)");
      }
      batches->push_back(t.layout() == Layout::kNHWC ? t.to_layout(Layout::kNCHW) : t);
    }
    *what = std::to_string(options.inputs.size()) + " given input tensors";
    return Status::Ok();
  }
  if (input.rank() != 4) return invalid_argument(model.path() + ": calibration images need an image input [N,C,H,W]");
  if (options.images < 1) return invalid_argument("quantize: --images must be at least 1");
  Preprocess preprocess = model_preprocess(model);
  if (options.random_images > 0) {  // mean/std and channel order only: random images have the input's size
    preprocess.resize = 0;
    preprocess.crop = 0;
  }
  WINFER_RETURN_IF_ERROR(check_preprocess(preprocess, input).with_context(model.path()));
  const int64_t c = input[1], h = input[2], w = input[3];
  const int64_t batch = std::max<int64_t>(1, options.batch);
  std::vector<std::function<Status(float*)>> images;
  ImageDataset dataset;
  std::vector<std::string> files;
  if (options.random_images > 0) {
    const Preprocess& normalize = preprocess;
    std::mt19937_64 rng(options.random_seed);
    for (int64_t i = 0; i < options.random_images; ++i) {
      Image image = Image::blank(w, h, c == 1 ? 1 : 3);
      for (uint8_t& p : image.pixels) p = static_cast<uint8_t>(rng() >> 56);
      images.push_back(
          [image, normalize, c, h, w](float* chw) { return image_to_input(image, normalize, c, h, w, chw); });
    }
    *what = std::to_string(options.random_images) + " random images (seed " + std::to_string(options.random_seed) + ")";
  } else if (!options.dataset.empty()) {
    if (options.dataset != "fashion-mnist") {
      return invalid_argument("quantize: --dataset " + options.dataset + ": unknown dataset (known: fashion-mnist)");
    }
    const std::string dir = options.dataset_dir.empty() ? kFashionMnistDir : options.dataset_dir;
    WINFER_ASSIGN_OR_RETURN(dataset, load_mnist_split(dir, "train"));
    const int64_t n = std::min(options.images, dataset.count);
    for (int64_t i = 0; i < n; ++i) {
      images.push_back([&dataset, &preprocess, i, c, h, w](float* chw) {
        return image_to_input(dataset.image(i), preprocess, c, h, w, chw)
            .with_context("training image " + std::to_string(i));
      });
    }
    *what = "fashion-mnist train, first " + std::to_string(n) + " images";
  } else {
    std::error_code error;
    if (!fs::is_directory(options.calibrate_dir, error)) {
      return not_found("quantize: --calibrate " + quoted(options.calibrate_dir) + " is not a folder of images");
    }
    int64_t skipped = 0;
    for (const auto& entry : fs::directory_iterator(options.calibrate_dir, error)) {
      if (!entry.is_regular_file()) continue;
      if (has_image_extension(entry.path())) {
        files.push_back(entry.path().string());
      } else {
        ++skipped;
      }
    }
    std::sort(files.begin(), files.end());
    if (files.size() > static_cast<size_t>(options.images)) files.resize(static_cast<size_t>(options.images));
    if (files.empty()) return not_found("quantize: --calibrate " + quoted(options.calibrate_dir) + " holds no files");
    const ColorMode mode = color_mode(preprocess);
    for (const std::string& file : files) {
      images.push_back([&file, &preprocess, mode, c, h, w](float* chw) -> Status {
        WINFER_ASSIGN_OR_RETURN(Image image, read_image(file, mode));
        return image_to_input(image, preprocess, c, h, w, chw).with_context(file);
      });
    }
    *what = std::to_string(files.size()) + " images of " + options.calibrate_dir +
            (skipped > 0 ? " (" + std::to_string(skipped) + " files without an image extension skipped)" : "");
  }
  for (size_t begin = 0; begin < images.size(); begin += static_cast<size_t>(batch)) {
    const int64_t n = std::min<int64_t>(batch, static_cast<int64_t>(images.size() - begin));
    Tensor t = Tensor::allocate(Shape{n, c, h, w});
    for (int64_t i = 0; i < n; ++i) WINFER_RETURN_IF_ERROR(images[begin + i](t.data() + i * c * h * w));
    batches->push_back(std::move(t));
  }
  return Status::Ok();
}

// Runs the FP32 model over the batches twice (ranges, then histograms) and returns every
// tensor's statistics, indexed by graph tensor.
Status calibrate(std::shared_ptr<const Model> model, const std::vector<Tensor>& batches, bool histograms, int threads,
                 std::vector<quant::TensorStats>* stats) {
  const Graph& graph = model->graph();
  stats->assign(graph.tensors.size(), quant::TensorStats());
  std::map<int64_t, std::unique_ptr<SessionImpl>> sessions;  // by batch size
  for (int pass = 0; pass < (histograms ? 2 : 1); ++pass) {
    auto observe = [&](int tensor, const float* data, int64_t count) {
      if (pass == 0) {
        (*stats)[tensor].observe_range(data, count);
      } else {
        (*stats)[tensor].observe_histogram(data, count);
      }
    };
    for (const Tensor& input : batches) {
      const int64_t n = input.shape()[0];
      auto& session = sessions[n];
      if (!session) {
        SessionOptions options;
        options.batch = n;
        options.threads = threads;
        options.concat_alias = false;
        WINFER_ASSIGN_OR_RETURN(session, create_cpu_session(model, options));
        session->layer_observer = [&graph, &observe](size_t node, const std::vector<Tensor*>& outputs) {
          for (size_t i = 0; i < outputs.size(); ++i) {
            observe(graph.nodes[node].outputs[i], outputs[i]->data(), outputs[i]->numel());
          }
        };
      }
      observe(graph.input, input.data(), input.numel());
      std::vector<Tensor> outputs;
      WINFER_RETURN_IF_ERROR(session->run_into(input, &outputs));
    }
  }
  return Status::Ok();
}

std::vector<unsigned char> bytes_of(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  return std::vector<unsigned char>(p, p + size);
}

RawTensor raw_f32(const std::string& name, const Tensor& t) {
  return RawTensor{name, "F32", t.shape(), bytes_of(t.data(), t.bytes())};
}

std::string relative_to(const std::string& file, const std::string& dir) {
  return fs::absolute(file).lexically_normal().lexically_relative(fs::absolute(dir).lexically_normal()).string();
}

// One flow-style YAML value (a layer, the input, a preprocess block) as yaml-cpp writes it.
std::string flow(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

bool looks_like_model_yaml(const std::string& head, uint64_t) {
  return head.rfind("#", 0) == 0 || head.rfind("format:", 0) == 0;
}
const detail::OutputKind kModelOutput{"model file", "a winfer YAML model", looks_like_model_yaml};

}  // namespace

Result<QuantizeReport> quantize_model(const std::string& model_path, const std::string& yaml_path,
                                      const QuantizeOptions& options) {
  quant::Method method;
  if (!quant::parse_method(options.method, &method)) {
    return invalid_argument("quantize: --method " + quoted(options.method) + " (known: minmax, percentile, entropy)");
  }
  if (method == quant::Method::kPercentile && !(options.percentile > 0 && options.percentile <= 100)) {
    return invalid_argument("quantize: --percentile " + number(options.percentile) + "; expected a value in (0, 100]");
  }
  if (fs::path(model_path).extension() == ".onnx") {
    return invalid_argument(model_path + ": quantize takes a winfer YAML model; write it with `winfer convert` first");
  }
  LoadOptions load;
  load.fuse = false;   // every tensor observable; batch norms folded below
  load.pack_for = "";  // OIHW weights
  load.random_weights_seed = options.random_weights_seed;
  WINFER_ASSIGN_OR_RETURN(std::shared_ptr<const Model> model, Model::load(model_path, load));
  if (model->quantized()) return invalid_argument(model_path + ": the model is quantized already");
  const Graph& graph = model->graph();

  WINFER_ASSIGN_OR_RETURN(std::string text, detail::read_input_file(model_path, {"model file", kMaxModelTextBytes}));
  const YAML::Node root = YAML::Load(text);  // parsed by the loader already: valid
  if (root["tensors"]) {
    return invalid_argument(model_path +
                            ": quantize needs the parameters in a safetensors file, not inline "
                            "('tensors:')");
  }
  std::shared_ptr<const SafeTensorsFile> weights_file;  // null with random weights
  if (!options.random_weights_seed) {
    auto opened = SafeTensorsFile::open(model->weights_source());
    if (!opened.ok()) return Status(opened.status()).with_context(model_path + ": weights");
    weights_file = opened.value();
  }

  // Batch norm folding, with the engine's rule, on copies of the convolutions.
  std::map<int, LayerWeights> weights;         // conv2d/linear node -> FP32 weights (folded)
  std::map<std::string, std::string> renamed;  // tensor of the file -> tensor of the quantized model
  std::set<int> folded_bn;                     // batch norm nodes folded away
  QuantizeReport report;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const GraphNode& node = graph.nodes[n];
    if (const auto* linear = dynamic_cast<const LinearOp*>(node.op.get())) {
      weights[n] = {deep_copy(linear->weight()), deep_copy(linear->bias())};
      continue;
    }
    const auto* conv = dynamic_cast<const Conv2dOp*>(node.op.get());
    if (conv == nullptr) continue;
    WINFER_ASSIGN_OR_RETURN(Tensor w, conv->weight_oihw("quantize"));
    LayerWeights lw{deep_copy(w), deep_copy(conv->bias())};
    const int next = sole_consumer(graph, static_cast<int>(n));
    const auto* bn = next >= 0 ? dynamic_cast<const BatchNorm2dOp*>(graph.nodes[next].op.get()) : nullptr;
    if (bn != nullptr) {
      Conv2dOp copy(conv->attrs());
      TensorParams params;
      params.tensors["w.weight"] = lw.weight;
      if (!lw.bias.empty()) params.tensors["w.bias"] = lw.bias;
      WINFER_RETURN_IF_ERROR(copy.load_params("w", {}, params));
      if (conv_batchnorm_rule().absorb(copy, *bn)) {
        WINFER_ASSIGN_OR_RETURN(Tensor folded, copy.weight_oihw("quantize"));
        lw = {deep_copy(folded), deep_copy(copy.bias())};
        folded_bn.insert(next);
        renamed[graph.tensors[graph.nodes[next].outputs[0]].name] = node.name;
        report.folded.push_back(graph.nodes[next].name + " -> " + node.name);
      }
    }
    weights[n] = std::move(lw);
  }
  auto new_name = [&renamed](const std::string& tensor) {
    auto it = renamed.find(tensor);
    return it == renamed.end() ? tensor : it->second;
  };

  // Calibration.
  std::vector<Tensor> batches;
  WINFER_RETURN_IF_ERROR(calibration_batches(*model, options, &batches, &report.calibration));
  for (const Tensor& b : batches) report.images += b.shape()[0];
  std::vector<quant::TensorStats> stats;
  WINFER_RETURN_IF_ERROR(calibrate(model, batches, method != quant::Method::kMinMax, options.threads, &stats));
  batches.clear();

  // The tensors of the quantized model: the input and every layer's output but the convolutions
  // whose batch norm was folded (their output is the batch norm's, renamed).
  std::map<std::string, quant::TensorQuant> tensor_quant;
  std::set<std::string> pre_bn;
  for (int bn : folded_bn) pre_bn.insert(graph.tensors[graph.nodes[bn].inputs[0]].name);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const std::string& name = graph.tensors[t].name;
    if (pre_bn.count(name) || !stats[t].seen()) continue;
    QuantizedTensorInfo info;
    info.name = new_name(name);
    info.min = stats[t].min();
    info.max = stats[t].max();
    stats[t].range(method, options.percentile, &info.lo, &info.hi);
    const quant::TensorQuant q = quant::choose_activation_params(info.lo, info.hi);
    info.scale = q.scale;
    info.zero_point = q.zero_point;
    tensor_quant[info.name] = q;
    report.tensors.push_back(info);
  }

  // Precision of each conv2d/linear layer.
  std::set<std::string> layer_names;
  for (const GraphNode& node : graph.nodes) {
    if (quantizable(node.type)) layer_names.insert(node.name);
  }
  for (const auto* list : {&options.keep_fp32, &options.int8}) {
    for (const std::string& name : *list) {
      if (!layer_names.count(name)) {
        return invalid_argument("quantize: " + std::string(list == &options.int8 ? "--int8" : "--keep-fp32") + " " +
                                quoted(name) + ": the model has no conv2d or linear layer of that name");
      }
    }
  }
  auto listed = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  std::set<int> graph_outputs(graph.outputs.begin(), graph.outputs.end());
  bool first_conv = true;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const GraphNode& node = graph.nodes[n];
    if (!quantizable(node.type)) continue;
    QuantizedLayerInfo layer;
    layer.name = node.name;
    layer.type = node.type;
    layer.input = new_name(graph.tensors[node.inputs[0]].name);
    const int out = folded_bn.count(sole_consumer(graph, static_cast<int>(n)))
                        ? graph.nodes[sole_consumer(graph, static_cast<int>(n))].outputs[0]
                        : node.outputs[0];
    layer.output = new_name(graph.tensors[out].name);
    layer.int8 = true;
    layer.reason = "calibrated";
    if (node.type == "conv2d" && first_conv) {
      layer.int8 = false;
      layer.reason = "first convolution, which reads the image (default rule; --int8 " + node.name + " quantizes it)";
    } else if (node.type == "linear" && graph_outputs.count(node.outputs[0])) {
      layer.int8 = false;
      layer.reason = "linear layer writing a model output (default rule; --int8 " + node.name + " quantizes it)";
    }
    if (node.type == "conv2d") first_conv = false;
    if (listed(options.int8, node.name)) {
      layer.int8 = true;
      layer.reason = "--int8";
    }
    if (listed(options.keep_fp32, node.name)) {
      layer.int8 = false;
      layer.reason = "--keep-fp32";
    }
    if (layer.int8 && !tensor_quant.count(layer.input)) {
      return internal_error(model_path + ": layer " + quoted(node.name) + ": its input was not observed");
    }
    report.layers.push_back(layer);
  }

  // The weights file: conv2d/linear parameters from `weights`, the rest copied as they are.
  std::vector<RawTensor> out_tensors;
  std::set<std::string> replaced;
  std::vector<std::string> dropped_prefixes;
  for (int bn : folded_bn) dropped_prefixes.push_back(graph.nodes[bn].param_prefix + ".");
  size_t layer_index = 0;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const GraphNode& node = graph.nodes[n];
    auto it = weights.find(static_cast<int>(n));
    if (it == weights.end()) continue;
    const QuantizedLayerInfo& layer = report.layers[layer_index++];
    const LayerWeights& lw = it->second;
    const std::string p = node.param_prefix;
    replaced.insert(p + ".weight");
    replaced.insert(p + ".bias");
    replaced.insert(p + ".weight_scale");
    if (!layer.int8) {
      out_tensors.push_back(raw_f32(p + ".weight", lw.weight));
      if (!lw.bias.empty()) out_tensors.push_back(raw_f32(p + ".bias", lw.bias));
      continue;
    }
    const int64_t rows = lw.weight.shape()[0];
    std::vector<int8_t> q;
    std::vector<float> scales;
    quant::quantize_weights(lw.weight.data(), rows, lw.weight.numel() / rows, &q, &scales);
    out_tensors.push_back({p + ".weight", "I8", lw.weight.shape(), bytes_of(q.data(), q.size())});
    out_tensors.push_back({p + ".weight_scale", "F32", Shape{rows}, bytes_of(scales.data(), scales.size() * 4)});
    if (!lw.bias.empty()) {
      const std::vector<int32_t> qb =
          quant::quantize_bias(lw.bias.data(), rows, tensor_quant.at(layer.input).scale, scales);
      out_tensors.push_back({p + ".bias", "I32", Shape{rows}, bytes_of(qb.data(), qb.size() * 4)});
    }
  }
  if (!weights_file) {
    // Random weights: no file to copy the other parameters from, so there must be none.
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const GraphNode& node = graph.nodes[n];
      if (weights.count(static_cast<int>(n)) || folded_bn.count(static_cast<int>(n)) || node.op->param_count() == 0) {
        continue;
      }
      return unsupported(node.context(model_path) +
                         ": has parameters, which quantize cannot write with random weights "
                         "(only conv2d, linear and batch norms folded into a conv2d)");
    }
  }
  const std::vector<SafeTensor> no_tensors;
  for (const SafeTensor& t : weights_file ? weights_file->tensors() : no_tensors) {
    if (replaced.count(t.name)) continue;
    bool dropped = false;
    for (const std::string& prefix : dropped_prefixes) dropped = dropped || t.name.rfind(prefix, 0) == 0;
    if (!dropped) out_tensors.push_back({t.name, t.dtype, t.shape, bytes_of(t.data, t.byte_size)});
  }
  report.yaml_path = yaml_path;
  report.weights_path = options.weights_path.empty() ? fs::path(yaml_path).replace_extension(".safetensors").string()
                                                     : options.weights_path;
  report.method = quant::method_name(method);
  if (method == quant::Method::kPercentile) report.method += " " + number(options.percentile);
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"quantization", "u8 activations per tensor, s8 weights per output channel, s32 bias"}};
  WINFER_RETURN_IF_ERROR(write_safetensors_raw(report.weights_path, out_tensors, metadata));

  // The YAML: the file's layers less the folded batch norms, inputs renamed to match.
  std::set<std::string> folded_names;
  for (int bn : folded_bn) folded_names.insert(graph.nodes[bn].name);
  std::set<std::string> folded_convs;
  for (const auto& [bn_tensor, conv] : renamed) folded_convs.insert(conv);
  const std::string out_dir = fs::absolute(yaml_path).parent_path().string();
  std::string y = "# Quantized by `winfer quantize` from " + fs::path(model_path).filename().string() + " (" +
                  report.method + ", " + report.calibration +
                  ").\n# Batch norms folded; INT8 layers run simulated (FP32 kernels between u8 roundings) "
                  "until the INT8 kernels are integrated.\n";
  y += "format: winfer/1\n";
  for (const char* key : {"name", "description"}) {
    if (root[key]) y += std::string(key) + ": " + flow(root[key]) + "\n";
  }
  y += "input: " + flow(root["input"]) + "\n";
  y += "weights: " + flow(YAML::Node(relative_to(report.weights_path, out_dir))) + "\n";
  if (!model->labels_path().empty())
    y += "labels: " + flow(YAML::Node(relative_to(model->labels_path(), out_dir))) + "\n";
  if (root["preprocess"]) y += "preprocess: " + flow(root["preprocess"]) + "\n";
  if (root["outputs"]) {
    YAML::Node outputs(YAML::NodeType::Sequence);
    for (int t : graph.outputs) outputs.push_back(new_name(graph.tensors[t].name));
    y += "outputs: " + flow(outputs) + "\n";
  }
  y += "layers:\n";
  bool previous_dropped = false;
  std::string previous_output = model->input_name();
  for (const YAML::Node& layer : root["layers"]) {
    const std::string name = layer["name"].Scalar();
    const int id = graph.find_tensor(name);
    const std::string this_output = id >= 0 ? name : std::string();
    if (folded_names.count(name)) {
      previous_dropped = true;
      previous_output = this_output;
      continue;
    }
    YAML::Node out(YAML::NodeType::Map);
    bool has_input = layer["input"] || layer["inputs"];
    for (const auto& kv : layer) {
      const std::string key = kv.first.Scalar();
      if (key == "bias" && folded_convs.count(name)) continue;  // a folded batch norm gives it a bias
      if (key == "input") {
        out[key] = new_name(kv.second.Scalar());
      } else if (key == "inputs") {
        YAML::Node list(YAML::NodeType::Sequence);
        for (const YAML::Node& item : kv.second) list.push_back(new_name(item.Scalar()));
        out[key] = list;
      } else {
        out[key] = kv.second;
      }
      if (key == "op" && !has_input && previous_dropped) {
        out["input"] = new_name(previous_output);  // the layer before it in the file is gone
        has_input = true;
      }
    }
    y += "  - " + flow(out) + "\n";
    previous_dropped = false;
    previous_output = this_output;
  }
  y += "quantization:\n";
  y += "  activations: " + std::string(quant::kActivationScheme) + "\n";
  y += "  weights: " + std::string(quant::kWeightScheme) + "\n";
  y += "  method: " + flow(YAML::Node(report.method)) + "\n";
  y += "  calibration: " + flow(YAML::Node(report.calibration)) + "\n";
  y += "  tensors:\n";
  for (const QuantizedTensorInfo& t : report.tensors) {
    y += "    " + flow(YAML::Node(t.name)) + ": {scale: " + number(t.scale) +
         ", zero_point: " + std::to_string(t.zero_point) + ", min: " + number(t.min) + ", max: " + number(t.max) +
         "}\n";
  }
  y += "  layers:\n";
  for (const QuantizedLayerInfo& l : report.layers) {
    YAML::Node entry(YAML::NodeType::Map);
    entry["precision"] = l.int8 ? "int8" : "fp32";
    if (!l.int8) entry["reason"] = l.reason;
    y += "    " + flow(YAML::Node(l.name)) + ": " + flow(entry) + "\n";
  }
  detail::FileWriter writer(yaml_path, kModelOutput);
  WINFER_RETURN_IF_ERROR(writer.open());
  WINFER_RETURN_IF_ERROR(writer.write(y.data(), y.size()));
  WINFER_RETURN_IF_ERROR(writer.close());
  return report;
}

}  // namespace winfer
