// Fuzz target: the ONNX importer (protobuf parse, header checks, node ordering, constant
// folding of shape subgraphs, operators as winfer layers, weights from raw_data, typed fields
// and external files). The input is written to model.onnx in a private folder, so an external
// data `location` may name model.onnx itself (the only file there). Model::load must give a
// model or an error with a message, never crash; a model that loads with a small input and few
// FLOPs is run once, on a fixed input.
#include <cstdint>
#include <cstdlib>

#include "fuzz_util.h"
#include "winfer/model.h"
#include "winfer/session.h"
#include "winfer/tensor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = winfer_fuzz::write_input("model.onnx", data, size);
  auto model = winfer::Model::load(path);
  winfer_fuzz::require_message(model.status());
  if (!model.ok()) return 0;
  const std::shared_ptr<const winfer::Model>& m = model.value();
  (void)m->layers();
  (void)m->total_params();
  (void)m->weight_bytes();
  (void)m->output_shapes();
  if (m->input_dim_fixed().size() != static_cast<size_t>(m->input_shape().rank())) std::abort();
  // Run it when that is cheap: a small input, a small plan.
  if (m->input_shape().numel() > (int64_t(1) << 14) || m->total_flops() > (int64_t(1) << 24)) return 0;
  winfer::SessionOptions options;
  options.memory_budget = size_t(64) << 20;
  auto session = winfer::Session::create(m, options);
  winfer_fuzz::require_message(session.status());
  if (!session.ok()) return 0;
  winfer::Tensor input = winfer::Tensor::allocate(m->input_shape());
  for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] = float(i % 7) - 3.0f;
  auto output = session.value()->run(input);
  winfer_fuzz::require_message(output.status());
  return 0;
}
