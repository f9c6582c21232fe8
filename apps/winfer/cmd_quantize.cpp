// `winfer quantize MODEL --dataset fashion-mnist|--calibrate DIR -o OUT.int8.yaml`: post-training
// static INT8 quantization (winfer/quantize.h). Prints which layers are INT8 or FP32 and why, and
// the range and u8 parameters of every activation tensor.
#include <cstdio>

#include "apps/winfer/commands.h"
#include "apps/winfer/format.h"
#include "winfer/quantize.h"

namespace winfer::cli {

int run_quantize(const QuantizeArgs& args) {
  if ((args.calibrate.empty() ? 0 : 1) + (args.dataset.empty() ? 0 : 1) + (args.random_images > 0 ? 1 : 0) != 1) {
    return fail(invalid_argument(
        "quantize: give one of --calibrate DIR (images), --dataset fashion-mnist or --random-images N"));
  }
  QuantizeOptions options;
  options.method = args.method;
  options.percentile = args.percentile;
  options.calibrate_dir = args.calibrate;
  options.dataset = args.dataset;
  options.dataset_dir = args.data;
  options.images = args.images;
  options.keep_fp32 = args.keep_fp32;
  options.int8 = args.int8;
  options.weights_path = args.weights;
  options.threads = args.threads;
  options.random_weights_seed = args.random_weights_seed;
  options.random_images = args.random_images;
  auto quantized = quantize_model(args.model, args.output, options);
  if (!quantized.ok()) return fail(quantized.status());
  const QuantizeReport& r = quantized.value();

  std::printf("calibration  %s (%lld images), method %s\n", r.calibration.c_str(), static_cast<long long>(r.images),
              r.method.c_str());
  std::printf("batch norm   %zu folded into convolutions\n\n", r.folded.size());
  std::printf("%-28s %-7s %-9s %s\n", "layer", "op", "precision", "why");
  int int8 = 0;
  for (const QuantizedLayerInfo& l : r.layers) {
    int8 += l.int8;
    std::printf("%-28s %-7s %-9s %s\n", l.name.c_str(), l.type.c_str(), l.int8 ? "int8" : "fp32",
                l.int8 ? "" : l.reason.c_str());
  }
  std::printf("\n%-28s %12s %12s %12s %12s %12s %5s\n", "tensor", "min", "max", "range lo", "range hi", "scale",
              "zero");
  for (const QuantizedTensorInfo& t : r.tensors) {
    std::printf("%-28s %12.5g %12.5g %12.5g %12.5g %12.5g %5d\n", t.name.c_str(), t.min, t.max, t.lo, t.hi, t.scale,
                t.zero_point);
  }
  std::printf(
      "\n%d of %zu conv2d/linear layers INT8 (on the INT8 kernels; `winfer info` names any that run "
      "simulated)\n",
      int8, r.layers.size());
  std::printf("wrote %s and %s\n", r.yaml_path.c_str(), r.weights_path.c_str());
  return 0;
}

}  // namespace winfer::cli
