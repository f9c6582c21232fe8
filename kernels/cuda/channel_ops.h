// Channel-axis data movement on channels-last tensors (the CUDA counterparts of
// kernels/cpu/channel_ops.h). The input/output pointer arrays are host arrays of device pointers.
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// out[p][offset_i + c] = inputs[i][p][c]; out row width = sum(channels).
Status concat_channels_nhwc(int64_t pixels, int num_inputs, const float* const* inputs, const int64_t* channels,
                            float* out, cudaStream_t stream);
// outputs[i][p][c] = in[p][offset_i + c]; in row width = sum(channels).
Status split_channels_nhwc(int64_t pixels, const float* in, int num_outputs, const int64_t* channels,
                           float* const* outputs, cudaStream_t stream);
// ShuffleNet channel shuffle: out channel j*g + i <- in channel i*(C/g) + j; channels % groups
// == 0. In place (out == in) is allowed for up to kMaxInPlaceShuffleChannels channels.
constexpr int64_t kMaxInPlaceShuffleChannels = 4096;
Status channel_shuffle_nhwc(int64_t pixels, int64_t channels, int64_t groups, const float* in, float* out,
                            cudaStream_t stream);

}  // namespace cuda
}  // namespace winfer
