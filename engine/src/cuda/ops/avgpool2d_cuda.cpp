// avgpool2d on CUDA.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/pooling.h"
#include "layers/avgpool2d.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_avgpool2d_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                           const std::vector<Shape>& outputs,
                                                           const CudaCompileOptions&) {
  const AvgPool2dOp& pool = static_cast<const AvgPool2dOp&>(op);
  const PoolParams p = pool2d_params(pool.attrs(), inputs[0], outputs[0]);
  const bool count_include_pad = pool.count_include_pad();
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::avgpool2d_nhwc(p, count_include_pad, in[0], out[0], ctx.stream);
      });
}

}  // namespace winfer
