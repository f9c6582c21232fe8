// maxpool2d on CUDA (a pooling absorbed by a convolution runs in conv2d_cuda.cpp).
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/pooling.h"
#include "layers/maxpool2d.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_maxpool2d_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                           const std::vector<Shape>& outputs,
                                                           const CudaCompileOptions&) {
  const PoolParams p = pool2d_params(static_cast<const MaxPool2dOp&>(op).attrs(), inputs[0], outputs[0]);
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::maxpool2d_nhwc(p, in[0], out[0], ctx.stream);
      });
}

}  // namespace winfer
