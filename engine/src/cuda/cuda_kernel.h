// The CUDA backend's kernels: what the op table (engine/src/cuda/cuda_ops.h) makes of an op.
// Compiled only into the CUDA backend (native, or against the host emulator in tests).
//
// Device tensors are the same as the CPU backend's: rank-4 activations channels-last (NHWC),
// every other rank plain row-major, float32; the session's arena holds them (docs/CUDA.md).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/src/cuda/device_weights.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/conv_algorithm.h"
#include "kernels/cuda/status.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {

struct CudaCompileOptions {
  // The session's algorithm for every non-depthwise convolution (never null).
  const cuda::ConvAlgorithm* conv_algorithm = nullptr;
  // The session's stream and library handles: cuDNN tunes its algorithm choice on them.
  cuda::Context context;
  int device = 0;
  // Where kernels get their device weights (shared by every session of the model on the device).
  DeviceWeightCache* weights = nullptr;
};

class CudaKernel {
 public:
  virtual ~CudaKernel() = default;
  virtual size_t workspace_bytes() const { return 0; }
  // Device bytes of the weights run() reads (owned by the model's DeviceWeightCache).
  virtual size_t weight_bytes() const { return 0; }
  virtual std::string describe() const { return std::string(); }
  // Queues the layer on ctx.stream. Pointers are device memory in the session's arena.
  virtual cuda::Status run(const cuda::Context& ctx, const std::vector<const float*>& inputs,
                           const std::vector<float*>& outputs, void* workspace) const = 0;
};

// Most layers are one kernel call: a CudaKernel made of a function.
using CudaRunFunction = std::function<cuda::Status(const cuda::Context& ctx, const std::vector<const float*>& inputs,
                                                   const std::vector<float*>& outputs, void* workspace)>;
class FunctionCudaKernel : public CudaKernel {
 public:
  FunctionCudaKernel(std::string description, CudaRunFunction run, size_t weight_bytes = 0)
      : description_(std::move(description)), run_(std::move(run)), weight_bytes_(weight_bytes) {}
  size_t weight_bytes() const override { return weight_bytes_; }
  std::string describe() const override { return description_; }
  cuda::Status run(const cuda::Context& ctx, const std::vector<const float*>& inputs,
                   const std::vector<float*>& outputs, void* workspace) const override {
    return run_(ctx, inputs, outputs, workspace);
  }

 private:
  std::string description_;
  CudaRunFunction run_;
  size_t weight_bytes_;
};

inline Result<std::unique_ptr<CudaKernel>> make_cuda_kernel(std::string description, CudaRunFunction run,
                                                            size_t weight_bytes = 0) {
  return std::unique_ptr<CudaKernel>(new FunctionCudaKernel(std::move(description), std::move(run), weight_bytes));
}

// The engine's error for a failed CUDA call: out of memory and device errors keep their kind.
Status from_cuda(const cuda::Status& status);

// Uploads (once per model and device) a host tensor the op owns, e.g. a bias; null for an empty one.
Result<const float*> upload_tensor(const CudaCompileOptions& options, const void* owner, const std::string& key,
                                   const Tensor& host);

}  // namespace winfer
