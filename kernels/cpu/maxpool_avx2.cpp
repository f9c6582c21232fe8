// AVX2 max pooling rows (maxpool_rows.h): 8 channels per vector, the channel tail in masked
// loads and stores (vmaskmovps reads and writes no lane outside the mask).
#include <algorithm>
#include <limits>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/maxpool_rows.h"

#if WINFER_X86_DISPATCH

#include <immintrin.h>

// Everything defined from here to the matching pop is compiled for the ISA (maxpool_body.h).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#include "kernels/cpu/maxpool_body.h"

namespace winfer {
namespace cpu {
namespace {

struct MaxAvx2 {
  static constexpr int kLanes = 8;
  using V = __m256;
  using Nan = __m256;
  using Tail = __m256i;
  static Tail tail(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load_tail(const float* p, Tail t) { return _mm256_maskload_ps(p, t); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void store_tail(float* p, V v, Tail t) { _mm256_maskstore_ps(p, t, v); }
  static Nan no_nan() { return _mm256_setzero_ps(); }
  static Nan or_unordered(Nan nan, V a, V b) { return _mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q)); }
  static V first_max(V earlier, V later) { return _mm256_max_ps(later, earlier); }
  static V nan_where(V v, Nan nan) {
    return _mm256_blendv_ps(v, _mm256_set1_ps(std::numeric_limits<float>::quiet_NaN()), nan);
  }
};

void max_pool_row_avx2_impl(const PoolParams& p, const float* in_image, int64_t oh, float* out_row) {
  max_pool_row<MaxAvx2>(p, in_image, oh, out_row);
}

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
MaxPoolRowFn max_pool_row_avx2() { return max_pool_row_avx2_impl; }
}  // namespace cpu
}  // namespace winfer

#else

namespace winfer {
namespace cpu {
MaxPoolRowFn max_pool_row_avx2() { return nullptr; }
}  // namespace cpu
}  // namespace winfer

#endif
