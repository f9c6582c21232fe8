// Element-wise activations other than clamps and element-wise products on device memory (the
// CUDA counterparts of kernels/cpu/pointwise.h, a stream in place of the thread count). All may
// run in place.
#pragma once

#include <cstdint>

#include "kernels/common/pointwise.h"
#include "kernels/cuda/runtime.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// out[i] = fn(in[i]) for count elements (exp by expf, not the fast __expf).
Status pointwise_activation(const float* in, float* out, int64_t count, PointwiseFn fn, cudaStream_t stream);
// out[i] = a[i] * b[i].
Status mul(const float* a, const float* b, float* out, int64_t count, cudaStream_t stream);
// Channels-last channel scale: out[n][p][c] = in[n][p][c] * scale[n][c].
Status scale_channels_nhwc(const float* in, const float* scale, float* out, int64_t batch, int64_t pixels,
                           int64_t channels, cudaStream_t stream);

}  // namespace cuda
}  // namespace winfer
