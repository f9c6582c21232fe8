// identity / dropout (inference) on CUDA: a device copy, skipped when the planner shares storage.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/memory.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_identity_cuda(const Op&, const std::vector<Shape>& inputs,
                                                          const std::vector<Shape>&, const CudaCompileOptions&) {
  const size_t bytes = static_cast<size_t>(inputs[0].numel()) * sizeof(float);
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::copy_on_device(out[0], in[0], bytes, ctx.stream);
      });
}

}  // namespace winfer
