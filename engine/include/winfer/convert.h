// winfer convert: an ONNX model written in winfer's own form, a YAML model file and a
// safetensors weights file beside it. Loading the pair gives bitwise the same outputs as loading
// the ONNX file: both are what the ONNX importer produces (docs/MODEL_FORMAT.md, "ONNX").
//
//   winfer::Status s = winfer::convert_onnx_model("resnet50.onnx", "resnet50.yaml");
#pragma once

#include <string>

#include "winfer/status.h"

namespace winfer {

// Imports `onnx_path` and writes `yaml_path` and `weights_path` (default: the YAML's path with
// the extension .safetensors; the YAML names it relative to its own folder). Parameters keep
// torchvision's names where the ONNX initializers carry them ("layer1.0.conv1.weight"). Existing
// files are replaced only when they are of the same kind (a YAML model, a safetensors file).
Status convert_onnx_model(const std::string& onnx_path, const std::string& yaml_path,
                          const std::string& weights_path = std::string());

}  // namespace winfer
