// Element-wise kernels. All may run in place (out == in / out == a).
#pragma once

#include <cstdint>

#include "kernels/common/conv_params.h"  // Activation

namespace winfer {

// out[i] = act(in[i]) for count elements.
void activation_inplace_or_copy(const float* in, float* out, int64_t count, Activation act, int threads);
// out[i] = act(a[i] + b[i]).
void add(const float* a, const float* b, float* out, int64_t count, Activation act, int threads);
// Channels-last per-channel affine (unfolded batch norm):
// out[p][c] = act(in[p][c] * scale[c] + shift[c]) for `pixels` rows of `channels`.
void scale_shift_channels_nhwc(const float* in, const float* scale, const float* shift, float* out, int64_t pixels,
                               int64_t channels, Activation act, int threads);

}  // namespace winfer
