// u8 max pooling (maxpool_u8.h): one output row per call, the window's valid taps found once
// per output pixel (valid_taps, as the FP32 pool), then per block of channels the running
// maximum in registers over the taps: 4 x 64 channels per block on AVX-512 (masked last
// block), 2 x 32 then 16 on AVX2, a byte loop that compilers vectorise on the scalar path.
#include "kernels/cpu/maxpool_u8.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_common.h"

#if WINFER_X86_DISPATCH
#include <immintrin.h>
#endif

namespace winfer {
namespace cpu {
namespace {

// The window of output pixel (oh, ow): in-bounds taps [kh0, kh1) x [kw0, kw1) and the input
// pixel of tap (0, 0) (possibly outside the input: only valid taps are read).
struct Window {
  int64_t kh0, kh1, kw0, kw1, ih0, iw0;
};

inline Window window_of(const PoolParams& p, int64_t oh, int64_t ow) {
  Window w;
  w.ih0 = oh * p.stride_h - p.pad_top;
  w.iw0 = ow * p.stride_w - p.pad_left;
  valid_taps(w.ih0, p.dilation_h, p.kernel_h, p.in_h, &w.kh0, &w.kh1);
  valid_taps(w.iw0, p.dilation_w, p.kernel_w, p.in_w, &w.kw0, &w.kw1);
  return w;
}

// The address of tap (kh, kw)'s channel c.
inline const uint8_t* tap(const PoolParams& p, const uint8_t* image, const Window& w, int64_t kh, int64_t kw,
                          int64_t c) {
  return image + ((w.ih0 + kh * p.dilation_h) * p.in_w + (w.iw0 + kw * p.dilation_w)) * p.channels + c;
}

using RowFn = void (*)(const PoolParams&, const uint8_t*, int64_t, uint8_t*);

void max_row_generic(const PoolParams& p, const uint8_t* image, int64_t oh, uint8_t* out_row) {
  const int64_t c_total = p.channels;
  for (int64_t ow = 0; ow < p.out_w; ++ow) {
    uint8_t* out = out_row + ow * c_total;
    const Window w = window_of(p, oh, ow);
    std::memset(out, 0, static_cast<size_t>(c_total));
    for (int64_t kh = w.kh0; kh < w.kh1; ++kh)
      for (int64_t kw = w.kw0; kw < w.kw1; ++kw) {
        const uint8_t* x = tap(p, image, w, kh, kw, 0);
        for (int64_t c = 0; c < c_total; ++c) out[c] = std::max(out[c], x[c]);
      }
  }
}

#if WINFER_X86_DISPATCH

WINFER_AVX512_WARNINGS_BEGIN

WINFER_TARGET_AVX512 void max_row_avx512(const PoolParams& p, const uint8_t* image, int64_t oh, uint8_t* out_row) {
  const int64_t c_total = p.channels;
  for (int64_t ow = 0; ow < p.out_w; ++ow) {
    uint8_t* out = out_row + ow * c_total;
    const Window w = window_of(p, oh, ow);
    int64_t c = 0;
    for (; c + 256 <= c_total; c += 256) {
      __m512i m0 = _mm512_setzero_si512(), m1 = m0, m2 = m0, m3 = m0;
      for (int64_t kh = w.kh0; kh < w.kh1; ++kh)
        for (int64_t kw = w.kw0; kw < w.kw1; ++kw) {
          const uint8_t* x = tap(p, image, w, kh, kw, c);
          m0 = _mm512_max_epu8(m0, _mm512_loadu_si512(x));
          m1 = _mm512_max_epu8(m1, _mm512_loadu_si512(x + 64));
          m2 = _mm512_max_epu8(m2, _mm512_loadu_si512(x + 128));
          m3 = _mm512_max_epu8(m3, _mm512_loadu_si512(x + 192));
        }
      _mm512_storeu_si512(out + c, m0);
      _mm512_storeu_si512(out + c + 64, m1);
      _mm512_storeu_si512(out + c + 128, m2);
      _mm512_storeu_si512(out + c + 192, m3);
    }
    for (; c < c_total; c += 64) {
      const int64_t left = std::min<int64_t>(64, c_total - c);
      const __mmask64 k = left == 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
      __m512i m = _mm512_setzero_si512();
      for (int64_t kh = w.kh0; kh < w.kh1; ++kh)
        for (int64_t kw = w.kw0; kw < w.kw1; ++kw)
          m = _mm512_max_epu8(m, _mm512_maskz_loadu_epi8(k, tap(p, image, w, kh, kw, c)));
      _mm512_mask_storeu_epi8(out + c, k, m);
    }
  }
}

WINFER_AVX512_WARNINGS_END

WINFER_TARGET_AVX2 void max_row_avx2(const PoolParams& p, const uint8_t* image, int64_t oh, uint8_t* out_row) {
  const int64_t c_total = p.channels;
  for (int64_t ow = 0; ow < p.out_w; ++ow) {
    uint8_t* out = out_row + ow * c_total;
    const Window w = window_of(p, oh, ow);
    int64_t c = 0;
    for (; c + 64 <= c_total; c += 64) {
      __m256i m0 = _mm256_setzero_si256(), m1 = m0;
      for (int64_t kh = w.kh0; kh < w.kh1; ++kh)
        for (int64_t kw = w.kw0; kw < w.kw1; ++kw) {
          const uint8_t* x = tap(p, image, w, kh, kw, c);
          m0 = _mm256_max_epu8(m0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
          m1 = _mm256_max_epu8(m1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32)));
        }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c), m0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c + 32), m1);
    }
    for (; c + 16 <= c_total; c += 16) {
      __m128i m = _mm_setzero_si128();
      for (int64_t kh = w.kh0; kh < w.kh1; ++kh)
        for (int64_t kw = w.kw0; kw < w.kw1; ++kw)
          m = _mm_max_epu8(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(tap(p, image, w, kh, kw, c))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + c), m);
    }
    for (; c < c_total; ++c) {
      uint8_t m = 0;
      for (int64_t kh = w.kh0; kh < w.kh1; ++kh)
        for (int64_t kw = w.kw0; kw < w.kw1; ++kw) m = std::max(m, *tap(p, image, w, kh, kw, c));
      out[c] = m;
    }
  }
}

#endif

}  // namespace

void maxpool2d_nhwc_u8(const PoolParams& p, const uint8_t* in, uint8_t* out, int threads) {
  RowFn row_fn = max_row_generic;
#if WINFER_X86_DISPATCH
  switch (cpu_isa()) {
    case Isa::kAvx512: row_fn = max_row_avx512; break;
    case Isa::kAvx2: row_fn = max_row_avx2; break;
    case Isa::kGeneric: break;
  }
#endif
  const int64_t rows = p.batch * p.out_h, image = p.in_h * p.in_w * p.channels;
  // About a quarter of the FP32 pool's work per tap (4x the values per vector).
  const int nt = threads_for_work(threads, rows * p.out_w * p.kernel_h * p.kernel_w * p.channels / 4);
  parallel_pieces(nt, rows, pieces_for(nt, rows, rows * p.out_w * p.kernel_h * p.kernel_w * p.channels / 4),
                  [&](int64_t first, int64_t last, int) {
                    for (int64_t r = first; r < last; ++r)
                      row_fn(p, in + r / p.out_h * image, r % p.out_h, out + r * p.out_w * p.channels);
                  });
}

}  // namespace cpu
}  // namespace winfer
