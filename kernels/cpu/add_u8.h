// u8 elementwise add (issue 27, kernels): the INT8 graph's residual add where it is not fused
// into a convolution's epilogue (conv_s8.h, S8Residual), e.g. after a pooling or between two
// branches. Per-tensor u8 operands with zero points, x = s * (q - z), into a u8 output:
//
//   f   = fmaf(float(q_b - z_b), Rb, float(q_a - z_a) * Ra)     Ra = s_a / s_y, Rb = s_b / s_y
//   out = clamp(round_half_even(clamp(f, +-65536)) + z_y, lo, hi)
//
// the conv epilogue's arithmetic with (q_a - z_a, Ra) in place of (acc, M): the product rounded
// once to float32, then one fused multiply-add, bit for bit s8_requantize_residual(q_a - z_a,
// Ra, q_b, z_b, Rb, z_y, lo, hi) on every ISA path (AVX-512, AVX2, scalar; cpu_isa()). The
// activation is the clamp: [0, 255] none, [z_y, 255] ReLU. `out` may be `a` or `b` (each value
// reads its own inputs before it is written); otherwise the buffers must not overlap.
#pragma once

#include <cstdint>

namespace winfer {
namespace cpu {

// Throws std::invalid_argument for zero points or a clamp outside 0..255 (lo <= hi) or a
// non-finite Ra / Rb.
void add_u8(const uint8_t* a, int32_t a_zero, float ra, const uint8_t* b, int32_t b_zero, float rb, uint8_t* out,
            int32_t out_zero, int32_t lo, int32_t hi, int64_t count, int threads);

}  // namespace cpu
}  // namespace winfer
