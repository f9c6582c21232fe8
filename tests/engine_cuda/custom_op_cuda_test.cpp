// A custom operator (winfer/custom_op.h) has a CPU kernel only: a session on a CUDA device
// refuses a model that uses one, naming the op, instead of failing later or running it on the
// host behind the caller's back.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels/cuda/runtime.h"
#include "winfer/custom_op.h"
#include "winfer/model.h"
#include "winfer/session.h"

namespace {

class Negate : public winfer::CustomOp {
 public:
  winfer::Status infer_shapes(const std::vector<winfer::Shape>& inputs,
                              std::vector<winfer::Shape>* outputs) const override {
    *outputs = {inputs[0]};
    return winfer::Status::Ok();
  }
  void run(const std::vector<const winfer::Tensor*>& inputs, const std::vector<winfer::Tensor*>& outputs,
           const winfer::CustomOpContext&) const override {
    for (int64_t i = 0; i < inputs[0]->numel(); ++i) outputs[0]->data()[i] = -inputs[0]->data()[i];
  }
};

}  // namespace

TEST_CASE("cuda session: a custom op has no CUDA kernel, and the session says so") {
  winfer::CustomOpDefinition definition;
  definition.type = "test_cuda_negate";
  definition.create = [](const winfer::CustomOpAttrs&) -> winfer::Result<std::unique_ptr<winfer::CustomOp>> {
    return std::unique_ptr<winfer::CustomOp>(new Negate());
  };
  REQUIRE(winfer::register_custom_op(definition).ok());
  const std::string yaml =
      "format: winfer/1\ninput: {name: input, shape: [1, 2, 3, 3]}\noutputs: [neg]\nlayers:\n"
      "  - {name: act, op: relu}\n  - {name: neg, op: test_cuda_negate}\n";
  auto model = winfer::Model::load_from_memory(yaml, nullptr, 0, {}, "custom.yaml");
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  // The CPU runs it.
  auto cpu = winfer::Session::create(model.value());
  REQUIRE(cpu.ok());
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return;  // native, without a GPU
  winfer::SessionOptions options;
  options.device = "cuda";
  auto session = winfer::Session::create(model.value(), options);
  REQUIRE_FALSE(session.ok());
  INFO(session.status().message());
  CHECK(session.status().code() == winfer::ErrorCode::kUnsupported);
  CHECK(session.status().message().find("layer 'neg' (test_cuda_negate)") != std::string::npos);
  CHECK(session.status().message().find("operator 'test_cuda_negate' has no CUDA kernel") != std::string::npos);
}
