// AVX-512 max pooling rows (maxpool_rows.h): 16 channels per vector, the channel tail in masked
// loads and stores, NaN lanes gathered in a mask register.
#include <algorithm>
#include <limits>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/maxpool_rows.h"

#if WINFER_X86_DISPATCH

#include <immintrin.h>

// Everything defined from here to the matching pop is compiled for the ISA (maxpool_body.h).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")
#endif
WINFER_AVX512_WARNINGS_BEGIN

#include "kernels/cpu/maxpool_body.h"

namespace winfer {
namespace cpu {
namespace {

struct MaxAvx512 {
  static constexpr int kLanes = 16;
  using V = __m512;
  using Nan = __mmask16;
  using Tail = __mmask16;
  static Tail tail(int64_t n) { return static_cast<Tail>((1u << n) - 1u); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load_tail(const float* p, Tail t) { return _mm512_maskz_loadu_ps(t, p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store_tail(float* p, V v, Tail t) { _mm512_mask_storeu_ps(p, t, v); }
  static Nan no_nan() { return 0; }
  static Nan or_unordered(Nan nan, V a, V b) { return static_cast<Nan>(nan | _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q)); }
  static V first_max(V earlier, V later) { return _mm512_max_ps(later, earlier); }
  static V nan_where(V v, Nan nan) {
    return _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
  }
};

void max_pool_row_avx512_impl(const PoolParams& p, const float* in_image, int64_t oh, float* out_row) {
  max_pool_row<MaxAvx512>(p, in_image, oh, out_row);
}

}  // namespace
}  // namespace cpu
}  // namespace winfer

WINFER_AVX512_WARNINGS_END
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace winfer {
namespace cpu {
MaxPoolRowFn max_pool_row_avx512() { return max_pool_row_avx512_impl; }
}  // namespace cpu
}  // namespace winfer

#else

namespace winfer {
namespace cpu {
MaxPoolRowFn max_pool_row_avx512() { return nullptr; }
}  // namespace cpu
}  // namespace winfer

#endif
