// relu / relu6: element-wise activations. At load the layer before one may take it into its
// kernel's epilogue (the rule activation_epilogue, engine/src/rewrites/).
#pragma once

#include "engine/src/op.h"

namespace winfer {

class ActivationOp : public Op {
 public:
  explicit ActivationOp(Activation kind) : kind_(kind) {}
  const char* type() const override { return activation_name(kind_); }
  Activation kind() const { return kind_; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  // activation_inplace_or_copy reads element i only to write element i.
  bool can_run_in_place(const std::vector<Shape>&) const override { return true; }

 private:
  Activation kind_;
};

Result<std::unique_ptr<Op>> create_relu(const Attrs& attrs);
Result<std::unique_ptr<Op>> create_relu6(const Attrs& attrs);

// What a layer that absorbed `act` says in the profile: "fused relu", or "" for kNone.
std::string fused_activation_note(Activation act);

}  // namespace winfer
