// Fully connected layer (sgemm against the row-major [O][K] weight, i.e. B transposed) and a
// numerically stable row softmax.
#include "kernels/cpu/linear.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/conv_common.h"  // bias_activation_rows
#include "kernels/cpu/cpu_caches.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/gemm.h"

namespace winfer {

namespace {

// A few rows (batch 1 to kSmallRows): the kernel streams the weight matrix once from memory.
// OpenBLAS 0.3.21's sgemm packs all of B first even for M = 1, i.e. copies the weights (411 MB
// for VGG's first classifier layer) before reading them again. A block of 8 or 4 weight rows
// is multiplied with up to 4 input rows at a time (small_rows_body); more input rows read the
// same block again from L2. Measured on VGG's 25088 -> 4096 layer, 1 thread (docs/PERFORMANCE.md): 1 row 73 -> 34 ms, 8
// rows 73 -> 63 ms, but 16 rows 80 -> 97 ms, where sgemm's packing pays off: hence 8.
constexpr int64_t kSmallRows = 8;

template <int L>
WINFER_ALWAYS_INLINE inline float reduce(const cpu::Vec<L>& v) {
  float s = 0;
  for (int i = 0; i < L; ++i) s += v[i];
  return s;
}

// Bytes ahead of each weight row's stream that block() asks for (one line per row and 64 bytes
// of K). The hardware prefetcher alone kept 4 rows' streams at 22-23 GB/s on one core here
// (AMD EPYC), where 8 streams with this hint read 28 (a bare read of 2-8 streams: 26): with both,
// VGG-16's 25088 -> 4096 layer at 1 row 15.3 -> 14.1 ms, 2 rows 20.0 -> 14.8 (docs/PERFORMANCE.md,
// session 35). 256-384 bytes measured alike; 1024 was slower.
constexpr int64_t kWeightPrefetchBytes = 256;

// out[r][o + j] = in[r] . weight[o + j] for j < kO, r < kR (rows and outputs of one block).
template <int L, int kO, int kR>
WINFER_ALWAYS_INLINE inline void block(const float* x, const float* w, float* y, int64_t k_total,
                                       int64_t out_features) {
  using V = cpu::Vec<L>;
  V acc[kO][kR] = {};
  const int64_t k_vec = k_total / L * L;
  // Addresses as integers: the hint may point past the matrix's end (a prefetch of any address
  // is only a hint; the pointer arithmetic would not be).
  const uintptr_t w_ahead = reinterpret_cast<uintptr_t>(w) + kWeightPrefetchBytes;
  for (int64_t k = 0; k < k_vec; k += L) {
    if (k % 16 == 0)  // once per 64-byte line of each row (every step where L = 16)
      for (int j = 0; j < kO; ++j)
        __builtin_prefetch(reinterpret_cast<const void*>(
            w_ahead + static_cast<uintptr_t>((j * k_total + k) * int64_t{sizeof(float)})));
    V xs[kR];
    for (int r = 0; r < kR; ++r) xs[r] = cpu::load<L>(x + r * k_total + k);
    for (int j = 0; j < kO; ++j) {
      const V wv = cpu::load<L>(w + j * k_total + k);
      for (int r = 0; r < kR; ++r) acc[j][r] += xs[r] * wv;
    }
  }
  for (int j = 0; j < kO; ++j) {
    for (int r = 0; r < kR; ++r) {
      float sum = reduce<L>(acc[j][r]);
      for (int64_t k = k_vec; k < k_total; ++k) sum += x[r * k_total + k] * w[j * k_total + k];
      y[r * out_features + j] = sum;
    }
  }
}

template <int L, int kO>
WINFER_ALWAYS_INLINE inline void block_rows(const float* x, const float* w, float* y, int64_t rows, int64_t k_total,
                                            int64_t out_features) {
  for (int64_t r = 0; r < rows; r += 4) {
    const float* xr = x + r * k_total;
    float* yr = y + r * out_features;
    switch (std::min<int64_t>(4, rows - r)) {
      case 1: block<L, kO, 1>(xr, w, yr, k_total, out_features); break;
      case 2: block<L, kO, 2>(xr, w, yr, k_total, out_features); break;
      case 3: block<L, kO, 3>(xr, w, yr, k_total, out_features); break;
      default: block<L, kO, 4>(xr, w, yr, k_total, out_features); break;
    }
  }
}

// out[r][o] = in[r] . weight[o] for o in [o_begin, o_end), every r < rows, in blocks of 8
// weight rows (8 streams from memory) where `wide` (wide_blocks()), else of 4 (each weight load
// feeding up to 4 rows' FMAs).
template <int L>
WINFER_ALWAYS_INLINE inline void small_rows_body(const float* in, const float* weight, float* out, int64_t rows,
                                                 int64_t k_total, int64_t out_features, int64_t o_begin, int64_t o_end,
                                                 bool wide) {
  int64_t o = o_begin;
  if (wide)
    for (; o + 8 <= o_end; o += 8) block_rows<L, 8>(in, weight + o * k_total, out + o, rows, k_total, out_features);
  for (; o + 4 <= o_end; o += 4) block_rows<L, 4>(in, weight + o * k_total, out + o, rows, k_total, out_features);
  for (; o < o_end; ++o) block_rows<L, 1>(in, weight + o * k_total, out + o, rows, k_total, out_features);
}

// Whether small_rows_body takes blocks of 8 weight rows: 8 rows x 1 input row fit 16 vector
// registers (AVX2, portable); AVX-512's 32 take 8 x up to 4 input rows (8 x 4 spills a few, and
// still reads the weights faster). More than 4 input rows pass over each block twice; 4-row
// blocks do that from L2, faster, unless the 8-row block is too large for L2 to keep it (half of
// it, our guess between the two shapes measured), and the second pass streams from memory too.
// Measured (AVX-512, 1 thread, weights evicted; docs/PERFORMANCE.md, session 35), 8-row blocks
// against 4: 25088 -> 4096 at 2 / 3 / 4 / 8 rows 18.0 / 21.8 / 22.8 / 31.9 -> 15.0 / 15.6 / 15.6 /
// 24.1 ms; 4096 -> 1000 at 2 and 4 rows 0.73 / 0.90 -> 0.58 / 0.68; 4096 -> 4096 at 8 rows (its
// 8-row block 128 KiB) 5.2 -> 5.8.
bool wide_blocks(cpu::Isa isa, int64_t rows, int64_t in_features) {
  if (rows == 1) return true;
  if (isa != cpu::Isa::kAvx512) return false;
  return rows <= 4 || 8 * in_features * int64_t{sizeof(float)} > cpu::l2_bytes() / 2;
}

WINFER_TARGET_AVX512 void small_rows_avx512(const float* in, const float* weight, float* out, int64_t rows, int64_t k,
                                            int64_t n, int64_t o_begin, int64_t o_end, bool wide) {
  small_rows_body<16>(in, weight, out, rows, k, n, o_begin, o_end, wide);
}
WINFER_TARGET_AVX2 void small_rows_avx2(const float* in, const float* weight, float* out, int64_t rows, int64_t k,
                                        int64_t n, int64_t o_begin, int64_t o_end, bool wide) {
  small_rows_body<8>(in, weight, out, rows, k, n, o_begin, o_end, wide);
}
void small_rows_generic(const float* in, const float* weight, float* out, int64_t rows, int64_t k, int64_t n,
                        int64_t o_begin, int64_t o_end, bool wide) {
  small_rows_body<4>(in, weight, out, rows, k, n, o_begin, o_end, wide);
}

void linear_small_rows(const float* in, const float* weight, const float* bias, float* out, int64_t rows,
                       int64_t in_features, int64_t out_features, Activation act, int threads) {
  auto* fn = small_rows_generic;
  const cpu::Isa isa = cpu::cpu_isa();
  const bool wide = wide_blocks(isa, rows, in_features);
  switch (isa) {
    case cpu::Isa::kAvx512: fn = small_rows_avx512; break;
    case cpu::Isa::kAvx2: fn = small_rows_avx2; break;
    case cpu::Isa::kGeneric: break;
  }
  // Threads take contiguous ranges of output features, a multiple of the kernel's block each.
  constexpr int64_t kUnit = 8;
  const int64_t blocks = cpu::ceil_div(out_features, kUnit);
  cpu::parallel_chunks(blocks, kUnit * rows * in_features, threads, [&](int64_t begin, int64_t end) {
    const int64_t o_begin = begin * kUnit, o_end = std::min(out_features, end * kUnit);
    fn(in, weight, out, rows, in_features, out_features, o_begin, o_end, wide);
    for (int64_t r = 0; r < rows; ++r) {
      cpu::bias_activation_rows(out + r * out_features + o_begin, 1, o_end - o_begin, bias ? bias + o_begin : nullptr,
                                act, 1);
    }
  });
}

}  // namespace

// Up to kSmallRows rows: matrix-vector products (above). Otherwise threads split the larger of
// rows and out_features into contiguous ranges, each multiplied by a single-threaded sgemm (one
// thread pool, as in conv_im2col.cpp).
void linear(const float* in, const float* weight, const float* bias, float* out, int64_t rows, int64_t in_features,
            int64_t out_features, Activation act, int threads) {
  if (rows <= kSmallRows) {
    linear_small_rows(in, weight, bias, out, rows, in_features, out_features, act, threads);
    return;
  }
  gemm_set_threads(1);
  const bool split_rows = rows >= out_features;
  const int64_t extent = split_rows ? rows : out_features;
  const int nt =
      static_cast<int>(std::min<int64_t>(cpu::threads_for_work(threads, rows * in_features * out_features), extent));
  // One piece per thread: each is a GEMM of its own, which runs best as large as it can be.
  cpu::parallel_pieces(nt, extent, nt, [&](int64_t first, int64_t last, int) {
    const int64_t count = last - first;
    if (count > 0 && split_rows) {
      sgemm(false, true, count, out_features, in_features, 1.f, in + first * in_features, in_features, weight,
            in_features, 0.f, out + first * out_features, out_features);
      cpu::bias_activation_rows(out + first * out_features, count, out_features, bias, act, 1);
    } else if (count > 0) {
      sgemm(false, true, rows, count, in_features, 1.f, in, in_features, weight + first * in_features, in_features, 0.f,
            out + first, out_features);
      for (int64_t r = 0; r < rows; ++r)
        cpu::bias_activation_rows(out + r * out_features + first, 1, count, bias ? bias + first : nullptr, act, 1);
    }
  });
}

// out = exp(x - max) / sum(exp(x - max)): every exponent is <= 0, so nothing overflows
// whatever the inputs' magnitude, and the largest term is exactly 1, so the sum is >= 1.
// In place (out == in) is allowed. The sum is accumulated in double to keep long rows exact.
void softmax_rows(const float* in, float* out, int64_t rows, int64_t cols, int threads) {
  cpu::parallel_chunks(rows, cols * 8, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* x = in + r * cols;
      float* y = out + r * cols;
      float max_value = -INFINITY;
      for (int64_t c = 0; c < cols; ++c) max_value = std::fmax(max_value, x[c]);
      double sum = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        y[c] = std::exp(x[c] - max_value);
        sum += y[c];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
    }
  });
}

}  // namespace winfer
