// sigmoid / hardsigmoid / hardswish / silu on CUDA: one element-wise launch (in place when the
// planner shares the storage).
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/pointwise.h"
#include "layers/pointwise_activation.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_pointwise_activation_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                                      const std::vector<Shape>&,
                                                                      const CudaCompileOptions&) {
  const int64_t count = inputs[0].numel();
  const PointwiseFn fn = static_cast<const PointwiseActivationOp&>(op).fn();
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::pointwise_activation(in[0], out[0], count, fn, ctx.stream);
      });
}

}  // namespace winfer
