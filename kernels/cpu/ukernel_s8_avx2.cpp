// AVX2 INT8 micro-kernels (CPUs without AVX-512 VNNI): up to 6 pixels x 8 output channels per
// pass, the panel's 32 channels in four passes over K.
//
// Exact, with no saturation anywhere. vpmaddubsw (u8 x s8 pairs summed into *saturating* int16)
// overflows as soon as two products exceed 32767, e.g. 255 * 127 + 255 * 127 = 64770 (it
// needs 7-bit weights or activations to be exact, which would make the AVX2 path compute
// something else than the VNNI one, or the whole model lose a bit). Instead both operands are
// widened to int16 and multiplied with vpmaddwd (int16 x int16 pairs summed into int32, exact):
//   activations: the 4 bytes of a K step broadcast to every 32-bit lane (a load), zero-extended
//                to 16 x int16 [a0 a1 a2 a3] x 4 (vpmovzxbw, one shuffle),
//   weights:     16 bytes of the packed panel row = 4 channels x 4 K bytes, sign-extended to
//                16 x int16 (vpmovsxbw from memory),
// so lane pair (2i, 2i + 1) of vpmaddwd's int32 result holds channel i/2's a0w0 + a1w1 and
// a2w2 + a3w3; the epilogue adds the pairs (vphaddd) and restores the channel order
// (vpermq). 16 multiply-adds per vpmaddwd instead of 32 per vpmaddubsw + vpmaddwd: about the
// FP32 AVX2 kernel's rate. It reads the same packed weights as the VNNI kernel.
#include <cstring>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_s8.h"

#if WINFER_X86_DISPATCH

#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace winfer {
namespace cpu {
namespace {

__attribute__((always_inline)) inline __m256i widen_x(uint32_t v) {
  return _mm256_cvtepu8_epi16(_mm_set1_epi32(static_cast<int32_t>(v)));
}
__attribute__((always_inline)) inline uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
__attribute__((always_inline)) inline __m256i widen_w(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// The low bytes of r's 8 int32 (0..255 after the clamp) stored to out[0, valid).
__attribute__((always_inline)) inline void store8(uint8_t* out, __m256i r, __m128i gather, int valid) {
  const __m128i lo4 = _mm_shuffle_epi8(_mm256_castsi256_si128(r), gather);
  const __m128i hi4 = _mm_shuffle_epi8(_mm256_extracti128_si256(r, 1), gather);
  const uint64_t bytes = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpacklo_epi32(lo4, hi4)));
  if (valid == 8)
    std::memcpy(out, &bytes, 8);
  else
    for (int j = 0; j < valid; ++j) out[j] = static_cast<uint8_t>(bytes >> (8 * j));
}

template <int kRows, bool kIndirect>
struct Avx2S8Tile {
  static void run(const S8TileArgs& a) {
    const __m256 fmin = _mm256_set1_ps(-65536.f), fmax = _mm256_set1_ps(65536.f);
    const __m256i zy = _mm256_set1_epi32(a.out_zero), lo = _mm256_set1_epi32(a.lo), hi = _mm256_set1_epi32(a.hi);
    const __m128i gather = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    for (int cb = 0; cb * 8 < a.cols; ++cb) {
      __m256i acc[kRows][2];
#pragma GCC unroll 8
      for (int m = 0; m < kRows; ++m) acc[m][0] = acc[m][1] = _mm256_setzero_si256();
      const uint8_t* px[kRows];
      for (int64_t s = 0; s < a.segments; ++s) {
#pragma GCC unroll 8
        for (int m = 0; m < kRows; ++m) px[m] = s8_segment<kIndirect>(a, s, m);
        const int8_t* w = a.weights + s * a.w_seg_stride + cb * 32;
        for (int64_t q = 0; q < a.quads; ++q, w += 4 * kS8Panel) {
          const __m256i w0 = widen_w(w), w1 = widen_w(w + 16);
#pragma GCC unroll 8
          for (int m = 0; m < kRows; ++m) {
            const __m256i x = widen_x(load32(px[m] + 4 * q));
            acc[m][0] = _mm256_add_epi32(acc[m][0], _mm256_madd_epi16(x, w0));
            acc[m][1] = _mm256_add_epi32(acc[m][1], _mm256_madd_epi16(x, w1));
          }
        }
        if (a.tail > 0) {
          const __m256i w0 = widen_w(w), w1 = widen_w(w + 16);
#pragma GCC unroll 8
          for (int m = 0; m < kRows; ++m) {
            const __m256i x = widen_x(s8_load_tail(px[m] + 4 * a.quads, a.tail));
            acc[m][0] = _mm256_add_epi32(acc[m][0], _mm256_madd_epi16(x, w0));
            acc[m][1] = _mm256_add_epi32(acc[m][1], _mm256_madd_epi16(x, w1));
          }
        }
      }
      const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.bias + cb * 8));
      const __m256 mult = _mm256_loadu_ps(a.mult + cb * 8);
      const int valid = a.cols - cb * 8 < 8 ? a.cols - cb * 8 : 8;
      if (a.res != nullptr) {
        // With a residual: its `valid` bytes (read before the store: it may be the output),
        // minus z_r, to float32, fmadd(that, R, the product), then the plain epilogue's clamps.
        const __m256i rz = _mm256_set1_epi32(a.res_zero);
        const __m256 rs = _mm256_set1_ps(a.res_scale);
        for (int m = 0; m < kRows; ++m) {
          __m256i r = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[m][0], acc[m][1]), 0xD8);
          r = _mm256_add_epi32(r, bias);
          const uint8_t* res = a.res + m * a.res_stride + cb * 8;
          uint64_t res_bytes = 0;
          if (valid == 8)
            std::memcpy(&res_bytes, res, 8);
          else
            for (int j = 0; j < valid; ++j) res_bytes |= static_cast<uint64_t>(res[j]) << (8 * j);
          const __m256i q = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(res_bytes)));
          const __m256 rf = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, rz));
          __m256 f = _mm256_fmadd_ps(rf, rs, _mm256_mul_ps(_mm256_cvtepi32_ps(r), mult));
          f = _mm256_min_ps(_mm256_max_ps(f, fmin), fmax);
          r = _mm256_add_epi32(_mm256_cvtps_epi32(f), zy);
          r = _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
          store8(a.out + m * a.out_stride + cb * 8, r, gather, valid);
        }
        continue;
      }
#pragma GCC unroll 8
      for (int m = 0; m < kRows; ++m) {
        // [c0 c1 c4 c5 | c2 c3 c6 c7] -> [c0 .. c7]
        __m256i r = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[m][0], acc[m][1]), 0xD8);
        r = _mm256_add_epi32(r, bias);
        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(r), mult);
        f = _mm256_min_ps(_mm256_max_ps(f, fmin), fmax);
        r = _mm256_add_epi32(_mm256_cvtps_epi32(f), zy);
        r = _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
        // The low byte of each int32 (0..255 after the clamp), 4 per 128-bit half, joined.
        const __m128i lo4 = _mm_shuffle_epi8(_mm256_castsi256_si128(r), gather);
        const __m128i hi4 = _mm_shuffle_epi8(_mm256_extracti128_si256(r, 1), gather);
        const uint64_t bytes = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpacklo_epi32(lo4, hi4)));
        uint8_t* out = a.out + m * a.out_stride + cb * 8;
        if (valid == 8)
          std::memcpy(out, &bytes, 8);
        else
          for (int j = 0; j < valid; ++j) out[j] = static_cast<uint8_t>(bytes >> (8 * j));
      }
    }
  }
};

}  // namespace
}  // namespace cpu
}  // namespace winfer

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace winfer {
namespace cpu {

const S8TileKernels* s8_tile_kernels_avx2() {
  static const S8TileKernels table = [] {
    S8TileKernels t{};
    t.isa = "avx2";
    t.max_rows = 6;
    fill_s8_tiles<Avx2S8Tile, 1, 2, 3, 4, 5, 6>(t);
    return t;
  }();
  return &table;
}

}  // namespace cpu
}  // namespace winfer

#else

namespace winfer {
namespace cpu {
const S8TileKernels* s8_tile_kernels_avx2() { return nullptr; }
}  // namespace cpu
}  // namespace winfer

#endif
