// Layout conversion at the graph's edges (NCHW user tensors <-> NHWC CPU activations).
// Not in place: out must not overlap in.
#pragma once

#include <cstdint>

namespace winfer {

void nchw_to_nhwc(int64_t n, int64_t c, int64_t h, int64_t w, const float* in, float* out, int threads);
void nhwc_to_nchw(int64_t n, int64_t c, int64_t h, int64_t w, const float* in, float* out, int threads);

}  // namespace winfer
