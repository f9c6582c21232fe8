// Plain description of one 2-D pooling over channels-last tensors (input [N][H][W][C], output
// [N][Ho][Wo][C]): shared by the CPU and CUDA pooling kernels and the layers.
#pragma once

#include <cstdint>

namespace winfer {

struct PoolParams {
  int64_t batch = 1, channels = 0, in_h = 0, in_w = 0;
  int64_t out_h = 0, out_w = 0;  // chosen by the caller (floor or ceil mode)
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;       // bottom/right padding is implied by out_h/out_w
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only
};

}  // namespace winfer
