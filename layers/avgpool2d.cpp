#include "layers/avgpool2d.h"

#include "kernels/cpu/pooling.h"

#include "layers/pool2d_common.h"

namespace winfer {
namespace {

class AvgPoolKernel : public Kernel {
 public:
  AvgPoolKernel(const PoolParams& p, bool count_include_pad) : params_(p), count_include_pad_(count_include_pad) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    avgpool2d_nhwc(params_, count_include_pad_, in[0]->data(), out[0]->data(), threads);
  }

 private:
  PoolParams params_;
  bool count_include_pad_;
};

}  // namespace

Status AvgPool2dOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  Shape out;
  WINFER_RETURN_IF_ERROR(pool2d_output_shape(attrs_, inputs[0], &out));
  *outputs = {out};
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> AvgPool2dOp::compile(const std::vector<Shape>& inputs,
                                                     const std::vector<Shape>& outputs, const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new AvgPoolKernel(pool2d_params(attrs_, inputs[0], outputs[0]), count_include_pad_));
}

Result<std::unique_ptr<Op>> create_avgpool2d(const Attrs& attrs) {
  Pool2dAttrs a;
  bool count_include_pad = true;
  WINFER_RETURN_IF_ERROR(read_pool2d_attrs(attrs, /*with_dilation=*/false, &a));
  WINFER_RETURN_IF_ERROR(attrs.get_bool("count_include_pad", &count_include_pad, true));
  return std::unique_ptr<Op>(new AvgPool2dOp(a, count_include_pad));
}

}  // namespace winfer
