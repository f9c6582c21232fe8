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

// One K step of the 6x16 tile: the row's two weight vectors (ymm12, ymm13; rows at %rax), the
// two lines 16 rows ahead prefetched (PREFETCH: as accumulate_steps() does) or not, then per
// pixel (bases r8-r13, byte index %rcx) a broadcast (ymm14) and two FMAs. W..PF2: byte offsets
// from %rax; X: from the pixels.
// clang-format off
#define WINFER_AVX2_6X16_STEP(W, W2, PF, PF2, X, PREFETCH) \
  "vmovups " W "(%%rax), %%ymm12\n\t" \
  "vmovups " W2 "(%%rax), %%ymm13\n\t" \
  PREFETCH(PF) \
  PREFETCH(PF2) \
  "vbroadcastss " X "(%%r8,%%rcx), %%ymm14\n\t" \
  "vfmadd231ps %%ymm12, %%ymm14, %[a00]\n\t" \
  "vfmadd231ps %%ymm13, %%ymm14, %[a01]\n\t" \
  "vbroadcastss " X "(%%r9,%%rcx), %%ymm14\n\t" \
  "vfmadd231ps %%ymm12, %%ymm14, %[a10]\n\t" \
  "vfmadd231ps %%ymm13, %%ymm14, %[a11]\n\t" \
  "vbroadcastss " X "(%%r10,%%rcx), %%ymm14\n\t" \
  "vfmadd231ps %%ymm12, %%ymm14, %[a20]\n\t" \
  "vfmadd231ps %%ymm13, %%ymm14, %[a21]\n\t" \
  "vbroadcastss " X "(%%r11,%%rcx), %%ymm14\n\t" \
  "vfmadd231ps %%ymm12, %%ymm14, %[a30]\n\t" \
  "vfmadd231ps %%ymm13, %%ymm14, %[a31]\n\t" \
  "vbroadcastss " X "(%%r12,%%rcx), %%ymm14\n\t" \
  "vfmadd231ps %%ymm12, %%ymm14, %[a40]\n\t" \
  "vfmadd231ps %%ymm13, %%ymm14, %[a41]\n\t" \
  "vbroadcastss " X "(%%r13,%%rcx), %%ymm14\n\t" \
  "vfmadd231ps %%ymm12, %%ymm14, %[a50]\n\t" \
  "vfmadd231ps %%ymm13, %%ymm14, %[a51]\n\t"
#define WINFER_AVX2_PREFETCH_ROW(PF) "prefetcht0 " PF "(%%rax)\n\t"
#define WINFER_AVX2_NO_PREFETCH(PF)
// The loop: n16 iterations of 16 K steps (each first asking for the pixels' lines 32 floats
// ahead), then n4 of 4 (PREFETCH: one of the two above).
#define WINFER_AVX2_6X16_LOOP(PREFETCH) \
  asm volatile( \
      "mov %[w], %%rax\n\t" \
      "lea (,%[l],4), %%rcx\n\t" \
      "mov %[n16], %%rdx\n\t" \
      "shl $6, %%rdx\n\t" \
      "add %%rcx, %%rdx\n\t" \
      "mov 0(%[px]), %%r8\n\t" \
      "mov 8(%[px]), %%r9\n\t" \
      "mov 16(%[px]), %%r10\n\t" \
      "mov 24(%[px]), %%r11\n\t" \
      "mov 32(%[px]), %%r12\n\t" \
      "mov 40(%[px]), %%r13\n\t" \
      "cmp %%rcx, %%rdx\n\t" \
      "je 3f\n\t" \
      ".p2align 4\n" \
      "2:\n\t" \
      "prefetcht0 128(%%r8,%%rcx)\n\t" \
      "prefetcht0 128(%%r9,%%rcx)\n\t" \
      "prefetcht0 128(%%r10,%%rcx)\n\t" \
      "prefetcht0 128(%%r11,%%rcx)\n\t" \
      "prefetcht0 128(%%r12,%%rcx)\n\t" \
      "prefetcht0 128(%%r13,%%rcx)\n\t" \
      WINFER_AVX2_6X16_STEP("0", "32", "2048", "2112", "0", PREFETCH) \
      WINFER_AVX2_6X16_STEP("128", "160", "2176", "2240", "4", PREFETCH) \
      WINFER_AVX2_6X16_STEP("256", "288", "2304", "2368", "8", PREFETCH) \
      WINFER_AVX2_6X16_STEP("384", "416", "2432", "2496", "12", PREFETCH) \
      WINFER_AVX2_6X16_STEP("512", "544", "2560", "2624", "16", PREFETCH) \
      WINFER_AVX2_6X16_STEP("640", "672", "2688", "2752", "20", PREFETCH) \
      WINFER_AVX2_6X16_STEP("768", "800", "2816", "2880", "24", PREFETCH) \
      WINFER_AVX2_6X16_STEP("896", "928", "2944", "3008", "28", PREFETCH) \
      WINFER_AVX2_6X16_STEP("1024", "1056", "3072", "3136", "32", PREFETCH) \
      WINFER_AVX2_6X16_STEP("1152", "1184", "3200", "3264", "36", PREFETCH) \
      WINFER_AVX2_6X16_STEP("1280", "1312", "3328", "3392", "40", PREFETCH) \
      WINFER_AVX2_6X16_STEP("1408", "1440", "3456", "3520", "44", PREFETCH) \
      WINFER_AVX2_6X16_STEP("1536", "1568", "3584", "3648", "48", PREFETCH) \
      WINFER_AVX2_6X16_STEP("1664", "1696", "3712", "3776", "52", PREFETCH) \
      WINFER_AVX2_6X16_STEP("1792", "1824", "3840", "3904", "56", PREFETCH) \
      WINFER_AVX2_6X16_STEP("1920", "1952", "3968", "4032", "60", PREFETCH) \
      "add $64, %%rcx\n\t" \
      "add $2048, %%rax\n\t" \
      "cmp %%rcx, %%rdx\n\t" \
      "jne 2b\n" \
      "3:\n\t" \
      "mov %[n4], %%rdx\n\t" \
      "shl $4, %%rdx\n\t" \
      "add %%rcx, %%rdx\n\t" \
      "cmp %%rcx, %%rdx\n\t" \
      "je 5f\n\t" \
      ".p2align 4\n" \
      "4:\n\t" \
      WINFER_AVX2_6X16_STEP("0", "32", "2048", "2112", "0", PREFETCH) \
      WINFER_AVX2_6X16_STEP("128", "160", "2176", "2240", "4", PREFETCH) \
      WINFER_AVX2_6X16_STEP("256", "288", "2304", "2368", "8", PREFETCH) \
      WINFER_AVX2_6X16_STEP("384", "416", "2432", "2496", "12", PREFETCH) \
      "add $16, %%rcx\n\t" \
      "add $512, %%rax\n\t" \
      "cmp %%rcx, %%rdx\n\t" \
      "jne 4b\n" \
      "5:\n\t" \
      : [a00] "+x"(acc[0][0]), [a01] "+x"(acc[0][1]), [a10] "+x"(acc[1][0]), [a11] "+x"(acc[1][1]), \
        [a20] "+x"(acc[2][0]), [a21] "+x"(acc[2][1]), [a30] "+x"(acc[3][0]), [a31] "+x"(acc[3][1]), \
        [a40] "+x"(acc[4][0]), [a41] "+x"(acc[4][1]), [a50] "+x"(acc[5][0]), [a51] "+x"(acc[5][1]) \
      : [w] "r"(w), [l] "r"(l), [n16] "r"(n16), [n4] "r"(n4), [px] "r"(&pixel[0]) \
      : "rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "xmm12", "xmm13", "xmm14", "cc", "memory")
// clang-format on

struct Avx2 {
  static constexpr int kLanes = 8;
  // The full 6x16 tile's K loop (pointer-addressed pixels, rows kPanel floats apart) has an
  // assembly version, loop_6x16, which accumulate() calls.
  static constexpr bool kAsmLoop6x16 = true;
  // acc += 16 * n16 + 4 * n4 K steps of the 6x16 tile from step l: pixel[m] + l onwards, weight
  // rows from w; every 16 steps the pixels' lines 32 floats ahead are asked for (as
  // accumulate_steps() does), and the weight rows 16 steps ahead too, or not
  // (prefetch_weights: !TileArgs::weights_in_l2). GCC's version of this loop (accumulate(), 4
  // steps per iteration) spilled two accumulators per iteration and ran 1.13-1.24x the time of a
  // bare assembly loop (session 21, docs/PERFORMANCE.md); this one keeps them in the 12
  // registers the compiler picks (ymm12-14 and the pointers are fixed and clobbered). The same
  // FMAs in the same order: bit for bit the C++ loop's results.
  __attribute__((always_inline)) static inline void loop_6x16(Vec<8> (&acc)[6][2], const float* const (&pixel)[6],
                                                              int64_t l, const float* w, int64_t n16, int64_t n4,
                                                              bool prefetch_weights) {
    static_assert(kPanel == 32, "weight rows of 128 bytes");
    if (prefetch_weights)
      WINFER_AVX2_6X16_LOOP(WINFER_AVX2_PREFETCH_ROW);
    else
      WINFER_AVX2_6X16_LOOP(WINFER_AVX2_NO_PREFETCH);
  }
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

#undef WINFER_AVX2_6X16_LOOP
#undef WINFER_AVX2_NO_PREFETCH
#undef WINFER_AVX2_PREFETCH_ROW
#undef WINFER_AVX2_6X16_STEP

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
