// dequantize: u8 -> float32, x = scale * (q - zero_point) (engine/src/quantization.h). Not a
// layer of model files: the lowering of a quantized model (engine/src/quant_model.cpp) puts one
// where a u8 tensor leaves its INT8 layers for a float32 layer or a model output.
#pragma once

#include <memory>

#include "engine/src/op.h"
#include "engine/src/quantization.h"

namespace winfer {

class DequantizeOp : public Op {
 public:
  explicit DequantizeOp(const quant::TensorQuant& q) : q_(q) {}
  const char* type() const override { return "dequantize"; }
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
