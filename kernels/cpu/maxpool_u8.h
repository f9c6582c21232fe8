// u8 max pooling over channels-last tensors (issue 27, kernels): the INT8 graph's MaxPool, on
// the quantized values themselves. Max commutes with the monotone u8 grid (q = round(x / s) + z
// is non-decreasing in x), so pooling the u8 codes gives the codes of the FP32 pool's result
// with the same scale and zero point: no requantization.
//
// Semantics are the FP32 maxpool2d_nhwc's (kernels/cpu/pooling.h, PoolParams): input
// [N][H][W][C] u8, output [N][Ho][Wo][C] u8 (Ho, Wo chosen by the caller: floor or ceil mode),
// taps in the padding never win, dilation honoured. A window with no in-bounds tap (possible
// with ceil mode and large padding) gives 0, the u8 code of the FP32 pool's -inf.
// AVX-512 (vpmaxub on 64 channels, masked tails), AVX2 and scalar paths by cpu_isa(), the same
// bytes on each; output rows split over `threads`.
#pragma once

#include <cstdint>

#include "kernels/common/pool_params.h"

namespace winfer {
namespace cpu {

void maxpool2d_nhwc_u8(const PoolParams& p, const uint8_t* in, uint8_t* out, int threads);

}  // namespace cpu
}  // namespace winfer
