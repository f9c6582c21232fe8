// A model's structure as the loader reads it, without YAML: the header (name, input, outputs)
// and one entry per layer, every value as the model text would spell it. The ONNX importer hands
// its models over in this form (onnx_import.h), so that loading an .onnx file builds no YAML tree
// and parses no text; ModelLoader applies the same checks to it as to a YAML file's layers
// (docs/MODEL_FORMAT.md). Internal to the engine.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/src/attrs.h"

namespace winfer {

struct LayerDescription {
  std::string name, op;
  std::vector<std::string> inputs;  // as named; the YAML form's default (the previous output) is not used
  std::string params;               // the parameter prefix; empty: the layer's name
  std::vector<std::pair<std::string, AttrValue>> attrs;  // in the text's order
};

struct ModelDescription {
  std::string name;
  std::string input_name;
  std::vector<int64_t> input_shape;
  std::vector<std::string> outputs;
  std::vector<LayerDescription> layers;
};

}  // namespace winfer
