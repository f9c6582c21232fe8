// AVX2+FMA convolution micro-kernels: up to 6 pixels x 16 channels (2 ymm) per tile.
//
// Register budget (16 ymm): 12 accumulators + 2 weight vectors + 1 broadcast = 15, the
// classic 6x16 shape; a 32-channel weight panel is covered by two column blocks.
#include <cstring>
#include <utility>

#include "kernels/cpu/ukernel_conv.h"

#if WINFER_X86_DISPATCH

#include <immintrin.h>

// Everything defined from here to the matching pop is compiled for the ISA (see
// ukernel_conv_body.h).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

#include "kernels/cpu/ukernel_conv_body.h"

namespace winfer {
namespace cpu {
namespace {

struct Avx2 {
  static constexpr int kLanes = 8;
  __attribute__((always_inline)) static inline Vec<8> broadcast(const float* p) {
    return reinterpret_cast<Vec<8>>(_mm256_set1_ps(*p));
  }
  // p[0..kB) repeated over the vector, one load-port instruction (vbroadcastss, vbroadcastsd,
  // vbroadcastf128): a group-set K step (group_sets.h).
  template <int kB>
  __attribute__((always_inline)) static inline Vec<8> broadcast_group(const float* p) {
    if constexpr (kB == 1) {
      return broadcast(p);
    } else if constexpr (kB == 2) {
      double d;
      std::memcpy(&d, p, sizeof d);
      return reinterpret_cast<Vec<8>>(_mm256_castpd_ps(_mm256_set1_pd(d)));
    } else {
      static_assert(kB == 4);
      return reinterpret_cast<Vec<8>>(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(p)));
    }
  }
  // The lane mask of p[0..n) for vmaskmovps: 8 consecutive entries of a table of 8 all-ones
  // then 8 zeros.
  __attribute__((always_inline)) static inline __m256i first_lanes(int n) {
    static const int32_t kMasks[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMasks + 8 - n));
  }
  // A masked load: the masked-off lanes are neither read nor faulted on.
  __attribute__((always_inline)) static inline Vec<8> load_first(const float* p, int n) {
    return reinterpret_cast<Vec<8>>(_mm256_maskload_ps(p, first_lanes(n)));
  }
  // A masked store: p[0..n) only.
  __attribute__((always_inline)) static inline void store_first(float* p, const Vec<8>& v, int n) {
    _mm256_maskstore_ps(p, first_lanes(n), reinterpret_cast<__m256>(v));
  }
};

template <int kRows, int kVecs>
using Avx2Tile = TileEntries<Avx2, kRows, kVecs>;

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

const TileKernels* tile_kernels_avx2() {
  static const TileKernels table = make_tile_kernels<Avx2Tile, 8, 6, 2>("avx2");
  return &table;
}

}  // namespace cpu
}  // namespace winfer

#else

namespace winfer {
namespace cpu {
const TileKernels* tile_kernels_avx2() { return nullptr; }
}  // namespace cpu
}  // namespace winfer

#endif
