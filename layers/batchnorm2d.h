// batchnorm2d (inference): y = (x - running_mean) / sqrt(running_var + eps) * weight + bias,
// kept as a per-channel scale and shift. Folded into the preceding convolution at load when
// that convolution's output feeds only this op (the rule conv_batchnorm, engine/src/rewrites/);
// runs standalone otherwise, where it may take a following relu/relu6 into its kernel.
#pragma once

#include <vector>

#include "engine/src/op.h"
#include "layers/layer_util.h"

namespace winfer {

class BatchNorm2dOp : public Op {
 public:
  BatchNorm2dOp(int64_t num_features, double eps) : num_features_(num_features), eps_(eps) {}
  const char* type() const override { return "batchnorm2d"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Status load_params(const std::string& prefix, const std::vector<Shape>& inputs, ParamSource& params) override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  int64_t param_count() const override { return 2 * num_features_; }  // weight, bias
  size_t weight_bytes() const override { return (scale_.size() + shift_.size()) * sizeof(float); }
  // scale_shift_channels_nhwc reads element i only to write element i.
  bool can_run_in_place(const std::vector<Shape>&) const override { return true; }

  // Per-channel affine form, valid after load_params.
  const std::vector<float>& scale() const { return scale_; }
  const std::vector<float>& shift() const { return shift_; }
  // The activation applied after it (kNone unless a relu/relu6 was absorbed).
  Activation activation() const { return activation_; }
  // Fusion (engine/src/rewrites/): false when there is an activation already.
  bool set_activation(Activation act) { return set_fused_activation(&activation_, act); }
  // The profile's note for this layer on any device: "standalone[, fused relu]".
  std::string kernel_description() const;

 private:
  int64_t num_features_;
  double eps_;
  std::vector<float> scale_, shift_;
  Activation activation_ = Activation::kNone;
};

Result<std::unique_ptr<Op>> create_batchnorm2d(const Attrs& attrs);

}  // namespace winfer
