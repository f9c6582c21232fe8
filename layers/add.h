// add: element-wise sum of two tensors of identical shape (no broadcasting), as in a ResNet
// shortcut. Absorbs a following relu/relu6. A convolution producing one of its operands may
// absorb it in turn (Conv2dOp::try_absorb_residual), with its activation.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

// flops() stays 0: one addition per element, no multiply-adds.
class AddOp : public Op {
 public:
  const char* type() const override { return "add"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  bool try_absorb(const Op& next) override;
  // add() is element-wise: the output may be either operand (kernels/cpu/elementwise.h).
  bool can_run_in_place(const std::vector<Shape>&) const override { return true; }

  // The activation applied to the sum (kNone unless a relu/relu6 was absorbed).
  Activation activation() const { return activation_; }

 private:
  Activation activation_ = Activation::kNone;
};

Result<std::unique_ptr<Op>> create_add(const Attrs& attrs);

}  // namespace winfer
