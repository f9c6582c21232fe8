// linear_int8: a quantized model's INT8 linear layer: u8 [N, in] -> u8 [N, out], s8 per-row
// weights, run as a 1x1 INT8 convolution over N pixels (layers/int8_conv.h) with the fused
// ReLU/ReLU6 in its epilogue. It replaces, after fusion, a linear layer the model lists as int8
// (engine/src/quant_model.cpp).
#pragma once

#include <memory>

#include "layers/int8_conv.h"
#include "layers/linear.h"

namespace winfer {

class LinearInt8Op : public Op {
 public:
  const char* type() const override { return "linear_int8"; }
  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    return shape_.infer_shapes(inputs, outputs);
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  int64_t flops(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) const override {
    return shape_.flops(inputs, outputs);
  }
  int64_t param_count() const override { return shape_.param_count(); }
  size_t weight_bytes() const override { return packed_.blob.bytes(); }

  static Result<std::unique_ptr<Op>> from(const LinearOp& fp32, const Int8LayerWeights& weights,
                                          const Int8LayerQuant& quant);

 private:
  LinearInt8Op(int64_t in, int64_t out, bool bias) : shape_(in, out, bias) {}
  // [N, in] as N pixels of `in` channels.
  ConvParams params_for(int64_t rows) const;
  LinearOp shape_;  // the layer's sizes, without weights
  Int8PackedConv packed_;
  Int8LayerQuant quant_;
  Activation activation_ = Activation::kNone;
};

}  // namespace winfer
