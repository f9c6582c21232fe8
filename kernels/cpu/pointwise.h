// Element-wise activations other than clamps, and element-wise products (squeeze-and-excitation's
// channel scale). All may run in place (out == in, out == a).
#pragma once

#include <cstdint>

#include "kernels/common/pointwise.h"

namespace winfer {

// out[i] = fn(in[i]) for count elements (kernels/common/pointwise.h gives the definitions).
// exp is computed by a branch-free polynomial that the compiler vectorises: sigmoid and silu
// are within 1.3 ulp of the exact value over float's range (0 where 1 + exp(-x) overflows).
void pointwise_activation(const float* in, float* out, int64_t count, PointwiseFn fn, int threads);

// In place over a tile of `rows` rows of `cols` floats, `stride` floats apart (a convolution's
// output tile, or its whole output with a pixel stride): data[r * stride + c] = fn(...), one
// thread. The same code per element as pointwise_activation, so the same bits: what a
// convolution that absorbed the activation and writes a channel slice of a wider tensor (a
// concat's output) applies to its output.
void pointwise_activation_rows(float* data, int64_t rows, int64_t cols, int64_t stride, PointwiseFn fn);

// out[i] = a[i] * b[i].
void mul(const float* a, const float* b, float* out, int64_t count, int threads);

// Channels-last channel scale: out[n][p][c] = in[n][p][c] * scale[n][c] for `batch` images of
// `pixels` rows of `channels` (scale is [N, C, 1, 1], whose NCHW and NHWC layouts agree).
void scale_channels_nhwc(const float* in, const float* scale, float* out, int64_t batch, int64_t pixels,
                         int64_t channels, int threads);

}  // namespace winfer
