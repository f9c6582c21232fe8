// add on CUDA: one element-wise launch with the absorbed activation.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/elementwise.h"
#include "layers/activation.h"
#include "layers/add.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_add_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                     const std::vector<Shape>&, const CudaCompileOptions&) {
  const int64_t count = inputs[0].numel();
  const Activation act = static_cast<const AddOp&>(op).activation();
  return make_cuda_kernel(fused_activation_note(act), [=](const cuda::Context& ctx, const std::vector<const float*>& in,
                                                          const std::vector<float*>& out, void*) {
    return cuda::add(in[0], in[1], out[0], count, act, ctx.stream);
  });
}

}  // namespace winfer
