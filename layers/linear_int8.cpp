#include "layers/linear_int8.h"

namespace winfer {

ConvParams LinearInt8Op::params_for(int64_t rows) const {
  ConvParams p;
  p.batch = rows;
  p.in_channels = shape_.in_features();
  p.in_h = p.in_w = 1;
  p.out_channels = shape_.out_features();
  return p;
}

Result<std::unique_ptr<Op>> LinearInt8Op::from(const LinearOp& fp32, const Int8LayerWeights& weights,
                                               const Int8LayerQuant& quant) {
  if (quant.residual) return internal_error("a linear layer has no residual");
  std::unique_ptr<LinearInt8Op> op(new LinearInt8Op(fp32.in_features(), fp32.out_features(), fp32.has_bias()));
  op->activation_ = fp32.activation();
  op->record_fused_of(fp32);
  WINFER_ASSIGN_OR_RETURN(op->packed_, pack_int8_conv(op->params_for(1), weights, quant, fp32.activation()));
  op->quant_ = quant;
  return std::unique_ptr<Op>(std::move(op));
}

Result<std::unique_ptr<Kernel>> LinearInt8Op::compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                                      const CompileOptions& options) const {
  const std::string note =
      activation_ == Activation::kNone ? std::string() : std::string("(fused ") + activation_name(activation_) + ")";
  return make_int8_conv_kernel(params_for(inputs[0][0]), packed_, quant_, std::nullopt, options, note);
}

}  // namespace winfer
