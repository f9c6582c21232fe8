// mul on CUDA: one element-wise launch, a flat product or a channel scale over NHWC.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/pointwise.h"
#include "layers/mul.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_mul_cuda(const Op&, const std::vector<Shape>& inputs,
                                                     const std::vector<Shape>&, const CudaCompileOptions&) {
  const Shape a = inputs[0];
  const bool broadcast = MulOp::broadcasts(inputs[0], inputs[1]);
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        if (!broadcast) return cuda::mul(in[0], in[1], out[0], a.numel(), ctx.stream);
        return cuda::scale_channels_nhwc(in[0], in[1], out[0], a.n(), a.h() * a.w(), a.c(), ctx.stream);
      });
}

}  // namespace winfer
