#include "engine/src/cuda/cuda_ops.h"

#include <cstring>
#include <string>

namespace winfer {

// One line per op type this backend runs; each factory lives in ops/<op>_cuda.cpp.
#define WINFER_CUDA_OPS(X)                                 \
  X("conv2d", compile_conv2d_cuda)                         \
  X("batchnorm2d", compile_batchnorm2d_cuda)               \
  X("relu", compile_activation_cuda)                       \
  X("relu6", compile_activation_cuda)                      \
  X("sigmoid", compile_pointwise_activation_cuda)          \
  X("hardsigmoid", compile_pointwise_activation_cuda)      \
  X("hardswish", compile_pointwise_activation_cuda)        \
  X("silu", compile_pointwise_activation_cuda)             \
  X("maxpool2d", compile_maxpool2d_cuda)                   \
  X("avgpool2d", compile_avgpool2d_cuda)                   \
  X("adaptive_avgpool2d", compile_adaptive_avgpool2d_cuda) \
  X("add", compile_add_cuda)                               \
  X("mul", compile_mul_cuda)                               \
  X("concat", compile_concat_cuda)                         \
  X("split", compile_split_cuda)                           \
  X("channel_shuffle", compile_channel_shuffle_cuda)       \
  X("flatten", compile_flatten_cuda)                       \
  X("linear", compile_linear_cuda)                         \
  X("softmax", compile_softmax_cuda)                       \
  X("dropout", compile_identity_cuda)                      \
  X("identity", compile_identity_cuda)

#define WINFER_DECLARE_CUDA_FACTORY(type, factory)                                            \
  Result<std::unique_ptr<CudaKernel>> factory(const Op& op, const std::vector<Shape>& inputs, \
                                              const std::vector<Shape>& outputs, const CudaCompileOptions& options);
WINFER_CUDA_OPS(WINFER_DECLARE_CUDA_FACTORY)
#undef WINFER_DECLARE_CUDA_FACTORY

namespace {

struct CudaOpEntry {
  const char* type;
  CudaKernelFactory factory;
};

#define WINFER_CUDA_OP_ENTRY(type, factory) {type, factory},
constexpr CudaOpEntry kCudaOps[] = {WINFER_CUDA_OPS(WINFER_CUDA_OP_ENTRY)};
#undef WINFER_CUDA_OP_ENTRY

}  // namespace

CudaKernelFactory find_cuda_kernel_factory(const char* type) {
  for (const CudaOpEntry& entry : kCudaOps) {
    if (std::strcmp(entry.type, type) == 0) return entry.factory;
  }
  return nullptr;
}

Result<std::unique_ptr<CudaKernel>> compile_cuda_kernel(const Op& op, const std::vector<Shape>& inputs,
                                                        const std::vector<Shape>& outputs,
                                                        const CudaCompileOptions& options) {
  const CudaKernelFactory factory = find_cuda_kernel_factory(op.type());
  if (factory == nullptr) return unsupported(std::string("operator '") + op.type() + "' has no CUDA kernel");
  return factory(op, inputs, outputs, options);
}

}  // namespace winfer
