// Element-wise kernels on device memory (the CUDA counterparts of kernels/cpu/elementwise.h, same
// names and arguments with the CPU's thread count replaced by a stream). All may run in place.
#pragma once

#include <cstdint>

#include "kernels/common/conv_params.h"  // Activation
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// out[i] = act(in[i]) for count elements.
Status activation_inplace_or_copy(const float* in, float* out, int64_t count, Activation act, cudaStream_t stream);
// out[i] = act(a[i] + b[i]).
Status add(const float* a, const float* b, float* out, int64_t count, Activation act, cudaStream_t stream);
// Channels-last per-channel affine (unfolded batch norm):
// out[p][c] = act(in[p][c] * scale[c] + shift[c]) for `pixels` rows of `channels`.
Status scale_shift_channels_nhwc(const float* in, const float* scale, const float* shift, float* out, int64_t pixels,
                                 int64_t channels, Activation act, cudaStream_t stream);
// data[r][c] = act(data[r][c] + bias[c]) over `rows` rows of `cols` (bias may be null): the
// epilogue of the GEMM-based convolutions and of linear. Nothing is launched when bias is null
// and act is kNone.
Status bias_activation_rows(float* data, int64_t rows, int64_t cols, const float* bias, Activation act,
                            cudaStream_t stream);

}  // namespace cuda
}  // namespace winfer
