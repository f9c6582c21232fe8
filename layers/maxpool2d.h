// maxpool2d: PyTorch nn.MaxPool2d (kernel_size, stride = kernel_size, symmetric padding,
// dilation, ceil_mode). Padding never wins the max: the window covers only in-bounds taps.
#pragma once

#include <memory>

#include "engine/src/op.h"
#include "layers/pool2d_common.h"

namespace winfer {

// flops() stays 0: comparisons are not multiply-adds. A conv2d may absorb it at load (the rule
// conv_maxpool, engine/src/rewrites/).
class MaxPool2dOp : public Op {
 public:
  explicit MaxPool2dOp(const Pool2dAttrs& a) : attrs_(a) {}
  const char* type() const override { return "maxpool2d"; }
  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  const Pool2dAttrs& attrs() const { return attrs_; }

 private:
  Pool2dAttrs attrs_;
};

Result<std::unique_ptr<Op>> create_maxpool2d(const Attrs& attrs);

}  // namespace winfer
