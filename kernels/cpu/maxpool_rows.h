// Max pooling of one output row over channels-last input (the inner loop of maxpool2d_nhwc),
// compiled per ISA with intrinsics: maxpool_avx512.cpp and maxpool_avx2.cpp, from one body
// (maxpool_body.h). pooling.cpp picks one at run time and keeps a portable loop of its own.
//
// out_row[ow][c] = the max over output pixel (oh, ow)'s in-bounds taps, PyTorch's MaxPool2d:
// padding never wins, a NaN tap makes the result NaN, ties go to the first tap in (kh, kw)
// order (so +0 / -0 come out as PyTorch gives them), a window with no tap in the input is -inf.
#pragma once

#include <cstdint>

#include "kernels/common/pool_params.h"

namespace winfer {
namespace cpu {

// in_image: image n's [H][W][C]; out_row: output row oh's [Wo][C]. Null where the ISA
// cannot be compiled (non-x86 builds).
using MaxPoolRowFn = void (*)(const PoolParams& p, const float* in_image, int64_t oh, float* out_row);
MaxPoolRowFn max_pool_row_avx512();
MaxPoolRowFn max_pool_row_avx2();

}  // namespace cpu
}  // namespace winfer
