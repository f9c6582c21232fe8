// `winfer info MODEL`: the model as the engine sees it after loading and fusion.
#include <cstdio>
#include <iostream>

#include "apps/winfer/commands.h"
#include "apps/winfer/format.h"
#include "winfer/model.h"

namespace winfer::cli {

const char* version() { return "0.1.0"; }

int run_info(const InfoArgs& args) {
  LoadOptions options;
  options.weights_path = args.weights;
  options.confine_to = args.confine_to;
  options.allow_missing_weights = true;
  auto model = Model::load(args.model, options);
  if (!model.ok()) return fail(model.status());
  const Model& m = *model.value();

  std::printf("model    %s (%s)\n", m.name().c_str(), m.path().c_str());
  std::printf("input    %s %s\n", m.input_name().c_str(), m.input_shape().to_string().c_str());
  std::printf("weights  %s%s\n", m.weights_source().c_str(),
              m.structure_only() ? " (structure only: batch norm not folded, activations not fused)" : "");
  if (m.quantized()) {
    int real = 0, simulated = 0;
    for (const LayerInfo& layer : m.layers()) {
      real += layer.precision == "int8";
      simulated += layer.precision == "int8 (simulated)";
    }
    std::printf("quantized  %d INT8 layer(s) on the INT8 kernels (u8 tensors between them)", real);
    if (simulated > 0) {
      std::printf(", %d simulated: FP32 kernels between u8 roundings (the accuracy of INT8, not its speed)", simulated);
    }
    std::printf("\n");
  }
  std::printf("\n%-4s %-28s %-18s %-20s %12s %12s  %s\n", "#", "layer", "op", "output", "params", "FLOPs", "fused");
  int index = 0;
  for (const LayerInfo& layer : m.layers()) {
    std::string shapes, fused;
    for (const Shape& s : layer.output_shapes) shapes += (shapes.empty() ? "" : " ") + s.to_string();
    for (const std::string& f : layer.fused) fused += (fused.empty() ? "+" : " +") + f;
    if (!layer.precision.empty()) fused += (fused.empty() ? "[" : " [") + layer.precision + "]";
    std::printf("%-4d %-28s %-18s %-20s %12s %12s  %s\n", index++, layer.name.c_str(), layer.type.c_str(),
                shapes.c_str(), layer.params ? human_count(double(layer.params)).c_str() : "-",
                layer.flops ? human_count(double(layer.flops)).c_str() : "-", fused.c_str());
  }
  std::string outputs;
  for (size_t i = 0; i < m.output_names().size(); ++i) {
    outputs += (i ? ", " : "") + m.output_names()[i] + " " + m.output_shapes()[i].to_string();
  }
  std::printf("\noutputs  %s\n", outputs.c_str());
  std::printf("params   %lld (%s)\n", static_cast<long long>(m.total_params()),
              human_count(double(m.total_params())).c_str());
  // FLOPs count a multiply-add as 2 operations; torchvision's model cards list multiply-adds
  // ("GFLOPS" 4.09 for resnet50), so print both.
  std::printf("FLOPs    %s (%lld), i.e. %s multiply-adds, per batch of %lld (FLOPs = 2 x multiply-adds)\n",
              human_count(double(m.total_flops())).c_str(), static_cast<long long>(m.total_flops()),
              human_count(double(m.total_flops()) / 2).c_str(), static_cast<long long>(m.input_shape().n()));
  return 0;
}

}  // namespace winfer::cli
