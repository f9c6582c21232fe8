// flatten on CUDA: NHWC -> NCHW order where the two differ (layers/flatten.h), else a copy.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/layout.h"
#include "kernels/cuda/memory.h"
#include "layers/flatten.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_flatten_cuda(const Op&, const std::vector<Shape>& inputs,
                                                         const std::vector<Shape>&, const CudaCompileOptions&) {
  const Shape s = inputs[0];
  if (flatten_needs_reorder(s)) {
    return make_cuda_kernel("NHWC to NCHW order", [=](const cuda::Context& ctx, const std::vector<const float*>& in,
                                                      const std::vector<float*>& out, void*) {
      return cuda::nhwc_to_nchw(s.n(), s.c(), s.h(), s.w(), in[0], out[0], ctx.stream);
    });
  }
  return make_cuda_kernel("copy", [=](const cuda::Context& ctx, const std::vector<const float*>& in,
                                      const std::vector<float*>& out, void*) {
    return cuda::copy_on_device(out[0], in[0], static_cast<size_t>(s.numel()) * sizeof(float), ctx.stream);
  });
}

}  // namespace winfer
