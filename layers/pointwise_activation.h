// sigmoid, hardsigmoid, hardswish, silu: element-wise activations other than clamps (PyTorch's
// definitions, kernels/common/pointwise.h). Layers of their own: the convolution epilogues apply
// an activation as a clamp inside each algorithm's store, which none of these is, so the rule
// activation_epilogue does not fuse them.
#pragma once

#include "engine/src/op.h"
#include "kernels/common/pointwise.h"

namespace winfer {

class PointwiseActivationOp : public Op {
 public:
  explicit PointwiseActivationOp(PointwiseFn fn) : fn_(fn) {}
  const char* type() const override { return pointwise_fn_name(fn_); }
  PointwiseFn fn() const { return fn_; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  // pointwise_activation reads element i only to write element i.
  bool can_run_in_place(const std::vector<Shape>&) const override { return true; }

 private:
  PointwiseFn fn_;
};

Result<std::unique_ptr<Op>> create_sigmoid(const Attrs& attrs);
Result<std::unique_ptr<Op>> create_hardsigmoid(const Attrs& attrs);
Result<std::unique_ptr<Op>> create_hardswish(const Attrs& attrs);
Result<std::unique_ptr<Op>> create_silu(const Attrs& attrs);

}  // namespace winfer
