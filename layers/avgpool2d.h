// avgpool2d: PyTorch nn.AvgPool2d (kernel_size, stride = kernel_size, symmetric padding,
// ceil_mode, count_include_pad). divisor_override is not supported.
#pragma once

#include <memory>

#include "engine/src/op.h"
#include "layers/pool2d_common.h"

namespace winfer {

// flops() stays 0: window sums are additions, not the multiply-adds that flops() counts.
class AvgPool2dOp : public Op {
 public:
  AvgPool2dOp(const Pool2dAttrs& a, bool count_include_pad) : attrs_(a), count_include_pad_(count_include_pad) {}
  const char* type() const override { return "avgpool2d"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;

  const Pool2dAttrs& attrs() const { return attrs_; }
  bool count_include_pad() const { return count_include_pad_; }

 private:
  Pool2dAttrs attrs_;
  bool count_include_pad_;
};

Result<std::unique_ptr<Op>> create_avgpool2d(const Attrs& attrs);

}  // namespace winfer
