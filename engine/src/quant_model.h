// Quantized models (docs/MODEL_FORMAT.md, "Quantized models"): the `quantization:` block of a
// model file, checked against its graph and weights file, and how its INT8 layers run.
//
// Until the INT8 kernels are part of the engine, an INT8 layer runs *simulated*: its op is
// wrapped (SimulatedInt8Op) so that its kernel rounds each input to the input tensor's u8 grid
// (x -> s * (q - z)), runs the FP32 kernel of the layer on the s8 weights and s32 bias
// dequantized at load, and rounds its output to the output tensor's u8 grid. That is the INT8
// arithmetic up to float rounding of the accumulation: the accuracy of the quantized model, at
// FP32 speed (slower, for the roundings). `winfer info` and the kernels' descriptions say
// "simulated". The real kernels replace the wrapper layer by layer: SimulatedInt8Op::compile is
// the one place that chooses how an INT8 layer runs.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/src/graph.h"
#include "engine/src/param_sources.h"
#include "engine/src/quantization.h"

namespace YAML {
class Node;
}

namespace winfer {
namespace quant {

constexpr const char* kActivationScheme = "u8_per_tensor";
constexpr const char* kWeightScheme = "s8_per_channel";

struct LayerPrecision {
  bool int8 = false;
  std::string reason;  // why the layer stays FP32 (or was quantized), as `winfer quantize` wrote it
  int line = 0;
};

struct TensorEntry {
  TensorQuant quant;
  float min = 0, max = 0;  // the calibrated range (informational)
  int line = 0;
};

// The parsed `quantization:` block.
struct ModelQuantization {
  std::string method, calibration;
  std::map<std::string, TensorEntry> tensors;    // activation tensors by name
  std::map<std::string, LayerPrecision> layers;  // conv2d / linear layers by name
  bool int8(const std::string& layer) const {
    auto it = layers.find(layer);
    return it != layers.end() && it->second.int8;
  }
};

// Parses the block; errors name `file`, the line and the field, and what was expected.
Status parse_quantization(const YAML::Node& node, const std::string& file, ModelQuantization* out);

// Checks the block against the graph as read from the file (before fusion): every layer it
// names exists and is a conv2d or linear layer, each conv2d/linear layer is listed, and every
// INT8 layer's input tensor has a scale.
Status check_quantization(const Graph& graph, const ModelQuantization& q, const std::string& file);

// The weights of a quantized model: an INT8 layer's `P.weight` must be I8 of the layer's shape,
// with `P.weight_scale` F32 [out channels] (finite, > 0) and, when the layer has a bias,
// `P.bias` I32 [out channels] at scale input_scale * weight_scale; they are handed to the layer
// dequantized (float32). Everything else is read as from any weights file (F32).
std::unique_ptr<NamedParamSource> make_quantized_param_source(std::shared_ptr<const SafeTensorsFile> file,
                                                              const Graph& graph, const ModelQuantization& q);

// After fusion: wraps the op of every INT8 node in SimulatedInt8Op, with the u8 parameters of
// its inputs and output (an error names the node and the tensor without a scale).
Status simulate_int8_layers(Graph& graph, const ModelQuantization& q, const std::string& file);

// "int8 (simulated)" for a wrapped op, "" otherwise (Model::layers, `winfer info`).
std::string precision_of(const Op& op);

}  // namespace quant
}  // namespace winfer
