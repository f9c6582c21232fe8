// softmax (over channels) on CUDA: one row per NHWC pixel (or per rank-2 row).
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/linear.h"
#include "layers/channel_rows.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_softmax_cuda(const Op&, const std::vector<Shape>& inputs,
                                                         const std::vector<Shape>&, const CudaCompileOptions&) {
  const int64_t rows = channel_rows(inputs[0]), cols = inputs[0][1];
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::softmax_rows(in[0], out[0], rows, cols, ctx.stream);
      });
}

}  // namespace winfer
