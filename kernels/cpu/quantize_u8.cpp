// float32 <-> u8 conversions (quantize_u8.h): one loop per ISA over a contiguous share of the
// values, picked by cpu_isa(). The vector loops compute the scalar definitions lane by lane with
// the same IEEE operations: vdivps (exact division, rounded once like the scalar one),
// vroundps/vrndscaleps to nearest even (nearbyint under the default MXCSR rounding), vaddps
// of the zero point, then max(v, 0) with the NaN rule of maxps (a NaN first operand returns the
// second, 0: the scalar !(v > 0)), min(v, 255), and a conversion of an integral value.
// Dequantize: widen, convert (exact), subtract the zero point, multiply: the scalar order.
#include "kernels/cpu/quantize_u8.h"

#include <algorithm>

#include "kernels/cpu/cpu_common.h"

#if WINFER_X86_DISPATCH
#include <immintrin.h>
#endif

namespace winfer {
namespace cpu {
namespace {

using QuantizeFn = void (*)(const float*, uint8_t*, int64_t, float, int32_t);
using DequantizeFn = void (*)(const uint8_t*, float*, int64_t, float, int32_t);

void quantize_generic(const float* in, uint8_t* out, int64_t n, float scale, int32_t zero) {
  for (int64_t i = 0; i < n; ++i) out[i] = quantize_u8_scalar(in[i], scale, zero);
}
void dequantize_generic(const uint8_t* in, float* out, int64_t n, float scale, int32_t zero) {
  for (int64_t i = 0; i < n; ++i) out[i] = dequantize_u8_scalar(in[i], scale, zero);
}

#if WINFER_X86_DISPATCH

WINFER_AVX512_WARNINGS_BEGIN

WINFER_TARGET_AVX512 inline __m512i quantize16_avx512(__m512 x, __m512 scale, __m512 zero, __m512 lo, __m512 hi) {
  __m512 v = _mm512_roundscale_ps(_mm512_div_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(v, zero), lo), hi);
  return _mm512_cvttps_epi32(v);
}

WINFER_TARGET_AVX512 void quantize_avx512(const float* in, uint8_t* out, int64_t n, float scale, int32_t zero) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(static_cast<float>(zero));
  const __m512 lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.f);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i a = quantize16_avx512(_mm512_loadu_ps(in + i), s, z, lo, hi);
    const __m512i b = quantize16_avx512(_mm512_loadu_ps(in + i + 16), s, z, lo, hi);
    const __m512i c = quantize16_avx512(_mm512_loadu_ps(in + i + 32), s, z, lo, hi);
    const __m512i d = quantize16_avx512(_mm512_loadu_ps(in + i + 48), s, z, lo, hi);
    // Four vectors of 16 int32 in 0..255 to 64 bytes: two packs interleave 128-bit lanes
    // ([a0 b0 c0 d0 | a1 b1 c1 d1 | ...] per lane), one permute restores the order.
    const __m512i ab = _mm512_packs_epi32(a, b), cd = _mm512_packs_epi32(c, d);
    const __m512i bytes = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), _mm512_packus_epi16(ab, cd));
    _mm512_storeu_si512(out + i, bytes);
  }
  for (; i < n; i += 16) {
    const int64_t left = std::min<int64_t>(16, n - i);
    const __mmask16 k = static_cast<__mmask16>((1u << left) - 1);
    const __m512i q = quantize16_avx512(_mm512_maskz_loadu_ps(k, in + i), s, z, lo, hi);
    _mm_mask_storeu_epi8(out + i, k, _mm512_cvtepi32_epi8(q));
  }
}

WINFER_TARGET_AVX512 void dequantize_avx512(const uint8_t* in, float* out, int64_t n, float scale, int32_t zero) {
  const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(static_cast<float>(zero));
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int j = 0; j < 4; ++j) {
      const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16 * j)));
      _mm512_storeu_ps(out + i + 16 * j, _mm512_mul_ps(s, _mm512_sub_ps(_mm512_cvtepi32_ps(q), z)));
    }
  }
  for (; i < n; i += 16) {
    const int64_t left = std::min<int64_t>(16, n - i);
    const __mmask16 k = static_cast<__mmask16>((1u << left) - 1);
    const __m512i q = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, in + i));
    _mm512_mask_storeu_ps(out + i, k, _mm512_mul_ps(s, _mm512_sub_ps(_mm512_cvtepi32_ps(q), z)));
  }
}

WINFER_AVX512_WARNINGS_END

WINFER_TARGET_AVX2 inline __m256i quantize8_avx2(__m256 x, __m256 scale, __m256 zero, __m256 lo, __m256 hi) {
  __m256 v = _mm256_round_ps(_mm256_div_ps(x, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(v, zero), lo), hi);
  return _mm256_cvttps_epi32(v);
}

WINFER_TARGET_AVX2 void quantize_avx2(const float* in, uint8_t* out, int64_t n, float scale, int32_t zero) {
  const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(static_cast<float>(zero));
  const __m256 lo = _mm256_setzero_ps(), hi = _mm256_set1_ps(255.f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = quantize8_avx2(_mm256_loadu_ps(in + i), s, z, lo, hi);
    const __m256i b = quantize8_avx2(_mm256_loadu_ps(in + i + 8), s, z, lo, hi);
    const __m256i c = quantize8_avx2(_mm256_loadu_ps(in + i + 16), s, z, lo, hi);
    const __m256i d = quantize8_avx2(_mm256_loadu_ps(in + i + 24), s, z, lo, hi);
    // [a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7] as 32-bit groups, then in order.
    const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  quantize_generic(in + i, out + i, n - i, scale, zero);
}

WINFER_TARGET_AVX2 void dequantize_avx2(const uint8_t* in, float* out, int64_t n, float scale, int32_t zero) {
  const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(static_cast<float>(zero));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_sub_ps(_mm256_cvtepi32_ps(q), z)));
  }
  dequantize_generic(in + i, out + i, n - i, scale, zero);
}

#endif

// Runs fn over [0, count) in contiguous shares of whole 64-value steps, one per thread.
template <typename Fn, typename In, typename Out>
void run_split(Fn fn, const In* in, Out* out, int64_t count, float scale, int32_t zero, int threads) {
  if (count <= 0) return;
  const int nt = threads_for_work(threads, count);
  if (nt <= 1) {
    fn(in, out, count, scale, zero);
    return;
  }
  const int64_t steps = ceil_div(count, 64);
  parallel_pieces(nt, steps, pieces_for(nt, steps, count), [&](int64_t first, int64_t last, int) {
    const int64_t b = first * 64, e = std::min(count, last * 64);
    fn(in + b, out + b, e - b, scale, zero);
  });
}

}  // namespace

void quantize_f32_u8(const float* in, uint8_t* out, int64_t count, float scale, int32_t zero, int threads) {
  QuantizeFn fn = quantize_generic;
#if WINFER_X86_DISPATCH
  switch (cpu_isa()) {
    case Isa::kAvx512: fn = quantize_avx512; break;
    case Isa::kAvx2: fn = quantize_avx2; break;
    case Isa::kGeneric: break;
  }
#endif
  run_split(fn, in, out, count, scale, zero, threads);
}

void dequantize_u8_f32(const uint8_t* in, float* out, int64_t count, float scale, int32_t zero, int threads) {
  DequantizeFn fn = dequantize_generic;
#if WINFER_X86_DISPATCH
  switch (cpu_isa()) {
    case Isa::kAvx512: fn = dequantize_avx512; break;
    case Isa::kAvx2: fn = dequantize_avx2; break;
    case Isa::kGeneric: break;
  }
#endif
  run_split(fn, in, out, count, scale, zero, threads);
}

}  // namespace cpu
}  // namespace winfer
