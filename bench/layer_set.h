// Layer sets of `winfer bench`: named lists of convolution shapes, read from bench/layers/*.yaml
// (format winfer-layers/1, documented in bench/layers/paper12.yaml) or taken from a model file.
//
// A set is device-neutral: it holds shapes, a default batch and the fused epilogue (bias,
// activation) of each layer, nothing about algorithms or backends, so the CPU benchmark and a
// GPU one read the same files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/conv_params.h"
#include "winfer/status.h"

namespace winfer::bench {

struct BenchLayer {
  std::string name;   // "conv1", or "resnet50:layer1.0.conv2" for a layer taken from a model
  ConvParams params;  // batch = the set's batch
  Activation activation = Activation::kRelu;
  bool bias = true;
  int count = 1;  // layers of the source models with this shape (1 for listed layers)
};

struct LayerSet {
  std::string name, description;
  std::string path;  // the file it was read from
  int64_t batch = 1;
  std::vector<BenchLayer> layers;
};

// `name_or_path`: a set name ("paper12", looked up as NAME.yaml in layer_set_dirs()), a
// layer-set file, or a model file (format winfer/1: every distinct conv shape of the model).
Result<LayerSet> load_layer_set(const std::string& name_or_path);

// Parses layer-set YAML text; relative model paths resolve against `path`'s folder.
Result<LayerSet> parse_layer_set(const std::string& yaml_text, const std::string& path);

// Every distinct convolution shape of a model file at the model's batch, in execution order,
// named "<prefix>:<layer>" (prefix: the model's name when empty). A shape seen again only
// increments `count` of its first occurrence.
Result<std::vector<BenchLayer>> conv_layers_of_model(const std::string& model_path, const std::string& prefix = "");

// Folders searched for NAME.yaml, in order: $WINFER_BENCH_LAYERS, bench/layers relative to the
// executable (../../bench/layers from build/bin), and the source tree's bench/layers.
std::vector<std::string> layer_set_dirs();
// Names of the sets found in layer_set_dirs() (for help and error messages).
std::vector<std::string> available_layer_sets();

// Sets every layer's batch.
void set_batch(LayerSet* set, int64_t batch);

// Merges layers with equal shapes (ConvParams, epilogue aside) into the first, summing counts.
std::vector<BenchLayer> distinct_shapes(const std::vector<BenchLayer>& layers);

const char* activation_key(Activation a);  // "relu", "relu6", "none"

}  // namespace winfer::bench
