// conv2d_int8: a quantized model's INT8 convolution (docs/MODEL_FORMAT.md, "Quantized models"):
// u8 NHWC input and output, s8 per-channel weights packed once at load, bias, requantization and
// the fused ReLU/ReLU6 in the kernels' epilogue (kernels/cpu/conv_s8.h). It replaces, after
// fusion, a conv2d layer the model lists as int8 (engine/src/quant_model.cpp), keeping what that
// layer absorbed: an activation, a residual add (the residual a u8 input of its own scale) or a
// max pooling. It is built only where its kernels compute the fused layer; otherwise the layer
// runs simulated (quant_model.h says how and why).
#pragma once

#include <memory>
#include <string>

#include "layers/conv2d.h"
#include "layers/int8_conv.h"

namespace winfer {

class Conv2dInt8Op : public Op {
 public:
  const char* type() const override { return "conv2d_int8"; }
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

  const Int8LayerQuant& quant() const { return quant_; }

  // The INT8 form of `fp32` (after fusion) for input shape `input`, or an error saying what its
  // kernels cannot compute (an absorbed depthwise convolution or pointwise function, a residual
  // on a depthwise convolution) or what is out of range in the weights.
  static Result<std::unique_ptr<Op>> from(const Conv2dOp& fp32, const Shape& input, const Int8LayerWeights& weights,
                                          const Int8LayerQuant& quant);

 private:
  explicit Conv2dInt8Op(const Conv2dAttrs& attrs) : shape_(attrs) {}
  Conv2dOp shape_;  // the layer's attributes and fusions, without weights: shapes, FLOPs, parameters
  Int8PackedConv packed_;
  Int8LayerQuant quant_;
};

}  // namespace winfer
