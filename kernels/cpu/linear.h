// Fully connected layer and softmax on row-major [rows][features] data.
#pragma once

#include <cstdint>

#include "kernels/common/conv_params.h"  // Activation

namespace winfer {

// out[N][O] = act(in[N][K] * weight[O][K]^T + bias[O]); bias may be null. Uses sgemm.
void linear(const float* in, const float* weight, const float* bias, float* out, int64_t rows, int64_t in_features,
            int64_t out_features, Activation act, int threads);
// Numerically stable softmax of each row (subtracts the row max). May run in place.
void softmax_rows(const float* in, float* out, int64_t rows, int64_t cols, int threads);

}  // namespace winfer
