// float32 <-> u8 activation conversions (issue 27, kernels): the edges of an INT8 region of a
// graph, where an FP32 tensor enters (quantize) or an INT8 one leaves (dequantize). Per-tensor
// u8 with a zero point, x_real = scale * (q - zero), as in engine/src/quantization.h, and bit for
// bit what its scalar functions compute, on every ISA path (AVX-512, AVX2, scalar; cpu_isa()):
//
//   quantize    q = clamp(nearbyint(x / scale) + float(zero), 0, 255), NaN -> 0
//               (quant::quantize_u8: a true float32 division, not a multiply by 1 / scale, which
//               rounds differently for some x; nearbyint under the default rounding mode, ties
//               to even; the add in float32; +-inf -> 255 / 0)
//   dequantize  x = scale * (float(q) - float(zero))   (quant::fake_quantize's expression)
//
// Memory-bound streams: the vector loops convert 64 values per step, and `threads` splits
// counts of 64 Ki values and more into contiguous shares (OpenMP). Any count, no alignment;
// nothing is read or written outside [0, count).
#pragma once

#include <cstdint>

namespace winfer {
namespace cpu {

void quantize_f32_u8(const float* in, uint8_t* out, int64_t count, float scale, int32_t zero, int threads);
void dequantize_u8_f32(const uint8_t* in, float* out, int64_t count, float scale, int32_t zero, int threads);

// The scalar definitions (the reference every path matches).
inline uint8_t quantize_u8_scalar(float x, float scale, int32_t zero) {
  const float v = __builtin_nearbyintf(x / scale) + static_cast<float>(zero);
  if (!(v > 0.f)) return 0;  // NaN too
  return v > 255.f ? uint8_t{255} : static_cast<uint8_t>(v);
}
inline float dequantize_u8_scalar(uint8_t q, float scale, int32_t zero) {
  return scale * (static_cast<float>(q) - static_cast<float>(zero));
}

}  // namespace cpu
}  // namespace winfer
