#include <filesystem>

#include "engine/src/core/file_io.h"
#include "engine/src/onnx/onnx_import.h"
#include "winfer/convert.h"
#include "winfer/safetensors.h"

namespace winfer {
namespace fs = std::filesystem;
namespace {

// A YAML model file winfer wrote (or any winfer model): replaced by convert, never anything else.
bool looks_like_model_yaml(const std::string& head, uint64_t) {
  return head.rfind("#", 0) == 0 || head.rfind("format:", 0) == 0;
}
const detail::OutputKind kModelOutput{"model file", "a winfer YAML model", looks_like_model_yaml};

}  // namespace

Status convert_onnx_model(const std::string& onnx_path, const std::string& yaml_path, const std::string& weights_path) {
  if (!onnx_import::is_onnx_path(onnx_path)) {
    return invalid_argument("convert: '" + onnx_path + "' is not an .onnx file");
  }
  const std::string weights =
      weights_path.empty() ? fs::path(yaml_path).replace_extension(".safetensors").string() : weights_path;
  WINFER_ASSIGN_OR_RETURN(onnx_import::ImportedModel imported, onnx_import::import_onnx(onnx_path));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, shape] : imported.params->names()) {
    Tensor t;
    WINFER_RETURN_IF_ERROR(imported.params->get(name, shape, &t));
    tensors.emplace_back(name, std::move(t));
  }
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"source", fs::path(onnx_path).filename()}};
  WINFER_RETURN_IF_ERROR(write_safetensors(weights, tensors, metadata));
  // The weights file relative to the YAML's folder, as the loader resolves it.
  const fs::path yaml_dir = fs::absolute(yaml_path).parent_path();
  const std::string relative = fs::absolute(weights).lexically_relative(yaml_dir).string();
  const std::string text = "# Converted by `winfer convert` from " + fs::path(onnx_path).filename().string() +
                           "; loading it gives the same outputs as the ONNX file.\n" + imported.yaml + "weights: '" +
                           relative + "'\n";
  detail::FileWriter writer(yaml_path, kModelOutput);
  WINFER_RETURN_IF_ERROR(writer.open());
  WINFER_RETURN_IF_ERROR(writer.write(text.data(), text.size()));
  return writer.close();
}

}  // namespace winfer
