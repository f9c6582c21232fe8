// concat (over channels) on CUDA: each NHWC pixel row of the output gathers its inputs' rows.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/channel_ops.h"
#include "layers/channel_rows.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_concat_cuda(const Op&, const std::vector<Shape>& inputs,
                                                        const std::vector<Shape>&, const CudaCompileOptions&) {
  std::vector<int64_t> channels;
  for (const Shape& s : inputs) channels.push_back(s[1]);
  const int64_t rows = channel_rows(inputs[0]);
  return make_cuda_kernel("", [rows, channels](const cuda::Context& ctx, const std::vector<const float*>& in,
                                               const std::vector<float*>& out, void*) {
    return cuda::concat_channels_nhwc(rows, static_cast<int>(in.size()), in.data(), channels.data(), out[0],
                                      ctx.stream);
  });
}

}  // namespace winfer
