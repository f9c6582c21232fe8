// batchnorm2d (not folded into a convolution) on CUDA: a per-channel scale and shift, both
// uploaded once per model and device, then one launch with the absorbed activation.
#include <algorithm>

#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/elementwise.h"
#include "layers/batchnorm2d.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_batchnorm2d_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                             const std::vector<Shape>&,
                                                             const CudaCompileOptions& options) {
  const BatchNorm2dOp& bn = static_cast<const BatchNorm2dOp&>(op);
  auto upload = [&](const char* key, const std::vector<float>& values) {
    return options.weights->get(options.device, &op, key, values.size() * sizeof(float),
                                [&](float* dst) { std::copy(values.begin(), values.end(), dst); });
  };
  auto scale = upload("scale", bn.scale());
  if (!scale.ok()) return scale.status();
  auto shift = upload("shift", bn.shift());
  if (!shift.ok()) return shift.status();
  const float* sc = scale.value();
  const float* sh = shift.value();
  const Shape s = inputs[0];
  const Activation act = bn.activation();
  return make_cuda_kernel(
      bn.kernel_description(),
      [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::scale_shift_channels_nhwc(in[0], sc, sh, out[0], s.n() * s.h() * s.w(), s.c(), act, ctx.stream);
      },
      bn.weight_bytes());
}

}  // namespace winfer
