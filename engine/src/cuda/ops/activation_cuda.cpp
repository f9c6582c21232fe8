// relu / relu6 on CUDA: one element-wise launch (in place when the planner shares the storage).
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/elementwise.h"
#include "layers/activation.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_activation_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                            const std::vector<Shape>&, const CudaCompileOptions&) {
  const int64_t count = inputs[0].numel();
  const Activation kind = static_cast<const ActivationOp&>(op).kind();
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::activation_inplace_or_copy(in[0], out[0], count, kind, ctx.stream);
      });
}

}  // namespace winfer
