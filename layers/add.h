// add: element-wise sum of two tensors of identical shape (no broadcasting), as in a ResNet
// shortcut. At load it may take a following relu/relu6 into its kernel, and a convolution
// producing one of its operands may absorb it in turn, with its activation (the rules
// activation_epilogue and conv_add, engine/src/rewrites/).
#pragma once

#include <memory>

#include "engine/src/op.h"
#include "layers/layer_util.h"

namespace winfer {

// flops() stays 0: one addition per element, no multiply-adds.
class AddOp : public Op {
 public:
  const char* type() const override { return "add"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  // add() is element-wise: the output may be either operand (kernels/cpu/elementwise.h).
  bool can_run_in_place(const std::vector<Shape>&) const override { return true; }

  // The activation applied to the sum (kNone unless a relu/relu6 was absorbed).
  Activation activation() const { return activation_; }
  // Fusion (engine/src/rewrites/): false when there is an activation already.
  bool set_activation(Activation act) { return set_fused_activation(&activation_, act); }

 private:
  Activation activation_ = Activation::kNone;
};

Result<std::unique_ptr<Op>> create_add(const Attrs& attrs);

}  // namespace winfer
