// quantize: float32 -> u8 on a tensor's grid, q = clamp(round(x / scale) + zero_point, 0, 255)
// (engine/src/quantization.h). Not a layer of model files: the lowering of a quantized model
// (engine/src/quant_model.cpp) puts one where a float32 tensor enters its INT8 layers.
#pragma once

#include <memory>

#include "engine/src/op.h"
#include "engine/src/quantization.h"

namespace winfer {

class QuantizeOp : public Op {
 public:
  explicit QuantizeOp(const quant::TensorQuant& q) : q_(q) {}
  const char* type() const override { return "quantize"; }
  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    *outputs = {inputs[0]};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  const quant::TensorQuant& grid() const { return q_; }

 private:
  quant::TensorQuant q_;
};

}  // namespace winfer
