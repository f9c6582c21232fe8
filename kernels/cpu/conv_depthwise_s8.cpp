// INT8 depthwise convolution (conv_s8.h): groups == in_channels == out_channels, the arithmetic
// contract of conv_s8.h.
//
// Packed (s8_pack_depthwise): a 64-byte header, bias' int32 [Cp] (q_b - z_x * sum_taps w),
// M float [Cp], weights s8 [Kh][Kw][Cp], Cp = C rounded up to 64 (zeros past C).
//
// One output pixel at a time, 64 channels per pass (4 zmm, or 4 ymm of 8 on AVX2): per tap the
// input pixel's channels (or a row of z_x for a padding tap) zero-extended to int32 lanes and
// the tap's weights sign-extended to int32 lanes. A product per lane then comes from the 16-bit
// pair multiply-add (VNNI vpdpwssd, AVX2 vpmaddwd): the activation's high 16 bits are 0, so
// lane = x * w + 0 * (w's sign bits) = x * w exactly. The input's last channels are read with
// masked loads (AVX-512) or through a copy (AVX2): nothing past the tensor is touched.
#include <omp.h>

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
        bytes(weight_offset + taps * cp) {}
  int64_t c, cp, taps, bias_offset, mult_offset, weight_offset, bytes;
};

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
  const int8_t* w;  // [taps][cp]
  const uint8_t* input;
  const uint8_t* zero_row;  // C bytes of z_x
  uint8_t* output;
  int64_t ho, wo;
};

// The taps' input pointers of output pixel `pix` (over all images), z_x's row for padding taps.
inline void tap_pointers(const DwJob& j, int64_t pix, const uint8_t** ptrs) {
  const ConvParams& p = *j.p;
  const int64_t n = pix / (j.ho * j.wo), oy = pix / j.wo % j.ho, ox = pix % j.wo;
  const uint8_t* image = j.input + n * p.in_h * p.in_w * p.in_channels;
  for (int64_t kh = 0; kh < p.kernel_h; ++kh)
    for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
      const int64_t iy = oy * p.stride_h - p.pad_top + kh * p.dilation_h;
      const int64_t ix = ox * p.stride_w - p.pad_left + kw * p.dilation_w;
      const bool inside = iy >= 0 && iy < p.in_h && ix >= 0 && ix < p.in_w;
      ptrs[kh * p.kernel_w + kw] = inside ? image + (iy * p.in_w + ix) * p.in_channels : j.zero_row;
    }
}

void dw_pixels_generic(const DwJob& j, int64_t first, int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t taps = p.kernel_h * p.kernel_w, c = p.in_channels;
  std::vector<const uint8_t*> ptrs(static_cast<size_t>(taps));
  for (int64_t pix = first; pix < last; ++pix) {
    tap_pointers(j, pix, ptrs.data());
    uint8_t* out = j.output + pix * p.out_stride();
    for (int64_t ch = 0; ch < c; ++ch) {
      int32_t acc = j.bias[ch];
      for (int64_t t = 0; t < taps; ++t) acc += ptrs[t][ch] * j.w[t * j.h->cp + ch];
      out[ch] = s8_requantize(acc, j.mult[ch], j.h->out_zero, j.h->lo, j.h->hi);
    }
  }
}

#if WINFER_X86_DISPATCH

__attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni"))) void dw_pixels_vnni(const DwJob& j, int64_t first,
                                                                                    int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t taps = p.kernel_h * p.kernel_w, c = p.in_channels, cp = j.h->cp;
  std::vector<const uint8_t*> ptrs(static_cast<size_t>(taps));
  const __m512 fmin = _mm512_set1_ps(-65536.f), fmax = _mm512_set1_ps(65536.f);
  const __m512i zy = _mm512_set1_epi32(j.h->out_zero), lo = _mm512_set1_epi32(j.h->lo), hi = _mm512_set1_epi32(j.h->hi);
  for (int64_t pix = first; pix < last; ++pix) {
    tap_pointers(j, pix, ptrs.data());
    uint8_t* out = j.output + pix * p.out_stride();
    for (int64_t c0 = 0; c0 < c; c0 += 64) {
      __mmask16 mask[4];
      __m512i acc[4];
      for (int b = 0; b < 4; ++b) {
        const int64_t valid = std::clamp<int64_t>(c - c0 - 16 * b, 0, 16);
        mask[b] = static_cast<__mmask16>((1u << valid) - 1);
        acc[b] = _mm512_loadu_si512(j.bias + c0 + 16 * b);
      }
      for (int64_t t = 0; t < taps; ++t) {
        const uint8_t* x = ptrs[t] + c0;
        const int8_t* w = j.w + t * cp + c0;
#pragma GCC unroll 4
        for (int b = 0; b < 4; ++b) {
          const __m512i xv = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(mask[b], x + 16 * b));
          const __m512i wv = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16 * b)));
          acc[b] = _mm512_dpwssd_epi32(acc[b], xv, wv);
        }
      }
#pragma GCC unroll 4
      for (int b = 0; b < 4; ++b) {
        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[b]), _mm512_loadu_ps(j.mult + c0 + 16 * b));
        f = _mm512_min_ps(_mm512_max_ps(f, fmin), fmax);
        __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(f), zy);
        r = _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
        _mm_mask_storeu_epi8(out + c0 + 16 * b, mask[b], _mm512_cvtepi32_epi8(r));
      }
    }
  }
}

__attribute__((target("avx2,fma"))) void dw_pixels_avx2(const DwJob& j, int64_t first, int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t taps = p.kernel_h * p.kernel_w, c = p.in_channels, cp = j.h->cp;
  std::vector<const uint8_t*> ptrs(static_cast<size_t>(taps));
  const __m256 fmin = _mm256_set1_ps(-65536.f), fmax = _mm256_set1_ps(65536.f);
  const __m256i zy = _mm256_set1_epi32(j.h->out_zero), lo = _mm256_set1_epi32(j.h->lo), hi = _mm256_set1_epi32(j.h->hi);
  const __m128i gather = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  for (int64_t pix = first; pix < last; ++pix) {
    tap_pointers(j, pix, ptrs.data());
    uint8_t* out = j.output + pix * p.out_stride();
    for (int64_t c0 = 0; c0 < c; c0 += 32) {
      int valid[4];
      __m256i acc[4];
      for (int b = 0; b < 4; ++b) {
        valid[b] = static_cast<int>(std::clamp<int64_t>(c - c0 - 8 * b, 0, 8));
        acc[b] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(j.bias + c0 + 8 * b));
      }
      for (int64_t t = 0; t < taps; ++t) {
        const uint8_t* x = ptrs[t] + c0;
        const int8_t* w = j.w + t * cp + c0;
#pragma GCC unroll 4
        for (int b = 0; b < 4; ++b) {
          uint64_t xb = 0;
          if (valid[b] == 8)
            std::memcpy(&xb, x + 8 * b, 8);
          else if (valid[b] > 0)
            std::memcpy(&xb, x + 8 * b, static_cast<size_t>(valid[b]));
          const __m256i xv = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(xb)));
          const __m256i wv = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + 8 * b)));
          acc[b] = _mm256_add_epi32(acc[b], _mm256_madd_epi16(xv, wv));
        }
      }
      for (int b = 0; b < 4 && valid[b] > 0; ++b) {
        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[b]), _mm256_loadu_ps(j.mult + c0 + 8 * b));
        f = _mm256_min_ps(_mm256_max_ps(f, fmin), fmax);
        __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(f), zy);
        r = _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
        const __m128i lo4 = _mm_shuffle_epi8(_mm256_castsi256_si128(r), gather);
        const __m128i hi4 = _mm_shuffle_epi8(_mm256_extracti128_si256(r, 1), gather);
        const uint64_t bytes = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpacklo_epi32(lo4, hi4)));
        std::memcpy(out + c0 + 8 * b, &bytes, static_cast<size_t>(valid[b]));
      }
    }
  }
}

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
  int8_t* w = reinterpret_cast<int8_t*>(base + pk.weight_offset);
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
          reinterpret_cast<const int8_t*>(base + pk.weight_offset),
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
