// Pooling over channels-last tensors on the device: input [N][H][W][C], output [N][Ho][Wo][C].
// Same semantics as kernels/cpu/pooling.h (PyTorch's), same PoolParams.
#pragma once

#include <cstdint>

#include "kernels/common/pool_params.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// Max over the window's in-bounds taps (padding never wins; a NaN tap wins; -inf if none).
Status maxpool2d_nhwc(const PoolParams& p, const float* in, float* out, cudaStream_t stream);
// Mean over the window; the divisor follows PyTorch's AvgPool2d (see kernels/cpu/pooling.h).
Status avgpool2d_nhwc(const PoolParams& p, bool count_include_pad, const float* in, float* out, cudaStream_t stream);
// PyTorch AdaptiveAvgPool2d: bin i spans [floor(i*H/Ho), ceil((i+1)*H/Ho)).
Status adaptive_avgpool2d_nhwc(int64_t batch, int64_t channels, int64_t in_h, int64_t in_w, int64_t out_h,
                               int64_t out_w, const float* in, float* out, cudaStream_t stream);

}  // namespace cuda
}  // namespace winfer
