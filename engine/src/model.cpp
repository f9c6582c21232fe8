#include "winfer/model.h"

#include <cstdio>

#include "engine/src/core/file_io.h"
#include "engine/src/device_backend.h"
#include "engine/src/graph.h"
#include "engine/src/quant_model.h"
#include "winfer/image.h"

namespace winfer {

Model::Model() : device_states_(std::make_unique<ModelDeviceStates>()) {}
Model::~Model() = default;

std::vector<std::string> Model::output_names() const {
  std::vector<std::string> names;
  for (int t : graph_->outputs) names.push_back(graph_->tensors[t].name);
  return names;
}

namespace {

// A labels file: one class name per line, a trailing '\r' dropped, a control byte refused.
// `named_by` (the model file that names it, or "") goes into the messages.
Result<std::vector<std::string>> read_labels(const std::string& path, const std::string& named_by) {
  // ImageNet's 1000 names are 10 KiB; 16 MiB is far beyond any real list of classes.
  static constexpr detail::InputKind kLabelsFile{"labels file", uint64_t(16) << 20};
  WINFER_ASSIGN_OR_RETURN(std::string text, detail::read_input_file(path, kLabelsFile));
  std::vector<std::string> labels;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    for (unsigned char c : line) {
      if (c < 0x20 && c != '\t') {
        char byte[8];
        std::snprintf(byte, sizeof byte, "0x%02x", c);
        return invalid_argument("labels file '" + path + "'" +
                                (named_by.empty() ? "" : " (named by " + named_by + ")") + ": line " +
                                std::to_string(labels.size() + 1) + " holds the control byte " + byte +
                                "; a labels file is text, one class name per line");
      }
    }
    labels.push_back(std::move(line));
    begin = end + 1;
  }
  return labels;
}

}  // namespace

Result<std::vector<std::string>> read_labels_file(const std::string& path) { return read_labels(path, ""); }

Result<std::vector<std::string>> Model::labels() const {
  if (labels_path_.empty()) return std::vector<std::string>();
  return read_labels(labels_path_, path_);
}

std::vector<Shape> Model::output_shapes() const {
  std::vector<Shape> shapes;
  for (int t : graph_->outputs) shapes.push_back(graph_->tensors[t].shape);
  return shapes;
}

std::vector<LayerInfo> Model::layers() const {
  std::vector<LayerInfo> layers;
  for (const GraphNode& node : graph_->nodes) {
    LayerInfo info;
    info.name = node.name;
    info.type = node.type;
    std::vector<Shape> in, out;
    for (int t : node.inputs) {
      info.inputs.push_back(graph_->tensors[t].name);
      in.push_back(graph_->tensors[t].shape);
    }
    for (int t : node.outputs) {
      info.outputs.push_back(graph_->tensors[t].name);
      out.push_back(graph_->tensors[t].shape);
    }
    info.output_shapes = out;
    info.fused = node.op->fused_names();
    info.flops = node.op->flops(in, out);
    info.params = node.op->param_count() + node.op->fused_param_count();
    if (quantized_ && !structure_only_) {  // structure only: no layer was wrapped
      info.precision = quant::precision_of(*node.op);
      if (info.precision.empty() && (node.type == "conv2d" || node.type == "linear")) info.precision = "fp32";
    }
    layers.push_back(std::move(info));
  }
  return layers;
}

int64_t Model::total_flops() const {
  int64_t total = 0;
  for (const LayerInfo& layer : layers()) total += layer.flops;
  return total;
}

int64_t Model::total_params() const {
  int64_t total = 0;
  for (const GraphNode& node : graph_->nodes) total += node.op->param_count() + node.op->fused_param_count();
  return total;
}

size_t Model::weight_bytes() const {
  size_t total = 0;
  for (const GraphNode& node : graph_->nodes) total += node.op->weight_bytes();
  return total;
}

}  // namespace winfer
