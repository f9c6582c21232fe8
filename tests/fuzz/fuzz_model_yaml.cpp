// Fuzz target: the YAML model loader (parse, op creation, graph, shape inference, inline
// tensors, fusion). The model is loaded as `winfer info` loads it (structure only when no weights
// are named), then once more without fusion. Nothing is allocated per parameter beyond what the
// YAML itself holds, so a run's memory stays proportional to the input.
#include <cstdint>

#include "fuzz_util.h"
#include "winfer/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = winfer_fuzz::write_input("model.yaml", data, size);
  winfer::LoadOptions options;
  options.allow_missing_weights = true;
  auto model = winfer::Model::load(path, options);
  winfer_fuzz::require_message(model.status());
  if (model.ok()) {
    // Everything a loaded model reports must be computable without tripping over itself.
    (void)model.value()->layers();
    (void)model.value()->total_flops();
    (void)model.value()->total_params();
    (void)model.value()->weight_bytes();
    (void)model.value()->output_shapes();
    options.fuse = false;
    auto unfused = winfer::Model::load(path, options);
    winfer_fuzz::require_message(unfused.status());
    if (!unfused.ok()) std::abort();  // loading must not depend on fusion
  }
  return 0;
}
