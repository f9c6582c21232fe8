// adaptive_avgpool2d on CUDA: the bins follow from the input and output shapes alone.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/pooling.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_adaptive_avgpool2d_cuda(const Op&, const std::vector<Shape>& inputs,
                                                                    const std::vector<Shape>& outputs,
                                                                    const CudaCompileOptions&) {
  const Shape i = inputs[0], o = outputs[0];
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::adaptive_avgpool2d_nhwc(i.n(), i.c(), i.h(), i.w(), o.h(), o.w(), in[0], out[0], ctx.stream);
      });
}

}  // namespace winfer
