// linear on CUDA: weights and bias uploaded once per model and device, then cuBLAS (or the row
// kernel for small batches, kernels/cuda/linear.h) with the absorbed activation.
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/linear.h"
#include "layers/activation.h"
#include "layers/linear.h"

namespace winfer {

Result<std::unique_ptr<CudaKernel>> compile_linear_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                        const std::vector<Shape>&, const CudaCompileOptions& options) {
  const LinearOp& linear = static_cast<const LinearOp&>(op);
  auto weight = upload_tensor(options, &op, "weight", linear.weight());
  if (!weight.ok()) return weight.status();
  auto bias = upload_tensor(options, &op, "bias", linear.bias());
  if (!bias.ok()) return bias.status();
  const float* w = weight.value();
  const float* b = bias.value();
  const int64_t rows = inputs[0][0], in_features = linear.weight().shape()[1],
                out_features = linear.weight().shape()[0];
  const Activation act = linear.activation();
  return make_cuda_kernel(
      fused_activation_note(act),
      [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::linear(in[0], w, b, out[0], rows, in_features, out_features, act, ctx);
      },
      linear.weight().bytes() + linear.bias().bytes());
}

}  // namespace winfer
