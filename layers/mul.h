// mul: element-wise product of two tensors, the second either of the first's shape or
// [N, C, 1, 1] against a first of [N, C, H, W] (broadcast over H and W): squeeze-and-
// excitation's channel scale (MobileNetV3, EfficientNet, RegNetY).
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

// flops() stays 0: one multiplication per element, no multiply-adds.
class MulOp : public Op {
 public:
  const char* type() const override { return "mul"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  // Each output element reads the same element of the first input (and of the second, or its
  // channel's scale) just before writing it: the output may take either input's storage (the
  // planner only aliases buffers of the same size).
  bool can_run_in_place(const std::vector<Shape>&) const override { return true; }

  // Whether `second` is a [N, C, 1, 1] scale broadcast over `first`'s H and W (rather than the
  // same shape).
  static bool broadcasts(const Shape& first, const Shape& second) { return first != second; }
};

Result<std::unique_ptr<Op>> create_mul(const Attrs& attrs);

}  // namespace winfer
