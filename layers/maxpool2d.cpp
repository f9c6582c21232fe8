#include "layers/maxpool2d.h"

#include "kernels/cpu/pooling.h"

#if defined(WINFER_WITH_CUDA)
#include "kernels/cuda/pooling.h"
#endif
#include "layers/pool2d_common.h"

namespace winfer {
namespace {

class MaxPoolKernel : public Kernel {
 public:
  explicit MaxPoolKernel(const PoolParams& p) : params_(p) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*,
           int threads) const override {
    maxpool2d_nhwc(params_, in[0]->data(), out[0]->data(), threads);
  }

 private:
  PoolParams params_;
};

// flops() stays 0: comparisons are not multiply-adds.
class MaxPool2dOp : public Op {
 public:
  explicit MaxPool2dOp(const Pool2dAttrs& a) : attrs_(a) {}
  const char* type() const override { return "maxpool2d"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    Shape out;
    WINFER_RETURN_IF_ERROR(pool2d_output_shape(attrs_, inputs[0], &out));
    *outputs = {out};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(new MaxPoolKernel(pool2d_params(attrs_, inputs[0], outputs[0])));
  }
#if defined(WINFER_WITH_CUDA)
  Result<std::unique_ptr<CudaKernel>> compile_cuda(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                                   const CudaCompileOptions&) const override {
    const PoolParams p = pool2d_params(attrs_, inputs[0], outputs[0]);
    return make_cuda_kernel("", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) { return cuda::maxpool2d_nhwc(p, in[0], out[0], ctx.stream); });
  }
#endif

 private:
  Pool2dAttrs attrs_;
};

}  // namespace

Result<std::unique_ptr<Op>> create_maxpool2d(const Attrs& attrs) {
  Pool2dAttrs a;
  WINFER_RETURN_IF_ERROR(read_pool2d_attrs(attrs, /*with_dilation=*/true, &a));
  return std::unique_ptr<Op>(new MaxPool2dOp(a));
}

}  // namespace winfer
