#include "layers/mul.h"

#include "kernels/cpu/pointwise.h"

namespace winfer {
namespace {

class MulKernel : public Kernel {
 public:
  MulKernel(bool broadcast, const Shape& shape) : broadcast_(broadcast), shape_(shape) {}
  // Same shapes, same layout: a flat product. A [N, C, 1, 1] scale is laid out [N][C] in NCHW
  // and NHWC alike, and the first input is NHWC: rows of C channels, H*W rows per image.
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    if (!broadcast_) {
      mul(in[0]->data(), in[1]->data(), out[0]->data(), in[0]->numel(), threads);
    } else {
      scale_channels_nhwc(in[0]->data(), in[1]->data(), out[0]->data(), shape_.n(), shape_.h() * shape_.w(), shape_.c(),
                          threads);
    }
  }

 private:
  bool broadcast_;
  Shape shape_;
};

}  // namespace

Status MulOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  const Shape &a = inputs[0], &b = inputs[1];
  const bool channel_scale = a.rank() == 4 && b == Shape{a.n(), a.c(), 1, 1};
  if (a != b && !channel_scale) {
    return shape_mismatch("the second input must have the first's shape or be [N, C, 1, 1] against [N, C, H, W], got " +
                          a.to_string() + " and " + b.to_string());
  }
  *outputs = {a};
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MulOp::compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                               const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new MulKernel(broadcasts(inputs[0], inputs[1]), inputs[0]));
}

Result<std::unique_ptr<Op>> create_mul(const Attrs&) { return std::unique_ptr<Op>(new MulOp()); }

}  // namespace winfer
