#include "layers/avgpool2d.h"

#include "kernels/cpu/pooling.h"

#if defined(WINFER_WITH_CUDA)
#include "kernels/cuda/pooling.h"
#endif
#include "layers/pool2d_common.h"

namespace winfer {
namespace {

class AvgPoolKernel : public Kernel {
 public:
  AvgPoolKernel(const PoolParams& p, bool count_include_pad) : params_(p), count_include_pad_(count_include_pad) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*,
           int threads) const override {
    avgpool2d_nhwc(params_, count_include_pad_, in[0]->data(), out[0]->data(), threads);
  }

 private:
  PoolParams params_;
  bool count_include_pad_;
};

// flops() stays 0: window sums are additions, not the multiply-adds that flops() counts.
class AvgPool2dOp : public Op {
 public:
  AvgPool2dOp(const Pool2dAttrs& a, bool count_include_pad) : attrs_(a), count_include_pad_(count_include_pad) {}
  const char* type() const override { return "avgpool2d"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    Shape out;
    WINFER_RETURN_IF_ERROR(pool2d_output_shape(attrs_, inputs[0], &out));
    *outputs = {out};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(
        new AvgPoolKernel(pool2d_params(attrs_, inputs[0], outputs[0]), count_include_pad_));
  }
#if defined(WINFER_WITH_CUDA)
  Result<std::unique_ptr<CudaKernel>> compile_cuda(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                                   const CudaCompileOptions&) const override {
    const PoolParams p = pool2d_params(attrs_, inputs[0], outputs[0]);
    const bool count_include_pad = count_include_pad_;
    return make_cuda_kernel("", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
      return cuda::avgpool2d_nhwc(p, count_include_pad, in[0], out[0], ctx.stream);
    });
  }
#endif

 private:
  Pool2dAttrs attrs_;
  bool count_include_pad_;
};

}  // namespace

Result<std::unique_ptr<Op>> create_avgpool2d(const Attrs& attrs) {
  Pool2dAttrs a;
  bool count_include_pad = true;
  WINFER_RETURN_IF_ERROR(read_pool2d_attrs(attrs, /*with_dilation=*/false, &a));
  WINFER_RETURN_IF_ERROR(attrs.get_bool("count_include_pad", &count_include_pad, true));
  return std::unique_ptr<Op>(new AvgPool2dOp(a, count_include_pad));
}

}  // namespace winfer
