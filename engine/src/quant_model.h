// Quantized models (docs/MODEL_FORMAT.md, "Quantized models"): the `quantization:` block of a
// model file, checked against its graph and weights file, and how its INT8 layers run.
//
// How INT8 layers run (lower_int8_layers, after fusion): a conv2d or linear layer listed as int8
// becomes a conv2d_int8 / linear_int8 op (layers/), whose kernels compute on u8 tensors with the
// s8 weights of the file (kernels/cpu/conv_s8.h); the tensors between such layers are u8 (a
// quarter of the bytes), and quantize / dequantize nodes convert where float32 layers (or the
// model's input and outputs) meet them (the loader fuses no pointwise -> depthwise pair and no
// element-wise function into an INT8 layer). A layer whose fusions no INT8 kernel computes (a
// residual added to a depthwise convolution), whose weights are not the file's
// s8 ones (random or inline weights), or every layer under LoadOptions::int8_mode = kSimulated runs
// *simulated* instead: its op is wrapped (SimulatedInt8Op) so that its kernel rounds each input to
// the input tensor's u8 grid (x -> s * (q - z)), runs the FP32 kernel on the s8 weights and s32
// bias dequantized at load, and rounds its output to the output tensor's u8 grid: the INT8
// arithmetic up to float rounding of the accumulation, at FP32 speed. `winfer info` says which
// ("int8" or "int8 (simulated)"), and the loader logs why a layer is simulated.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/src/graph.h"
#include "engine/src/param_sources.h"
#include "engine/src/quantization.h"
#include "layers/int8_conv.h"

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
// When `keep` is given, the raw INT8 parameters read are also stored there by parameter prefix,
// for lower_int8_layers.
using Int8WeightTable = std::map<std::string, Int8LayerWeights>;
std::unique_ptr<NamedParamSource> make_quantized_param_source(std::shared_ptr<const SafeTensorsFile> file,
                                                              const Graph& graph, const ModelQuantization& q,
                                                              std::shared_ptr<Int8WeightTable> keep = nullptr);

struct Int8Lowering {
  int real = 0;                        // layers on INT8 kernels
  std::vector<std::string> simulated;  // "name (why)" of the layers that run simulated
};

// After fusion: every INT8 node gets its INT8 op where `weights` has its raw parameters and its
// kernels compute the fused layer, and u8 tensors with quantize/dequantize nodes around them;
// the others (all with `simulate`) are wrapped in SimulatedInt8Op. Errors name the node and the
// tensor without a scale, or the weights out of range.
Status lower_int8_layers(Graph& graph, const ModelQuantization& q, Int8WeightTable* weights, bool simulate,
                         const std::string& file, Int8Lowering* report);

// "int8 (simulated)" for a wrapped op, "" otherwise (Model::layers, `winfer info`).
std::string precision_of(const Op& op);

}  // namespace quant
}  // namespace winfer
