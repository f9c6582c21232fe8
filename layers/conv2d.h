// conv2d: 2-D convolution with stride, asymmetric padding, dilation, groups and bias
// (PyTorch nn.Conv2d semantics, weights OIHW). Absorbs a following batchnorm2d (folded into
// weight and bias at load), relu/relu6 (fused epilogue), and an add of its output and a
// residual (a ResNet shortcut): the residual becomes a second input, added in the epilogue
// before the activation, out = act(conv(x) + bias + residual).
#pragma once

#include "engine/src/op.h"
#include "layers/layer_util.h"

namespace winfer {

struct Conv2dAttrs {
  int64_t in_channels = 0, out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  Padding padding;
  int64_t groups = 1;
  bool bias = true;
};

class Conv2dOp : public Op {
 public:
  explicit Conv2dOp(const Conv2dAttrs& attrs) : attrs_(attrs) {}
  const char* type() const override { return "conv2d"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Status load_params(const std::string& prefix, const std::vector<Shape>& inputs,
                     ParamSource& params) override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs,
                                          const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
#if defined(WINFER_WITH_CUDA)
  Result<std::unique_ptr<CudaKernel>> compile_cuda(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                                   const CudaCompileOptions& options) const override;
#endif
  int64_t flops(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) const override;
  int64_t param_count() const override;
  size_t weight_bytes() const override { return weight_.bytes() + bias_.bytes(); }
  bool try_absorb(const Op& next) override;
  bool try_absorb_residual(const Op& next) override;

  // The convolution for a given input shape (NCHW).
  ConvParams params_for(const Shape& input) const;
  const Tensor& weight() const { return weight_; }  // OIHW, BN folded in
  const Tensor& bias() const { return bias_; }      // [Co]; empty when there is none
  Activation activation() const { return activation_; }
  // True once an add was absorbed: inputs are then (x, residual).
  bool has_residual() const { return has_residual_; }

 private:
  Conv2dAttrs attrs_;
  Tensor weight_, bias_;
  Activation activation_ = Activation::kNone;
  bool has_residual_ = false;
};

Result<std::unique_ptr<Op>> create_conv2d(const Attrs& attrs);

}  // namespace winfer
