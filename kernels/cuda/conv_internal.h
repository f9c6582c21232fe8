// Pieces shared by the CUDA convolution algorithms (internal to kernels/cuda and its tests).
#pragma once

#include <cstdint>

#include "kernels/common/conv_params.h"
#include "kernels/cuda/conv_algorithm.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// The registered algorithms, one per file; conv_registry.cpp lists them in a fixed order.
const ConvAlgorithm& direct_conv_algorithm();
const ConvAlgorithm& im2col_conv_algorithm();
const ConvAlgorithm& depthwise_conv_algorithm();
const ConvAlgorithm& im2win_conv_algorithm();
// nullptr when this build has no cuDNN (the emulator never has).
const ConvAlgorithm* cudnn_conv_algorithm();

// Weight layouts (host packing from PyTorch's OIHW [Co][C/g][Kh][Kw]). "G" is the group, "I" the
// input channel within it, "O" the output channel within it.
enum class WeightLayout {
  kGHWIO,  // [g][Kh][Kw][C/g][Co/g]: direct (coalesced over O) and im2col's K x N GEMM operand
  kGWHIO,  // [g][Kw][Kh][C/g][Co/g]: im2win, K ordered (kw, kh, c) like a window run
  kHWC,    // [Kh][Kw][C]: depthwise (groups == C == Co)
  kOHWI,   // [Co][Kh][Kw][C/g]: cuDNN's NHWC filter format (KRSC)
};
int64_t packed_weight_floats(const ConvParams& p);  // the same for every layout
void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed, WeightLayout layout);

// The lowering steps on their own, for the tests.
// im2col ("im2row" on NHWC), one group over the whole batch: rows[N*Ho*Wo][Kh*Kw*Cg], each row the
// receptive field of one output pixel ordered (kh, kw, c), zeros in the padding.
int64_t im2row_floats(const ConvParams& p);
Status im2row(const ConvParams& p, int64_t group, const float* input_nhwc, float* rows, cudaStream_t stream);
// im2win's window tensor [N][Ho][Ww][Kh][C] (see conv_im2win.cu).
int64_t im2win_window_floats(const ConvParams& p);
Status im2win_window(const ConvParams& p, const float* input_nhwc, float* window, cudaStream_t stream);

// True when every size fits the kernels' launch limits (grid dimensions) and cuBLAS' int sizes.
bool fits_launch_limits(const ConvParams& p);

}  // namespace cuda
}  // namespace winfer
