// linear: PyTorch nn.Linear on [N, in_features] -> [N, out_features]; weight [out, in],
// optional bias [out]. At load it may take a following relu/relu6 into its kernel's epilogue
// (the rule activation_epilogue, engine/src/rewrites/).
#pragma once

#include <memory>
#include <string>

#include "engine/src/op.h"
#include "layers/layer_util.h"

namespace winfer {

class LinearOp : public Op {
 public:
  LinearOp(int64_t in_features, int64_t out_features, bool bias)
      : in_features_(in_features), out_features_(out_features), has_bias_(bias) {}
  const char* type() const override { return "linear"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Status load_params(const std::string& prefix, const std::vector<Shape>& inputs, ParamSource& params) override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  int64_t flops(const std::vector<Shape>& inputs, const std::vector<Shape>&) const override {
    return 2 * inputs[0][0] * in_features_ * out_features_;
  }
  int64_t param_count() const override { return out_features_ * in_features_ + (has_bias_ ? out_features_ : 0); }
  size_t weight_bytes() const override { return weight_.bytes() + bias_.bytes(); }
  void for_each_weight(const std::function<void(Tensor&)>& f) override {
    for (Tensor* t : {&weight_, &bias_}) {
      if (!t->empty()) f(*t);
    }
  }

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  bool has_bias() const { return has_bias_; }
  const Tensor& weight() const { return weight_; }  // [out_features, in_features]
  const Tensor& bias() const { return bias_; }      // [out_features]; empty when there is none
  // The activation of its epilogue (kNone unless a relu/relu6 was absorbed).
  Activation activation() const { return activation_; }
  // Fusion (engine/src/rewrites/): false when there is an activation already.
  bool set_activation(Activation act) { return set_fused_activation(&activation_, act); }

 private:
  int64_t in_features_, out_features_;
  bool has_bias_;
  Tensor weight_, bias_;
  Activation activation_ = Activation::kNone;
};

Result<std::unique_ptr<Op>> create_linear(const Attrs& attrs);

}  // namespace winfer
