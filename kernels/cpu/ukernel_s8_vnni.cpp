// AVX-512 VNNI INT8 micro-kernels: up to 14 pixels x 32 output channels (2 zmm of int32) per
// tile, 28 accumulators + 2 weight vectors + 1 broadcast = 31 of the 32 zmm (the FP32 kernel's
// shape, ukernel_avx512.cpp). Per K step of 4 input bytes: two 64-byte weight loads, then per
// pixel one 32-bit broadcast of its 4 activations and two vpdpbusd (u8 x s8, 4 products summed
// into each int32 lane, no saturation: |sum| <= 4 * 255 * 128). Epilogue: int32 -> float32,
// x multiplier, clamp to +-65536, -> int32 (round to nearest even under the default MXCSR),
// + z_y, clamp [lo, hi], narrowed to u8 and stored with a byte mask (only `cols` channels).
#include <cstring>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_s8.h"

#if WINFER_X86_DISPATCH

#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx512vnni,avx2,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx512vnni,avx2,fma")
// GCC 12's AVX-512 headers initialise their _mm512_undefined_* placeholders from themselves,
// which it then reports as uninitialised once the tail variant is inlined (GCC bug 105593, a
// false positive fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace winfer {
namespace cpu {
namespace {

__attribute__((always_inline)) inline __m512i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// acc[m][v] += the dot products of one segment's `quads` K steps (then its tail when kTail):
// the loop every tile shares, kept apart from the epilogue so that GCC keeps the 28
// accumulators in registers (with the tail's loop in the same body it spilled them all).
template <int kRows, bool kTail>
__attribute__((always_inline)) inline void accumulate(__m512i (&acc)[kRows][2], const uint8_t* const (&px)[kRows],
                                                      const int8_t* w, int64_t quads, int tail) {
  if constexpr (kTail) {
    // One loop over the quads and the tail (a second loop for the tail made GCC spill the
    // accumulators): each step's 4 bytes through a masked load, the tail's 1-3 of them.
    const __mmask16 tail_mask = static_cast<__mmask16>((1u << tail) - 1);
    for (int64_t q = 0; q <= quads; ++q, w += 4 * kS8Panel) {
      const __mmask16 k = q < quads ? __mmask16(0xF) : tail_mask;
      const __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + 64);
#pragma GCC unroll 16
      for (int m = 0; m < kRows; ++m) {
        const __m512i x = _mm512_broadcastd_epi32(_mm_maskz_loadu_epi8(k, px[m] + 4 * q));
        acc[m][0] = _mm512_dpbusd_epi32(acc[m][0], x, w0);
        acc[m][1] = _mm512_dpbusd_epi32(acc[m][1], x, w1);
      }
    }
    return;
  }
  for (int64_t q = 0; q < quads; ++q, w += 4 * kS8Panel) {
    // The weights stream through L1 once per tile: fetch them ~8 steps ahead.
    __builtin_prefetch(w + 8 * 4 * kS8Panel);
    __builtin_prefetch(w + 8 * 4 * kS8Panel + 64);
    const __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + 64);
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m) {
      const __m512i x = bcast32(px[m] + 4 * q);
      acc[m][0] = _mm512_dpbusd_epi32(acc[m][0], x, w0);
      acc[m][1] = _mm512_dpbusd_epi32(acc[m][1], x, w1);
    }
  }
}

// The epilogue of 16 channels: int32 -> float32, x multiplier, clamp to +-65536, -> int32
// (nearest even), + z_y, clamp [lo, hi], the `mask` bytes stored.
__attribute__((always_inline)) inline void requantize_store(uint8_t* out, __m512i acc, __m512 mult, __m512 fmin,
                                                            __m512 fmax, __m512i zy, __m512i lo, __m512i hi,
                                                            __mmask16 mask) {
  __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), mult);
  f = _mm512_min_ps(_mm512_max_ps(f, fmin), fmax);
  __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(f), zy);
  r = _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
  _mm_mask_storeu_epi8(out, mask, _mm512_cvtepi32_epi8(r));
}

// The same with a residual: its 16 (masked) bytes widened, minus z_r, to float32, then
// fmadd(that, R, the product): one rounding of the product, one of the fused add (the
// contract's fmaf), then the clamps and the store as above. The residual is read before the
// store, so that it may be the output itself.
__attribute__((always_inline)) inline void requantize_residual_store(uint8_t* out, const uint8_t* res, __m512i acc,
                                                                     __m512 mult, __m512i rz, __m512 rs, __m512 fmin,
                                                                     __m512 fmax, __m512i zy, __m512i lo, __m512i hi,
                                                                     __mmask16 mask) {
  const __m512i q = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask, res));
  const __m512 r = _mm512_cvtepi32_ps(_mm512_sub_epi32(q, rz));
  __m512 f = _mm512_fmadd_ps(r, rs, _mm512_mul_ps(_mm512_cvtepi32_ps(acc), mult));
  f = _mm512_min_ps(_mm512_max_ps(f, fmin), fmax);
  __m512i y = _mm512_add_epi32(_mm512_cvtps_epi32(f), zy);
  y = _mm512_min_epi32(_mm512_max_epi32(y, lo), hi);
  _mm_mask_storeu_epi8(out, mask, _mm512_cvtepi32_epi8(y));
}

template <int kRows, bool kIndirect>
struct VnniTile {
  static void run(const S8TileArgs& a) {
    if (a.tail > 0)
      body<true>(a);
    else
      body<false>(a);
  }

  // Two functions, not one with both loops inlined: GCC then spilled the accumulators.
  template <bool kTail>
  __attribute__((noinline)) static void body(const S8TileArgs& a) {
    __m512i acc[kRows][2];
    const __m512i b0 = _mm512_loadu_si512(a.bias), b1 = _mm512_loadu_si512(a.bias + 16);
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m) {
      acc[m][0] = b0;
      acc[m][1] = b1;
    }
    const uint8_t* px[kRows];
    for (int64_t s = 0; s < a.segments; ++s) {
#pragma GCC unroll 16
      for (int m = 0; m < kRows; ++m) px[m] = s8_segment<kIndirect>(a, s, m);
      accumulate<kRows, kTail>(acc, px, a.weights + s * a.w_seg_stride, a.quads, a.tail);
    }
    store(a, acc);
  }

  // The accumulators go through memory first: with the epilogue's 7 constants live next to the
  // 28 accumulators (35 > 32 zmm), GCC kept a memory copy of every accumulator up to date on
  // every K step (28 stores per 28 vpdpbusd); one pass through a buffer per tile is cheaper.
  __attribute__((always_inline)) static inline void store(const S8TileArgs& a, __m512i (&acc)[kRows][2]) {
    alignas(64) int32_t buf[kRows][kS8Panel];
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m) {
      _mm512_store_si512(buf[m], acc[m][0]);
      _mm512_store_si512(buf[m] + 16, acc[m][1]);
    }
    const __m512 m0 = _mm512_loadu_ps(a.mult), m1 = _mm512_loadu_ps(a.mult + 16);
    const __m512 fmin = _mm512_set1_ps(-65536.f), fmax = _mm512_set1_ps(65536.f);
    const __m512i zy = _mm512_set1_epi32(a.out_zero), lo = _mm512_set1_epi32(a.lo), hi = _mm512_set1_epi32(a.hi);
    const __mmask16 k0 = a.cols >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << a.cols) - 1);
    const __mmask16 k1 = a.cols <= 16 ? __mmask16(0) : static_cast<__mmask16>((1u << (a.cols - 16)) - 1);
    if (a.res != nullptr) {
      const __m512i rz = _mm512_set1_epi32(a.res_zero);
      const __m512 rs = _mm512_set1_ps(a.res_scale);
      for (int m = 0; m < kRows; ++m) {
        uint8_t* out = a.out + m * a.out_stride;
        const uint8_t* res = a.res + m * a.res_stride;
        requantize_residual_store(out, res, _mm512_load_si512(buf[m]), m0, rz, rs, fmin, fmax, zy, lo, hi, k0);
        requantize_residual_store(out + 16, res + 16, _mm512_load_si512(buf[m] + 16), m1, rz, rs, fmin, fmax, zy, lo,
                                  hi, k1);
      }
      return;
    }
    for (int m = 0; m < kRows; ++m) {
      uint8_t* out = a.out + m * a.out_stride;
      requantize_store(out, _mm512_load_si512(buf[m]), m0, fmin, fmax, zy, lo, hi, k0);
      requantize_store(out + 16, _mm512_load_si512(buf[m] + 16), m1, fmin, fmax, zy, lo, hi, k1);
    }
  }
};

}  // namespace
}  // namespace cpu
}  // namespace winfer

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

namespace winfer {
namespace cpu {

const S8TileKernels* s8_tile_kernels_vnni() {
  static const S8TileKernels table = [] {
    S8TileKernels t{};
    t.isa = "avx512vnni";
    t.max_rows = 14;
    fill_s8_tiles<VnniTile, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14>(t);
    return t;
  }();
  return &table;
}

}  // namespace cpu
}  // namespace winfer

#else

namespace winfer {
namespace cpu {
const S8TileKernels* s8_tile_kernels_vnni() { return nullptr; }
}  // namespace cpu
}  // namespace winfer

#endif
