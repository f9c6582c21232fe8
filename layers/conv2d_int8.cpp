#include "layers/conv2d_int8.h"

namespace winfer {

Result<std::unique_ptr<Op>> Conv2dInt8Op::from(const Conv2dOp& fp32, const Shape& input,
                                               const Int8LayerWeights& weights, const Int8LayerQuant& quant) {
  if (fp32.then() != nullptr) return unsupported("no INT8 kernel runs a fused convolution pair");
  if (fp32.pointwise()) return unsupported("no INT8 kernel applies a fused pointwise function");
  if (fp32.has_input_scale()) return unsupported("no INT8 kernel scales its input's channels (a fused mul)");
  const bool depthwise = fp32.attrs().depthwise();
  if (fp32.has_residual() && (depthwise || !quant.residual)) {
    return unsupported("the INT8 depthwise kernel adds no residual");
  }
  std::unique_ptr<Conv2dInt8Op> op(new Conv2dInt8Op(fp32.attrs()));
  // The same fusions on the weightless copy: its shapes are the layer's.
  const bool fused =
      fp32.has_residual() ? op->shape_.add_residual(fp32.activation()) : op->shape_.set_activation(fp32.activation());
  if (!fused || (fp32.pool() && !op->shape_.absorb_pool(*fp32.pool()))) {
    return internal_error("the INT8 convolution could not take the layer's fusions");
  }
  op->record_fused_of(fp32);
  WINFER_ASSIGN_OR_RETURN(op->packed_, pack_int8_conv(fp32.params_for(input), weights, quant, fp32.activation()));
  op->quant_ = quant;
  return std::unique_ptr<Op>(std::move(op));
}

Result<std::unique_ptr<Kernel>> Conv2dInt8Op::compile(const std::vector<Shape>& inputs,
                                                      const std::vector<Shape>& outputs,
                                                      const CompileOptions& options) const {
  const ConvParams p = shape_.params_for(inputs[0]);
  std::string note;
  if (shape_.has_residual()) {
    note = shape_.activation() == Activation::kNone
               ? "(fused add)"
               : std::string("(fused add+") + activation_name(shape_.activation()) + ")";
  } else if (shape_.activation() != Activation::kNone) {
    note = std::string("(fused ") + activation_name(shape_.activation()) + ")";
  }
  if (shape_.pool()) note += " (fused maxpool)";
  return make_int8_conv_kernel(p, packed_, quant_, shape_.pool_params(p, outputs[0]), options, note);
}

}  // namespace winfer
