// channel_shuffle on CUDA: a permutation within each NHWC pixel row.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/channel_ops.h"
#include "layers/channel_shuffle.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_channel_shuffle_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                                 const std::vector<Shape>&, const CudaCompileOptions&) {
  const Shape i = inputs[0];
  const int64_t groups = static_cast<const ChannelShuffleOp&>(op).groups();
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::channel_shuffle_nhwc(i.n() * i.h() * i.w(), i.c(), groups, in[0], out[0], ctx.stream);
      });
}

}  // namespace winfer
