// `winfer convert MODEL.onnx -o MODEL.yaml`: the imported model in winfer's own form.
#include <cstdio>
#include <filesystem>

#include "apps/winfer/commands.h"
#include "winfer/convert.h"

namespace winfer::cli {

int run_convert(const ConvertArgs& args) {
  const Status s = convert_onnx_model(args.model, args.output, args.weights);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  const std::string weights = args.weights.empty()
                                  ? std::filesystem::path(args.output).replace_extension(".safetensors").string()
                                  : args.weights;
  std::printf("wrote %s and %s\n", args.output.c_str(), weights.c_str());
  return 0;
}

}  // namespace winfer::cli
