// Pooling over channels-last tensors: input [N][H][W][C], output [N][Ho][Wo][C].
#pragma once

#include <cstdint>

#include "kernels/common/pool_params.h"

namespace winfer {

// Max over the window's in-bounds taps (padding never wins, as in PyTorch).
void maxpool2d_nhwc(const PoolParams& p, const float* in, float* out, int threads);
// Mean over the window. count_include_pad: divide by the window clipped to the padded input
// (PyTorch's rule: window ends clamp to in + pad, then count includes padding taps);
// otherwise divide by the number of in-bounds taps.
void avgpool2d_nhwc(const PoolParams& p, bool count_include_pad, const float* in, float* out, int threads);
// PyTorch AdaptiveAvgPool2d: bin i spans [floor(i*H/Ho), ceil((i+1)*H/Ho)).
void adaptive_avgpool2d_nhwc(int64_t batch, int64_t channels, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                             const float* in, float* out, int threads);

}  // namespace winfer
