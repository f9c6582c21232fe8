// split (over channels) on CUDA: each NHWC pixel row of the input scattered to the outputs.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/channel_ops.h"
#include "layers/channel_rows.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_split_cuda(const Op&, const std::vector<Shape>& inputs,
                                                       const std::vector<Shape>& outputs, const CudaCompileOptions&) {
  std::vector<int64_t> sizes;
  for (const Shape& s : outputs) sizes.push_back(s[1]);
  const int64_t rows = channel_rows(inputs[0]);
  return make_cuda_kernel("", [rows, sizes](const cuda::Context& ctx, const std::vector<const float*>& in,
                                            const std::vector<float*>& out, void*) {
    return cuda::split_channels_nhwc(rows, in[0], static_cast<int>(out.size()), sizes.data(), out.data(), ctx.stream);
  });
}

}  // namespace winfer
