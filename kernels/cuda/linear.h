// Fully connected layer and softmax on row-major [rows][features] device data (the CUDA
// counterparts of kernels/cpu/linear.h).
#pragma once

#include <cstdint>

#include "kernels/common/conv_params.h"  // Activation
#include "kernels/cuda/context.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// out[N][O] = act(in[N][K] * weight[O][K]^T + bias[O]); bias may be null. Up to
// kLinearRowsWithoutBlas rows (or without ctx.libraries, as under the emulator) it runs
// linear_rows(); above, cuBLAS sgemm plus a bias/activation pass.
constexpr int64_t kLinearRowsWithoutBlas = 16;
Status linear(const float* in, const float* weight, const float* bias, float* out, int64_t rows, int64_t in_features,
              int64_t out_features, Activation act, const Context& ctx);
// The same with one warp per output element and no library (any size; meant for few rows).
Status linear_rows(const float* in, const float* weight, const float* bias, float* out, int64_t rows,
                   int64_t in_features, int64_t out_features, Activation act, cudaStream_t stream);
// Numerically stable softmax of each row (subtracts the row max). May run in place.
Status softmax_rows(const float* in, float* out, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace cuda
}  // namespace winfer
