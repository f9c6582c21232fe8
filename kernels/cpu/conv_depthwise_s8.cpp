// INT8 depthwise convolution (conv_s8.h): groups == in_channels == out_channels, the arithmetic
// contract of conv_s8.h.
//
// Packed (s8_pack_depthwise): a 64-byte header, bias' int32 [Cp] (q_b - z_x * sum_taps w),
// M float [Cp], weights [Kh][Kw][Cp] as int32 (the s8 values sign-extended, so that the inner
// loops read them without a conversion), then the VNNI kernel's byte-lane copies of the three
// (see lane_index); Cp = C rounded up to 64 (zeros past C). A few KB to a few tens of KB.
//
// Four output pixels at a time (independent accumulator chains; interior pixels of a row share
// one set of tap pointers plus an offset). Per tap:
//   VNNI, blocks of 64 channels: the 64 input bytes as they lie in memory, vpdpbusd with 4
//     weight vectors that each keep one byte per int32 lane (channel 4j + k in byte k of lane j
//     of vector k): 16 products per instruction and no widening; the 4 accumulators' results
//     are shifted into their bytes and OR-ed, which restores the channel order for the store.
//   VNNI, a last block of at most 48 channels (and AVX2, 16 channels per pass): the channels
//     zero-extended to int32 lanes (vpmovzxbd), multiplied with the int32 weights by the 16-bit
//     pair multiply-add (vpdpwssd, vpmaddwd): the activation's high 16 bits are 0, so
//     lane = x * w + 0 * (w's sign bits) = x * w exactly.
// The input's last channels are read with masked loads (AVX-512) or through a copy (AVX2):
// nothing past the tensor is touched; padding taps read a row of z_x.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/conv_s8.h"
#include "kernels/cpu/cpu_common.h"

#if WINFER_X86_DISPATCH
#include <immintrin.h>
#endif

namespace winfer {
namespace cpu {
namespace {

constexpr uint32_t kDepthwiseMagic = 0x38535744;  // "DWS8"

struct DwHeader {
  uint32_t magic;
  int32_t in_zero, out_zero, lo, hi, unused;
  int64_t channels, kh, kw, cp, unused2;
};
static_assert(sizeof(DwHeader) <= 64, "header fits its 64 bytes");

struct DwPacking {
  explicit DwPacking(const ConvParams& p)
      : c(p.in_channels),
        cp(ceil_div(c, 64) * 64),
        taps(p.kernel_h * p.kernel_w),
        bias_offset(64),
        mult_offset(bias_offset + cp * 4),
        weight_offset(mult_offset + cp * 4),
        lane_bias_offset(weight_offset + taps * cp * 4),
        lane_mult_offset(lane_bias_offset + cp * 4),
        lane_weight_offset(lane_mult_offset + cp * 4),
        bytes(lane_weight_offset + taps * cp * 4) {}
  int64_t c, cp, taps, bias_offset, mult_offset, weight_offset;
  int64_t lane_bias_offset, lane_mult_offset, lane_weight_offset, bytes;
};

// The VNNI kernel's copy of the weights, bias and multipliers (byte lanes). Per block of 64
// channels c0 and tap: 4 vectors of 64 bytes; vector k holds in int32 lane j the weight of
// channel c0 + 4j + k in byte k and zeros in the other 3 bytes, so that vpdpbusd of the 64
// input bytes (channels c0 .. c0 + 63, as they lie in memory) with vector k adds
// x[c0 + 4j + k] * w[c0 + 4j + k] to lane j of accumulator k: 16 products per instruction,
// no widening of the input. Bias and multiplier in the same order: [c0][k][j] = channel
// c0 + 4j + k.
inline int64_t lane_index(int64_t ch) {
  const int64_t c0 = ch / 64 * 64, r = ch - c0;
  return c0 + (r % 4) * 16 + r / 4;
}

std::string where(const ConvParams& p) { return "INT8 depthwise convolution " + p.to_string() + ": "; }

void check_depthwise(const ConvParams& p) {
  if (!p.is_valid() || p.groups != p.in_channels || p.out_channels != p.in_channels)
    throw std::invalid_argument(where(p) + "expected valid parameters with groups == in_channels == out_channels");
}

// What one run passes to the per-ISA pixel loops.
struct DwJob {
  const ConvParams* p;
  const DwHeader* h;
  const int32_t* bias;
  const float* mult;
  const int32_t* w;          // [taps][cp]
  const int32_t* lane_bias;  // [cp] in byte-lane order (lane_index)
  const float* lane_mult;
  const uint8_t* lane_w;  // [cp / 64][taps][4][64]
  const uint8_t* input;
  const uint8_t* zero_row;  // C bytes of z_x
  uint8_t* output;
  int64_t ho, wo;
};

// Walks output pixels [first, ...) in order (over all images) and gives each one's tap
// pointers, z_x's row for padding taps: one division at the start, and for pixels whose taps
// all lie inside the input a pointer plus the taps' fixed offsets.
class TapWalker {
 public:
  TapWalker(const DwJob& j, int64_t first)
      : j_(j), p_(*j.p), ptrs_(static_cast<size_t>(p_.kernel_h * p_.kernel_w)), offsets_(ptrs_.size()) {
    n_ = first / (j.ho * j.wo);
    oy_ = first / j.wo % j.ho;
    ox_ = first % j.wo;
    for (int64_t kh = 0; kh < p_.kernel_h; ++kh)
      for (int64_t kw = 0; kw < p_.kernel_w; ++kw)
        offsets_[kh * p_.kernel_w + kw] = (kh * p_.dilation_h * p_.in_w + kw * p_.dilation_w) * p_.in_channels;
  }
  // Whether the next `count` pixels lie in the current output row with all their taps inside
  // the input: then pixel q's taps are the first one's + q * stride_w * C.
  bool interior_run(int count) const {
    const int64_t iy0 = oy_ * p_.stride_h - p_.pad_top, ix0 = ox_ * p_.stride_w - p_.pad_left;
    const int64_t ix_last = (ox_ + count - 1) * p_.stride_w - p_.pad_left + (p_.kernel_w - 1) * p_.dilation_w;
    return ox_ + count <= j_.wo && iy0 >= 0 && iy0 + (p_.kernel_h - 1) * p_.dilation_h < p_.in_h && ix0 >= 0 &&
           ix_last < p_.in_w;
  }
  void skip(int count) {
    for (int q = 0; q < count; ++q) next();
  }
  const uint8_t* const* taps() {
    const int64_t iy0 = oy_ * p_.stride_h - p_.pad_top, ix0 = ox_ * p_.stride_w - p_.pad_left;
    const uint8_t* image = j_.input + n_ * p_.in_h * p_.in_w * p_.in_channels;
    const size_t taps = ptrs_.size();
    if (iy0 >= 0 && iy0 + (p_.kernel_h - 1) * p_.dilation_h < p_.in_h && ix0 >= 0 &&
        ix0 + (p_.kernel_w - 1) * p_.dilation_w < p_.in_w) {
      const uint8_t* base = image + (iy0 * p_.in_w + ix0) * p_.in_channels;
      for (size_t t = 0; t < taps; ++t) ptrs_[t] = base + offsets_[t];
      return ptrs_.data();
    }
    for (int64_t kh = 0; kh < p_.kernel_h; ++kh)
      for (int64_t kw = 0; kw < p_.kernel_w; ++kw) {
        const int64_t iy = iy0 + kh * p_.dilation_h, ix = ix0 + kw * p_.dilation_w;
        const bool inside = iy >= 0 && iy < p_.in_h && ix >= 0 && ix < p_.in_w;
        ptrs_[kh * p_.kernel_w + kw] = inside ? image + (iy * p_.in_w + ix) * p_.in_channels : j_.zero_row;
      }
    return ptrs_.data();
  }
  void next() {
    if (++ox_ < j_.wo) return;
    ox_ = 0;
    if (++oy_ < j_.ho) return;
    oy_ = 0;
    ++n_;
  }

 private:
  const DwJob& j_;
  const ConvParams& p_;
  std::vector<const uint8_t*> ptrs_;
  std::vector<int64_t> offsets_;
  int64_t n_, oy_, ox_;
};

void dw_pixels_generic(const DwJob& j, int64_t first, int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t taps = p.kernel_h * p.kernel_w, c = p.in_channels;
  TapWalker walker(j, first);
  for (int64_t pix = first; pix < last; ++pix, walker.next()) {
    const uint8_t* const* ptrs = walker.taps();
    uint8_t* out = j.output + pix * p.out_stride();
    for (int64_t ch = 0; ch < c; ++ch) {
      int32_t acc = j.bias[ch];
      for (int64_t t = 0; t < taps; ++t) acc += ptrs[t][ch] * j.w[t * j.h->cp + ch];
      out[ch] = s8_requantize(acc, j.mult[ch], j.h->out_zero, j.h->lo, j.h->hi);
    }
  }
}

#if WINFER_X86_DISPATCH

// Output pixels per group: each tap's multiply-add is a dependent chain per accumulator
// (vpdpwssd: 5 cycles of latency), so one pixel of 32 channels ran 2 chains, latency-bound at a
// quarter of the rate; 4 pixels run 4 x kVecs.
constexpr int kDwPixels = 4;

// Pointer sets of a group of up to kDwPixels pixels: [pixel][tap]; a short group repeats its
// last pixel (computed, not stored). Shared by the AVX-512 VNNI and AVX2 paths, so defined
// here, before the target pragmas: inside the AVX-512 region GCC compiled fill() with zmm
// instructions, and the AVX2 path died with SIGILL on CPUs without AVX-512.
struct PixelGroup {
  explicit PixelGroup(int64_t taps) : taps(taps), ptrs(static_cast<size_t>(taps * kDwPixels)) {}
  // Fills the group from the walker's next `count` pixels, advancing it. A full group of
  // interior pixels of one row keeps only the first pixel's pointers (`uniform`: pixel q's are
  // those + q * step).
  void fill(TapWalker& walker, int count, int64_t step) {
    n = count;
    uniform = count == kDwPixels && walker.interior_run(count);
    if (uniform) {
      const uint8_t* const* t = walker.taps();
      std::copy(t, t + taps, ptrs.begin());
      walker.skip(count);
      this->step = step;
      return;
    }
    for (int q = 0; q < kDwPixels; ++q) {
      if (q < count) {
        const uint8_t* const* t = walker.taps();
        std::copy(t, t + taps, ptrs.begin() + q * taps);
        walker.next();
      } else {
        std::copy(ptrs.begin() + (count - 1) * taps, ptrs.begin() + count * taps, ptrs.begin() + q * taps);
      }
    }
  }
  // Where pixel q's tap t starts.
  const uint8_t* at(int q, int64_t t) const { return uniform ? ptrs[t] + q * step : ptrs[q * taps + t]; }
  int64_t taps;
  int n = 0;
  bool uniform = false;
  int64_t step = 0;
  std::vector<const uint8_t*> ptrs;
};

// Everything up to the matching pop is compiled for AVX-512 VNNI (a pragma rather than target
// attributes: with the attributes GCC 12 warned of uninitialised values inside the intrinsics).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512vnni")
// GCC 12 reports the intrinsics' own _mm512_undefined_* placeholders as maybe uninitialised
// once the block is inlined (a false positive: they are masked operands never read).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// 64 channels from c0 (byte mask `mask` of the input's and output's channels) of a group of
// pixels: 4 accumulators per pixel, k = the channel's position mod 4 (see lane_index).
__attribute__((always_inline)) inline void dw_block_vnni(const DwJob& j, const PixelGroup& g, int64_t c0,
                                                         __mmask64 mask, uint8_t* const* out) {
  const int64_t taps = g.taps;
  __m512i acc[kDwPixels][4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m512i bias = _mm512_loadu_si512(j.lane_bias + c0 + 16 * k);
#pragma GCC unroll 4
    for (int q = 0; q < kDwPixels; ++q) acc[q][k] = bias;
  }
  const uint8_t* w = j.lane_w + c0 / 64 * taps * 256;
  for (int64_t t = 0; t < taps; ++t, w += 256) {
    const __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + 64), w2 = _mm512_loadu_si512(w + 128),
                  w3 = _mm512_loadu_si512(w + 192);
#pragma GCC unroll 4
    for (int q = 0; q < kDwPixels; ++q) {
      const __m512i x = _mm512_maskz_loadu_epi8(mask, g.at(q, t) + c0);
      acc[q][0] = _mm512_dpbusd_epi32(acc[q][0], x, w0);
      acc[q][1] = _mm512_dpbusd_epi32(acc[q][1], x, w1);
      acc[q][2] = _mm512_dpbusd_epi32(acc[q][2], x, w2);
      acc[q][3] = _mm512_dpbusd_epi32(acc[q][3], x, w3);
    }
  }
  const __m512 fmin = _mm512_set1_ps(-65536.f), fmax = _mm512_set1_ps(65536.f);
  const __m512i zy = _mm512_set1_epi32(j.h->out_zero), lo = _mm512_set1_epi32(j.h->lo), hi = _mm512_set1_epi32(j.h->hi);
  for (int q = 0; q < g.n; ++q) {
    __m512i bytes = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[q][k]), _mm512_loadu_ps(j.lane_mult + c0 + 16 * k));
      f = _mm512_min_ps(_mm512_max_ps(f, fmin), fmax);
      __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(f), zy);
      r = _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
      // Channel c0 + 4j + k is byte k of lane j: in memory order once shifted into place.
      bytes = _mm512_or_si512(bytes, _mm512_slli_epi32(r, 8 * k));
    }
    _mm512_mask_storeu_epi8(out[q] + c0, mask, bytes);
  }
}

// A last block of at most 48 channels: kVecs vectors of 16 channels from c0 (the last one masked
// by `last`) with vpdpwssd on zero-extended activations and the int32 weights, where the byte-lane
// block would compute 64 (measured on 32 channels: 0.23 ms here against 0.36 ms byte-lane).
template <int kVecs>
__attribute__((always_inline)) inline void dw_block_vnni_words(const DwJob& j, const PixelGroup& g, int64_t c0,
                                                               __mmask16 last, uint8_t* const* out) {
  const int64_t cp = j.h->cp, taps = g.taps;
  __m512i acc[kDwPixels][kVecs];
#pragma GCC unroll 4
  for (int b = 0; b < kVecs; ++b) {
    const __m512i bias = _mm512_loadu_si512(j.bias + c0 + 16 * b);
#pragma GCC unroll 4
    for (int q = 0; q < kDwPixels; ++q) acc[q][b] = bias;
  }
  for (int64_t t = 0; t < taps; ++t) {
    const int32_t* w = j.w + t * cp + c0;
#pragma GCC unroll 4
    for (int q = 0; q < kDwPixels; ++q) {
      const uint8_t* x = g.at(q, t) + c0;
#pragma GCC unroll 4
      for (int b = 0; b < kVecs; ++b) {
        // A masked load only for a partial last vector (the input's last channels).
        const __m512i xv = b == kVecs - 1 && last != 0xFFFF
                               ? _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(last, x + 16 * b))
                               : _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 16 * b)));
        acc[q][b] = _mm512_dpwssd_epi32(acc[q][b], xv, _mm512_loadu_si512(w + 16 * b));
      }
    }
  }
  const __m512 fmin = _mm512_set1_ps(-65536.f), fmax = _mm512_set1_ps(65536.f);
  const __m512i zy = _mm512_set1_epi32(j.h->out_zero), lo = _mm512_set1_epi32(j.h->lo), hi = _mm512_set1_epi32(j.h->hi);
  for (int q = 0; q < g.n; ++q)
#pragma GCC unroll 4
    for (int b = 0; b < kVecs; ++b) {
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[q][b]), _mm512_loadu_ps(j.mult + c0 + 16 * b));
      f = _mm512_min_ps(_mm512_max_ps(f, fmin), fmax);
      __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(f), zy);
      r = _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
      _mm_mask_storeu_epi8(out[q] + c0 + 16 * b, b == kVecs - 1 ? last : static_cast<__mmask16>(0xFFFF),
                           _mm512_cvtepi32_epi8(r));
    }
}

void dw_pixels_vnni(const DwJob& j, int64_t first, int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t c = p.in_channels;
  TapWalker walker(j, first);
  PixelGroup group(p.kernel_h * p.kernel_w);
  uint8_t* out[kDwPixels];
  for (int64_t pix = first; pix < last; pix += kDwPixels) {
    const int count = static_cast<int>(std::min<int64_t>(kDwPixels, last - pix));
    group.fill(walker, count, p.stride_w * p.in_channels);
    for (int q = 0; q < kDwPixels; ++q) out[q] = j.output + (pix + std::min(q, count - 1)) * p.out_stride();
    for (int64_t c0 = 0; c0 < c; c0 += 64) {
      const int64_t left = c - c0;
      if (left > 48) {
        const __mmask64 mask = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
        dw_block_vnni(j, group, c0, mask, out);
        continue;
      }
      const int vecs = static_cast<int>(ceil_div(left, 16));
      const __mmask16 last_mask = static_cast<__mmask16>((1u << (left - 16 * (vecs - 1))) - 1);
      if (vecs == 3)
        dw_block_vnni_words<3>(j, group, c0, last_mask, out);
      else if (vecs == 2)
        dw_block_vnni_words<2>(j, group, c0, last_mask, out);
      else
        dw_block_vnni_words<1>(j, group, c0, last_mask, out);
    }
  }
}

#if defined(__clang__)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

// kVecs vectors of 8 channels from c0, the last one holding `last` (1..8) channels, of a group
// of pixels (4 x 2 accumulators + 2 temporaries of the 16 ymm).
template <int kVecs>
__attribute__((always_inline)) inline void dw_block_avx2(const DwJob& j, const PixelGroup& g, int64_t c0, int last,
                                                         uint8_t* const* out) {
  const int64_t cp = j.h->cp, taps = g.taps;
  __m256i acc[kDwPixels][kVecs];
#pragma GCC unroll 4
  for (int b = 0; b < kVecs; ++b) {
    const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(j.bias + c0 + 8 * b));
#pragma GCC unroll 4
    for (int q = 0; q < kDwPixels; ++q) acc[q][b] = bias;
  }
  for (int64_t t = 0; t < taps; ++t) {
    const int32_t* w = j.w + t * cp + c0;
#pragma GCC unroll 4
    for (int q = 0; q < kDwPixels; ++q) {
      const uint8_t* x = g.at(q, t) + c0;
#pragma GCC unroll 4
      for (int b = 0; b < kVecs; ++b) {
        __m128i xb;
        if (b < kVecs - 1 || last == 8) {
          xb = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + 8 * b));
        } else {
          uint64_t v = 0;
          std::memcpy(&v, x + 8 * b, static_cast<size_t>(last));
          xb = _mm_cvtsi64_si128(static_cast<int64_t>(v));
        }
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 8 * b));
        acc[q][b] = _mm256_add_epi32(acc[q][b], _mm256_madd_epi16(_mm256_cvtepu8_epi32(xb), wv));
      }
    }
  }
  const __m256 fmin = _mm256_set1_ps(-65536.f), fmax = _mm256_set1_ps(65536.f);
  const __m256i zy = _mm256_set1_epi32(j.h->out_zero), lo = _mm256_set1_epi32(j.h->lo), hi = _mm256_set1_epi32(j.h->hi);
  const __m128i gather = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  for (int q = 0; q < g.n; ++q)
#pragma GCC unroll 4
    for (int b = 0; b < kVecs; ++b) {
      __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[q][b]), _mm256_loadu_ps(j.mult + c0 + 8 * b));
      f = _mm256_min_ps(_mm256_max_ps(f, fmin), fmax);
      __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(f), zy);
      r = _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
      const __m128i lo4 = _mm_shuffle_epi8(_mm256_castsi256_si128(r), gather);
      const __m128i hi4 = _mm_shuffle_epi8(_mm256_extracti128_si256(r, 1), gather);
      const uint64_t bytes = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpacklo_epi32(lo4, hi4)));
      std::memcpy(out[q] + c0 + 8 * b, &bytes, static_cast<size_t>(b == kVecs - 1 ? last : 8));
    }
}

void dw_pixels_avx2(const DwJob& j, int64_t first, int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t c = p.in_channels;
  TapWalker walker(j, first);
  PixelGroup group(p.kernel_h * p.kernel_w);
  uint8_t* out[kDwPixels];
  for (int64_t pix = first; pix < last; pix += kDwPixels) {
    const int count = static_cast<int>(std::min<int64_t>(kDwPixels, last - pix));
    group.fill(walker, count, p.stride_w * p.in_channels);
    for (int q = 0; q < kDwPixels; ++q) out[q] = j.output + (pix + std::min(q, count - 1)) * p.out_stride();
    for (int64_t c0 = 0; c0 < c; c0 += 16) {
      const int64_t left = c - c0;
      const int vecs = left > 8 ? 2 : 1;
      const int tail = static_cast<int>(std::min<int64_t>(8, left - 8 * (vecs - 1)));
      if (vecs == 2)
        dw_block_avx2<2>(j, group, c0, tail, out);
      else
        dw_block_avx2<1>(j, group, c0, tail, out);
    }
  }
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif

}  // namespace

size_t s8_depthwise_packed_bytes(const ConvParams& p) {
  check_depthwise(p);
  return static_cast<size_t>(DwPacking(p).bytes);
}

void s8_pack_depthwise(const ConvParams& p, const int8_t* weight_oihw, const S8ConvQuant& q, void* packed) {
  check_depthwise(p);
  const std::string at = where(p);
  if (q.in_zero < 0 || q.in_zero > 255 || q.out_zero < 0 || q.out_zero > 255)
    throw std::invalid_argument(at + "zero points must be in 0..255");
  if (q.lo < 0 || q.hi > 255 || q.lo > q.hi)
    throw std::invalid_argument(at + "output clamp must satisfy 0 <= lo <= hi <= 255");
  if (q.multiplier == nullptr) throw std::invalid_argument(at + "requantization multipliers missing");
  const DwPacking pk(p);
  uint8_t* base = static_cast<uint8_t*>(packed);
  std::memset(base, 0, static_cast<size_t>(pk.bytes));
  DwHeader h{};
  h.magic = kDepthwiseMagic;
  h.in_zero = q.in_zero;
  h.out_zero = q.out_zero;
  h.lo = q.lo;
  h.hi = q.hi;
  h.channels = pk.c;
  h.kh = p.kernel_h;
  h.kw = p.kernel_w;
  h.cp = pk.cp;
  std::memcpy(base, &h, sizeof h);
  int32_t* bias = reinterpret_cast<int32_t*>(base + pk.bias_offset);
  float* mult = reinterpret_cast<float*>(base + pk.mult_offset);
  int32_t* w = reinterpret_cast<int32_t*>(base + pk.weight_offset);
  for (int64_t ch = 0; ch < pk.c; ++ch) {
    if (!std::isfinite(q.multiplier[ch]) || q.multiplier[ch] < 0.f)
      throw std::invalid_argument(at + "multiplier of channel " + std::to_string(ch) + " must be finite and >= 0");
    int64_t sum = 0;
    for (int64_t t = 0; t < pk.taps; ++t) {
      const int8_t v = weight_oihw[ch * pk.taps + t];
      w[t * pk.cp + ch] = v;
      sum += v;
    }
    // |bias'| + taps * 255 * 128 must stay below 2^31.
    const int64_t b = (q.bias != nullptr ? q.bias[ch] : 0) - int64_t{q.in_zero} * sum;
    if (std::abs(b) + pk.taps * 255 * 128 >= (int64_t{1} << 31))
      throw std::invalid_argument(at + "channel " + std::to_string(ch) + " can overflow the int32 accumulator");
    bias[ch] = static_cast<int32_t>(b);
    mult[ch] = q.multiplier[ch];
    const int64_t li = lane_index(ch), c0 = ch / 64 * 64, r = ch - c0;
    reinterpret_cast<int32_t*>(base + pk.lane_bias_offset)[li] = bias[ch];
    reinterpret_cast<float*>(base + pk.lane_mult_offset)[li] = mult[ch];
    for (int64_t t = 0; t < pk.taps; ++t)
      base[pk.lane_weight_offset + (c0 / 64 * pk.taps + t) * 256 + (r % 4) * 64 + r] =
          static_cast<uint8_t>(weight_oihw[ch * pk.taps + t]);
  }
}

void s8_depthwise_conv(const ConvParams& p, const uint8_t* input, const void* packed, uint8_t* output, int threads) {
  check_depthwise(p);
  const DwPacking pk(p);
  const uint8_t* base = static_cast<const uint8_t*>(packed);
  const DwHeader& h = *reinterpret_cast<const DwHeader*>(base);
  if (h.magic != kDepthwiseMagic || h.channels != p.in_channels || h.kh != p.kernel_h || h.kw != p.kernel_w)
    throw std::invalid_argument(where(p) + "packed weights were packed for another shape or kind");
  const std::vector<uint8_t> zero_row(static_cast<size_t>(p.in_channels), static_cast<uint8_t>(h.in_zero));
  DwJob j{&p,
          &h,
          reinterpret_cast<const int32_t*>(base + pk.bias_offset),
          reinterpret_cast<const float*>(base + pk.mult_offset),
          reinterpret_cast<const int32_t*>(base + pk.weight_offset),
          reinterpret_cast<const int32_t*>(base + pk.lane_bias_offset),
          reinterpret_cast<const float*>(base + pk.lane_mult_offset),
          base + pk.lane_weight_offset,
          input,
          zero_row.data(),
          output,
          p.out_h(),
          p.out_w()};
  void (*fn)(const DwJob&, int64_t, int64_t) = dw_pixels_generic;
#if WINFER_X86_DISPATCH
  const S8Isa isa = s8_isa();
  if (isa == S8Isa::kVnni) fn = dw_pixels_vnni;
  if (isa == S8Isa::kAvx2) fn = dw_pixels_avx2;
#endif
  const int64_t pixels = p.batch * j.ho * j.wo;
  parallel_chunks(pixels, p.in_channels * pk.taps, threads, [&](int64_t first, int64_t last) { fn(j, first, last); });
}

}  // namespace cpu
}  // namespace winfer
