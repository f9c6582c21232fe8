// Layout conversion at the graph's edges (NCHW user tensors <-> NHWC activations), on the device.
// Not in place: out must not overlap in.
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

Status nchw_to_nhwc(int64_t n, int64_t c, int64_t h, int64_t w, const float* in, float* out, cudaStream_t stream);
Status nhwc_to_nchw(int64_t n, int64_t c, int64_t h, int64_t w, const float* in, float* out, cudaStream_t stream);

}  // namespace cuda
}  // namespace winfer
