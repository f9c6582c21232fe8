// Element-wise activations and products. Each output element depends only on the same element
// of the inputs (and, for the channel scale, on its channel's scale), so in place is safe. The
// loops are branch-free (comparisons become selects) so that they vectorise.
#include "kernels/cpu/pointwise.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace {

// exp(v) for v in [kExpLow, kExpHigh] (callers select the results outside): v = n*ln2 + r with
// n = round(v / ln2) and |r| <= ln2/2 (ln2 split in two parts so that r is exact), exp(r) by
// Cephes' expf polynomial, times 2^n built in the exponent bits (sigmoid and silu within 1.3
// ulp, tests/kernels/pointwise_test.cpp). Every select is on integers or is the last operation before the store: gcc
// (under its default -ftrapping-math) does not vectorise float arithmetic after a float select.
constexpr float kExpLow = -87.33654f;          // ln(2^-126): below, exp is subnormal or 0
constexpr float kExpHigh = 88.3762626647949f;  // 127.5 * ln2: above, n would be 128
WINFER_ALWAYS_INLINE inline float exp_in_range(float v) {
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23: v * log2(e) + kRound holds round(v * log2(e)) in its low bits
  const float t = v * 1.44269504088896341f + kRound;
  const float n = t - kRound;
  uint32_t t_bits;
  std::memcpy(&t_bits, &t, sizeof t_bits);
  // Minus the bits of kRound: k = n for |n| < 2^22 (garbage, but clamped, beyond). Unsigned, so
  // that no input overflows a signed subtraction.
  int32_t k = static_cast<int32_t>(t_bits - 0x4B400000u);
  k = k < -126 ? -126 : k;
  k = k > 127 ? 127 : k;
  const float r = (v - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.f;
  const int32_t bits = (k + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

WINFER_ALWAYS_INLINE inline float hardsigmoid_numerator(float x) {  // min(max(x + 3, 0), 6), NaN kept
  float t = x + 3.f;
  t = t < 0.f ? 0.f : t;
  return t > 6.f ? 6.f : t;
}

// Bitwise select: `when ? a : b` on the bits, so that gcc computes both sides unconditionally
// and vectorises (a float select lets it move the arithmetic of the chosen side into a branch).
WINFER_ALWAYS_INLINE inline float select(bool when, float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  const int32_t mask = -static_cast<int32_t>(when);
  const int32_t bits = (ia & mask) | (ib & ~mask);
  float r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

// sigmoid and silu from e = exp(-x): where -x > kExpHigh (x < -88.4), 1 + e is inf in float
// and they are 0 (silu -0 in torch: the sign is not kept); where -x < kExpLow (x > 87.3) e is
// below float's precision next to 1 and they are 1 and x. A NaN stays NaN (no comparison holds).
template <PointwiseFn kFn>
WINFER_ALWAYS_INLINE inline void pointwise_range(const float* in, float* out, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float x = in[i];
    if (kFn == PointwiseFn::kSigmoid) {
      const float y = 1.f / (1.f + exp_in_range(-x));
      out[i] = select(-x > kExpHigh, 0.f, select(-x < kExpLow, 1.f, y));
    }
    if (kFn == PointwiseFn::kSilu) {
      const float y = x / (1.f + exp_in_range(-x));
      out[i] = select(-x > kExpHigh, 0.f, select(-x < kExpLow, x, y));
    }
    if (kFn == PointwiseFn::kHardSigmoid) out[i] = hardsigmoid_numerator(x) / 6.f;
    if (kFn == PointwiseFn::kHardSwish) out[i] = x * hardsigmoid_numerator(x) / 6.f;
  }
}

WINFER_ALWAYS_INLINE inline void pointwise_any(const float* in, float* out, int64_t begin, int64_t end,
                                               PointwiseFn fn) {
  switch (fn) {
    case PointwiseFn::kSigmoid: return pointwise_range<PointwiseFn::kSigmoid>(in, out, begin, end);
    case PointwiseFn::kHardSigmoid: return pointwise_range<PointwiseFn::kHardSigmoid>(in, out, begin, end);
    case PointwiseFn::kHardSwish: return pointwise_range<PointwiseFn::kHardSwish>(in, out, begin, end);
    case PointwiseFn::kSilu: return pointwise_range<PointwiseFn::kSilu>(in, out, begin, end);
  }
}

// One copy of the loops per ISA (cpu_common.h's scheme: the helpers above are inlined into each
// and compiled for it), 16, 8 or 4 floats per instruction. sigmoid on 401K floats (32x112x112),
// one thread, measured here: 0.64 ms generic (SSE2), 0.19 ms AVX2, 0.13 ms AVX-512; std::exp
// in a scalar loop takes about 2.2 ms.
WINFER_TARGET_AVX512 void pointwise_avx512(const float* in, float* out, int64_t begin, int64_t end, PointwiseFn fn) {
  pointwise_any(in, out, begin, end, fn);
}
WINFER_TARGET_AVX2 void pointwise_avx2(const float* in, float* out, int64_t begin, int64_t end, PointwiseFn fn) {
  pointwise_any(in, out, begin, end, fn);
}
void pointwise_generic(const float* in, float* out, int64_t begin, int64_t end, PointwiseFn fn) {
  pointwise_any(in, out, begin, end, fn);
}

// Rows [begin, end) of a [N][pixels][channels] tensor times their image's channel scales
// (squeeze-and-excitation's product), one copy per ISA: in the baseline ISA (SSE2, 4 floats per
// instruction) EfficientNet-B0's products took 3.5% of its time at batch 8.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void scale_rows_body(const float* in, const float* scale, float* out, int64_t begin,
                                                 int64_t end, int64_t pixels, int64_t channels) {
  for (int64_t row = begin; row < end; ++row) {
    const float* s = scale + (row / pixels) * channels;
    const float* x = in + row * channels;
    float* y = out + row * channels;
    int64_t c = 0;
    for (; c + kLanes <= channels; c += kLanes)
      cpu::store<kLanes>(y + c, cpu::load<kLanes>(x + c) * cpu::load<kLanes>(s + c));
    for (; c < channels; ++c) y[c] = x[c] * s[c];
  }
}
WINFER_TARGET_AVX512 void scale_rows_avx512(const float* in, const float* scale, float* out, int64_t begin, int64_t end,
                                            int64_t pixels, int64_t channels) {
  scale_rows_body<16>(in, scale, out, begin, end, pixels, channels);
}
WINFER_TARGET_AVX2 void scale_rows_avx2(const float* in, const float* scale, float* out, int64_t begin, int64_t end,
                                        int64_t pixels, int64_t channels) {
  scale_rows_body<8>(in, scale, out, begin, end, pixels, channels);
}
void scale_rows_generic(const float* in, const float* scale, float* out, int64_t begin, int64_t end, int64_t pixels,
                        int64_t channels) {
  scale_rows_body<4>(in, scale, out, begin, end, pixels, channels);
}

}  // namespace

void pointwise_activation(const float* in, float* out, int64_t count, PointwiseFn fn, int threads) {
  using RangeFn = void (*)(const float*, float*, int64_t, int64_t, PointwiseFn);
  RangeFn range = pointwise_generic;
  if (cpu::cpu_isa() == cpu::Isa::kAvx512) range = pointwise_avx512;
  if (cpu::cpu_isa() == cpu::Isa::kAvx2) range = pointwise_avx2;
  // exp costs about 20 element operations; the hard ones about 4.
  const bool uses_exp = fn == PointwiseFn::kSigmoid || fn == PointwiseFn::kSilu;
  cpu::parallel_chunks(count, uses_exp ? 20 : 4, threads,
                       [&](int64_t begin, int64_t end) { range(in, out, begin, end, fn); });
}

constexpr int64_t kRowsBufferFloats = 1024;  // 4 KiB on the stack

void pointwise_activation_rows(float* data, int64_t rows, int64_t cols, int64_t stride, PointwiseFn fn) {
  using RangeFn = void (*)(const float*, float*, int64_t, int64_t, PointwiseFn);
  RangeFn range = pointwise_generic;
  if (cpu::cpu_isa() == cpu::Isa::kAvx512) range = pointwise_avx512;
  if (cpu::cpu_isa() == cpu::Isa::kAvx2) range = pointwise_avx2;
  if (stride == cols) {
    range(data, data, 0, rows * cols, fn);
    return;
  }
  if (cols >= kRowsBufferFloats / 4 || cols % 16 == 0) {
    for (int64_t r = 0; r < rows; ++r) range(data + r * stride, data + r * stride, 0, cols, fn);
    return;
  }
  // Short rows (a tile's 16-64 columns): gathered into one contiguous run first, so that the
  // vector loop covers them and only the run's last few floats take the scalar tail (per row,
  // a 40-column row would run 8 of its 40 exps scalar), and the call's overhead is paid once.
  alignas(64) float buffer[kRowsBufferFloats];
  const int64_t per_batch = kRowsBufferFloats / cols;
  for (int64_t r0 = 0; r0 < rows; r0 += per_batch) {
    const int64_t n = std::min(per_batch, rows - r0);
    for (int64_t r = 0; r < n; ++r) std::memcpy(buffer + r * cols, data + (r0 + r) * stride, cols * sizeof(float));
    range(buffer, buffer, 0, n * cols, fn);
    for (int64_t r = 0; r < n; ++r) std::memcpy(data + (r0 + r) * stride, buffer + r * cols, cols * sizeof(float));
  }
}

void mul(const float* a, const float* b, float* out, int64_t count, int threads) {
  cpu::parallel_chunks(count, 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = a[i] * b[i];
  });
}

void scale_channels_nhwc(const float* in, const float* scale, float* out, int64_t batch, int64_t pixels,
                         int64_t channels, int threads) {
  auto* rows_fn = scale_rows_generic;
  if (cpu::cpu_isa() == cpu::Isa::kAvx512) rows_fn = scale_rows_avx512;
  if (cpu::cpu_isa() == cpu::Isa::kAvx2) rows_fn = scale_rows_avx2;
  cpu::parallel_chunks(batch * pixels, channels, threads,
                       [&](int64_t begin, int64_t end) { rows_fn(in, scale, out, begin, end, pixels, channels); });
}

}  // namespace winfer
