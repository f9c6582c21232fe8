// u8 elementwise add (add_u8.h): one loop per ISA over a contiguous share of the values, picked
// by cpu_isa(). Per 16 (AVX-512) or 8 (AVX2) values: widen both inputs to int32, subtract the
// zero points, convert to float32 (exact), multiply a's by Ra (one rounding), fmadd b's by Rb
// onto it (one rounding), clamp to +-65536, convert to int32 (nearest even under the default
// MXCSR), + z_y, clamp [lo, hi], narrow; the scalar path is s8_requantize_residual itself.
#include "kernels/cpu/add_u8.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cpu/conv_s8.h"
#include "kernels/cpu/cpu_common.h"

#if WINFER_X86_DISPATCH
#include <immintrin.h>
#endif

namespace winfer {
namespace cpu {
namespace {

struct AddArgs {
  int32_t za, zb, zy, lo, hi;
  float ra, rb;
};

using AddFn = void (*)(const uint8_t*, const uint8_t*, uint8_t*, int64_t, const AddArgs&);

void add_generic(const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n, const AddArgs& g) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = s8_requantize_residual(a[i] - g.za, g.ra, b[i], g.zb, g.rb, g.zy, g.lo, g.hi);
}

#if WINFER_X86_DISPATCH

WINFER_AVX512_WARNINGS_BEGIN

struct Avx512Consts {
  __m512i za, zb, zy, lo, hi;
  __m512 ra, rb, fmin, fmax;
};

// 16 values: the contract's arithmetic, lane by lane.
WINFER_TARGET_AVX512 WINFER_ALWAYS_INLINE inline __m128i add16_avx512(__m128i qa, __m128i qb, const Avx512Consts& c) {
  const __m512 fa = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(qa), c.za));
  const __m512 fb = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(qb), c.zb));
  __m512 f = _mm512_fmadd_ps(fb, c.rb, _mm512_mul_ps(fa, c.ra));
  f = _mm512_min_ps(_mm512_max_ps(f, c.fmin), c.fmax);
  const __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(f), c.zy);
  return _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(r, c.lo), c.hi));
}

WINFER_TARGET_AVX512 void add_avx512(const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n, const AddArgs& g) {
  const Avx512Consts c{_mm512_set1_epi32(g.za), _mm512_set1_epi32(g.zb),  _mm512_set1_epi32(g.zy),
                       _mm512_set1_epi32(g.lo), _mm512_set1_epi32(g.hi),  _mm512_set1_ps(g.ra),
                       _mm512_set1_ps(g.rb),    _mm512_set1_ps(-65536.f), _mm512_set1_ps(65536.f)};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i y = add16_avx512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)),
                                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), y);
  }
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm_mask_storeu_epi8(out + i, k, add16_avx512(_mm_maskz_loadu_epi8(k, a + i), _mm_maskz_loadu_epi8(k, b + i), c));
  }
}

WINFER_AVX512_WARNINGS_END

struct Avx2Consts {
  __m256i za, zb, zy, lo, hi;
  __m256 ra, rb, fmin, fmax;
};

// 8 values as int32 in lo..hi.
WINFER_TARGET_AVX2 WINFER_ALWAYS_INLINE inline __m256i add8_avx2(const uint8_t* pa, const uint8_t* pb,
                                                                 const Avx2Consts& c) {
  const __m256i qa = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(pa)));
  const __m256i qb = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(pb)));
  const __m256 fa = _mm256_cvtepi32_ps(_mm256_sub_epi32(qa, c.za));
  const __m256 fb = _mm256_cvtepi32_ps(_mm256_sub_epi32(qb, c.zb));
  __m256 f = _mm256_fmadd_ps(fb, c.rb, _mm256_mul_ps(fa, c.ra));
  f = _mm256_min_ps(_mm256_max_ps(f, c.fmin), c.fmax);
  const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(f), c.zy);
  return _mm256_min_epi32(_mm256_max_epi32(r, c.lo), c.hi);
}

WINFER_TARGET_AVX2 void add_avx2(const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n, const AddArgs& g) {
  const Avx2Consts c{_mm256_set1_epi32(g.za), _mm256_set1_epi32(g.zb),  _mm256_set1_epi32(g.zy),
                     _mm256_set1_epi32(g.lo), _mm256_set1_epi32(g.hi),  _mm256_set1_ps(g.ra),
                     _mm256_set1_ps(g.rb),    _mm256_set1_ps(-65536.f), _mm256_set1_ps(65536.f)};
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i r0 = add8_avx2(a + i, b + i, c), r1 = add8_avx2(a + i + 8, b + i + 8, c);
    const __m256i r2 = add8_avx2(a + i + 16, b + i + 16, c), r3 = add8_avx2(a + i + 24, b + i + 24, c);
    // [r0 r1 r2 r3 per 128-bit lane, 4 bytes each] -> in order.
    const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(r0, r1), _mm256_packs_epi32(r2, r3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  add_generic(a + i, b + i, out + i, n - i, g);
}

#endif

}  // namespace

void add_u8(const uint8_t* a, int32_t a_zero, float ra, const uint8_t* b, int32_t b_zero, float rb, uint8_t* out,
            int32_t out_zero, int32_t lo, int32_t hi, int64_t count, int threads) {
  auto zero_ok = [](int32_t z) { return z >= 0 && z <= 255; };
  if (!zero_ok(a_zero) || !zero_ok(b_zero) || !zero_ok(out_zero))
    throw std::invalid_argument("add_u8: zero points must be in 0..255, got a " + std::to_string(a_zero) + ", b " +
                                std::to_string(b_zero) + ", out " + std::to_string(out_zero));
  if (lo < 0 || hi > 255 || lo > hi)
    throw std::invalid_argument("add_u8: output clamp must satisfy 0 <= lo <= hi <= 255, got [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "]");
  if (!std::isfinite(ra) || !std::isfinite(rb))
    throw std::invalid_argument("add_u8: scales Ra, Rb must be finite, got " + std::to_string(ra) + ", " +
                                std::to_string(rb));
  if (count <= 0) return;
  const AddArgs g{a_zero, b_zero, out_zero, lo, hi, ra, rb};
  AddFn fn = add_generic;
#if WINFER_X86_DISPATCH
  switch (cpu_isa()) {
    case Isa::kAvx512: fn = add_avx512; break;
    case Isa::kAvx2: fn = add_avx2; break;
    case Isa::kGeneric: break;
  }
#endif
  const int nt = threads_for_work(threads, count * 2);
  if (nt <= 1) {
    fn(a, b, out, count, g);
    return;
  }
  const int64_t steps = ceil_div(count, 64);
  parallel_pieces(nt, steps, pieces_for(nt, steps, count * 2), [&](int64_t first, int64_t last, int) {
    const int64_t begin = first * 64, end = std::min(count, last * 64);
    fn(a + begin, b + begin, out + begin, end - begin, g);
  });
}

}  // namespace cpu
}  // namespace winfer
