#include "layers/maxpool2d.h"

#include "kernels/cpu/pooling.h"

namespace winfer {
namespace {

class MaxPoolKernel : public Kernel {
 public:
  explicit MaxPoolKernel(const PoolParams& p) : params_(p) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    maxpool2d_nhwc(params_, in[0]->data(), out[0]->data(), threads);
  }

 private:
  PoolParams params_;
};

}  // namespace

Status MaxPool2dOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  Shape out;
  WINFER_RETURN_IF_ERROR(pool2d_output_shape(attrs_, inputs[0], &out));
  *outputs = {out};
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> MaxPool2dOp::compile(const std::vector<Shape>& inputs,
                                                     const std::vector<Shape>& outputs, const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new MaxPoolKernel(pool2d_params(attrs_, inputs[0], outputs[0])));
}

Result<std::unique_ptr<Op>> create_maxpool2d(const Attrs& attrs) {
  Pool2dAttrs a;
  WINFER_RETURN_IF_ERROR(read_pool2d_attrs(attrs, /*with_dilation=*/true, &a));
  return std::unique_ptr<Op>(new MaxPool2dOp(a));
}

}  // namespace winfer
