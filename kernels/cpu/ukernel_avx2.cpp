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

// One K step (step S of an unrolled iteration, a string) of the Nx16 tile (N = 3..6 pixels):
// the row's two weight vectors (ymm12, ymm13; rows of 128 bytes from %rax), the two lines 16
// rows ahead prefetched (PREFETCH: as accumulate_steps() does) or not, then per pixel (bases
// r8.., byte index %rcx) a broadcast (ymm14) and two FMAs. The displacements are expressions
// the assembler evaluates.
// clang-format off
#define WINFER_AVX2_WEIGHTS(S, PREFETCH) \
  "vmovups (" S "*128)(%%rax), %%ymm12\n\t" \
  "vmovups (" S "*128+32)(%%rax), %%ymm13\n\t" \
  PREFETCH("(2048+" S "*128)") \
  PREFETCH("(2112+" S "*128)")
#define WINFER_AVX2_PIXEL(S, REG, M) \
  "vbroadcastss (" S "*4)(%%" REG ",%%rcx), %%ymm14\n\t" \
  "vfmadd231ps %%ymm12, %%ymm14, %[a" M "0]\n\t" \
  "vfmadd231ps %%ymm13, %%ymm14, %[a" M "1]\n\t"
#define WINFER_AVX2_PREFETCH_ROW(PF) "prefetcht0 " PF "(%%rax)\n\t"
#define WINFER_AVX2_NO_PREFETCH(PF)
#define WINFER_AVX2_STEP_3(S, PREFETCH) WINFER_AVX2_WEIGHTS(S, PREFETCH) WINFER_AVX2_PIXEL(S, "r8", "0") WINFER_AVX2_PIXEL(S, "r9", "1") WINFER_AVX2_PIXEL(S, "r10", "2")
#define WINFER_AVX2_BASES_3 "mov 0(%[px]), %%r8\n\t" "mov 8(%[px]), %%r9\n\t" "mov 16(%[px]), %%r10\n\t"
#define WINFER_AVX2_AHEAD_3 "prefetcht0 128(%%r8,%%rcx)\n\t" "prefetcht0 128(%%r9,%%rcx)\n\t" "prefetcht0 128(%%r10,%%rcx)\n\t"
#define WINFER_AVX2_ACC_3 [a00] "+x"(acc[0][0]), [a01] "+x"(acc[0][1]), [a10] "+x"(acc[1][0]), [a11] "+x"(acc[1][1]), [a20] "+x"(acc[2][0]), [a21] "+x"(acc[2][1])
#define WINFER_AVX2_STEP_4(S, PREFETCH) WINFER_AVX2_WEIGHTS(S, PREFETCH) WINFER_AVX2_PIXEL(S, "r8", "0") WINFER_AVX2_PIXEL(S, "r9", "1") WINFER_AVX2_PIXEL(S, "r10", "2") WINFER_AVX2_PIXEL(S, "r11", "3")
#define WINFER_AVX2_BASES_4 "mov 0(%[px]), %%r8\n\t" "mov 8(%[px]), %%r9\n\t" "mov 16(%[px]), %%r10\n\t" "mov 24(%[px]), %%r11\n\t"
#define WINFER_AVX2_AHEAD_4 "prefetcht0 128(%%r8,%%rcx)\n\t" "prefetcht0 128(%%r9,%%rcx)\n\t" "prefetcht0 128(%%r10,%%rcx)\n\t" "prefetcht0 128(%%r11,%%rcx)\n\t"
#define WINFER_AVX2_ACC_4 [a00] "+x"(acc[0][0]), [a01] "+x"(acc[0][1]), [a10] "+x"(acc[1][0]), [a11] "+x"(acc[1][1]), [a20] "+x"(acc[2][0]), [a21] "+x"(acc[2][1]), [a30] "+x"(acc[3][0]), [a31] "+x"(acc[3][1])
#define WINFER_AVX2_STEP_5(S, PREFETCH) WINFER_AVX2_WEIGHTS(S, PREFETCH) WINFER_AVX2_PIXEL(S, "r8", "0") WINFER_AVX2_PIXEL(S, "r9", "1") WINFER_AVX2_PIXEL(S, "r10", "2") WINFER_AVX2_PIXEL(S, "r11", "3") WINFER_AVX2_PIXEL(S, "r12", "4")
#define WINFER_AVX2_BASES_5 "mov 0(%[px]), %%r8\n\t" "mov 8(%[px]), %%r9\n\t" "mov 16(%[px]), %%r10\n\t" "mov 24(%[px]), %%r11\n\t" "mov 32(%[px]), %%r12\n\t"
#define WINFER_AVX2_AHEAD_5 "prefetcht0 128(%%r8,%%rcx)\n\t" "prefetcht0 128(%%r9,%%rcx)\n\t" "prefetcht0 128(%%r10,%%rcx)\n\t" "prefetcht0 128(%%r11,%%rcx)\n\t" "prefetcht0 128(%%r12,%%rcx)\n\t"
#define WINFER_AVX2_ACC_5 [a00] "+x"(acc[0][0]), [a01] "+x"(acc[0][1]), [a10] "+x"(acc[1][0]), [a11] "+x"(acc[1][1]), [a20] "+x"(acc[2][0]), [a21] "+x"(acc[2][1]), [a30] "+x"(acc[3][0]), [a31] "+x"(acc[3][1]), [a40] "+x"(acc[4][0]), [a41] "+x"(acc[4][1])
#define WINFER_AVX2_STEP_6(S, PREFETCH) WINFER_AVX2_WEIGHTS(S, PREFETCH) WINFER_AVX2_PIXEL(S, "r8", "0") WINFER_AVX2_PIXEL(S, "r9", "1") WINFER_AVX2_PIXEL(S, "r10", "2") WINFER_AVX2_PIXEL(S, "r11", "3") WINFER_AVX2_PIXEL(S, "r12", "4") WINFER_AVX2_PIXEL(S, "r13", "5")
#define WINFER_AVX2_BASES_6 "mov 0(%[px]), %%r8\n\t" "mov 8(%[px]), %%r9\n\t" "mov 16(%[px]), %%r10\n\t" "mov 24(%[px]), %%r11\n\t" "mov 32(%[px]), %%r12\n\t" "mov 40(%[px]), %%r13\n\t"
#define WINFER_AVX2_AHEAD_6 "prefetcht0 128(%%r8,%%rcx)\n\t" "prefetcht0 128(%%r9,%%rcx)\n\t" "prefetcht0 128(%%r10,%%rcx)\n\t" "prefetcht0 128(%%r11,%%rcx)\n\t" "prefetcht0 128(%%r12,%%rcx)\n\t" "prefetcht0 128(%%r13,%%rcx)\n\t"
#define WINFER_AVX2_ACC_6 [a00] "+x"(acc[0][0]), [a01] "+x"(acc[0][1]), [a10] "+x"(acc[1][0]), [a11] "+x"(acc[1][1]), [a20] "+x"(acc[2][0]), [a21] "+x"(acc[2][1]), [a30] "+x"(acc[3][0]), [a31] "+x"(acc[3][1]), [a40] "+x"(acc[4][0]), [a41] "+x"(acc[4][1]), [a50] "+x"(acc[5][0]), [a51] "+x"(acc[5][1])
#define WINFER_AVX2_FOUR_STEPS(N, S0, S1, S2, S3, PREFETCH) \
  WINFER_AVX2_STEP_##N(S0, PREFETCH) WINFER_AVX2_STEP_##N(S1, PREFETCH) \
  WINFER_AVX2_STEP_##N(S2, PREFETCH) WINFER_AVX2_STEP_##N(S3, PREFETCH)
// The loop of an Nx16 tile: n16 iterations of 16 K steps (each first asking for the pixels'
// lines 32 floats ahead), then n4 of 4 (PREFETCH: one of the two above).
#define WINFER_AVX2_LOOP(N, PREFETCH) \
  asm volatile( \
      "mov %[w], %%rax\n\t" \
      "lea (,%[l],4), %%rcx\n\t" \
      "mov %[n16], %%rdx\n\t" \
      "shl $6, %%rdx\n\t" \
      "add %%rcx, %%rdx\n\t" \
      WINFER_AVX2_BASES_##N \
      "cmp %%rcx, %%rdx\n\t" \
      "je 3f\n\t" \
      ".p2align 4\n" \
      "2:\n\t" \
      WINFER_AVX2_AHEAD_##N \
      WINFER_AVX2_FOUR_STEPS(N, "0", "1", "2", "3", PREFETCH) \
      WINFER_AVX2_FOUR_STEPS(N, "4", "5", "6", "7", PREFETCH) \
      WINFER_AVX2_FOUR_STEPS(N, "8", "9", "10", "11", PREFETCH) \
      WINFER_AVX2_FOUR_STEPS(N, "12", "13", "14", "15", PREFETCH) \
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
      WINFER_AVX2_FOUR_STEPS(N, "0", "1", "2", "3", PREFETCH) \
      "add $16, %%rcx\n\t" \
      "add $512, %%rax\n\t" \
      "cmp %%rcx, %%rdx\n\t" \
      "jne 4b\n" \
      "5:\n\t" \
      : WINFER_AVX2_ACC_##N \
      : [w] "r"(w), [l] "r"(l), [n16] "r"(n16), [n4] "r"(n4), [px] "r"(&pixel[0]) \
      : "rax", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "r13", "xmm12", "xmm13", "xmm14", "cc", "memory")
// clang-format on

struct Avx2 {
  static constexpr int kLanes = 8;
  // The full Nx16 tiles' K loop (N = 3..6 pixels, pointer-addressed, rows kPanel floats apart)
  // has an assembly version, loop_x16, which accumulate() calls.
  static constexpr int kAsmLoopMinRows = 3;
  static constexpr bool kAffineAsmLoop = false;  // none (see Avx512)
  // acc += 16 * n16 + 4 * n4 K steps of the kRows x 16 tile from step l: pixel[m] + l onwards,
  // weight rows from w; every 16 steps the pixels' lines 32 floats ahead are asked for (as
  // accumulate_steps() does), and the weight rows 16 steps ahead too, or not
  // (prefetch_weights: !TileArgs::weights_in_l2). GCC's version of this loop (accumulate(), 4
  // steps per iteration) spilled two accumulators per iteration of the 6-pixel tile and ran
  // 1.13-1.24x the time of a bare assembly loop (session 21, docs/PERFORMANCE.md); this one
  // keeps them in the registers the compiler picks (ymm12-14 and the pointers are fixed and
  // clobbered). The same FMAs in the same order: bit for bit the C++ loop's results.
  template <int kRows>
  __attribute__((always_inline)) static inline void loop_x16(Vec<8> (&acc)[kRows][2],
                                                             const float* const (&pixel)[kRows], int64_t l,
                                                             const float* w, int64_t n16, int64_t n4,
                                                             bool prefetch_weights) {
    static_assert(kPanel == 32, "weight rows of 128 bytes");
    static_assert(kRows >= kAsmLoopMinRows && kRows <= 6, "3 to 6 pixels");
    if constexpr (kRows == 6) {
      if (prefetch_weights)
        WINFER_AVX2_LOOP(6, WINFER_AVX2_PREFETCH_ROW);
      else
        WINFER_AVX2_LOOP(6, WINFER_AVX2_NO_PREFETCH);
    } else if constexpr (kRows == 5) {
      if (prefetch_weights)
        WINFER_AVX2_LOOP(5, WINFER_AVX2_PREFETCH_ROW);
      else
        WINFER_AVX2_LOOP(5, WINFER_AVX2_NO_PREFETCH);
    } else if constexpr (kRows == 4) {
      if (prefetch_weights)
        WINFER_AVX2_LOOP(4, WINFER_AVX2_PREFETCH_ROW);
      else
        WINFER_AVX2_LOOP(4, WINFER_AVX2_NO_PREFETCH);
    } else {
      if (prefetch_weights)
        WINFER_AVX2_LOOP(3, WINFER_AVX2_PREFETCH_ROW);
      else
        WINFER_AVX2_LOOP(3, WINFER_AVX2_NO_PREFETCH);
    }
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

#undef WINFER_AVX2_LOOP
#undef WINFER_AVX2_FOUR_STEPS
#undef WINFER_AVX2_NO_PREFETCH
#undef WINFER_AVX2_PREFETCH_ROW
#undef WINFER_AVX2_PIXEL
#undef WINFER_AVX2_WEIGHTS
#undef WINFER_AVX2_STEP_3
#undef WINFER_AVX2_BASES_3
#undef WINFER_AVX2_AHEAD_3
#undef WINFER_AVX2_ACC_3
#undef WINFER_AVX2_STEP_4
#undef WINFER_AVX2_BASES_4
#undef WINFER_AVX2_AHEAD_4
#undef WINFER_AVX2_ACC_4
#undef WINFER_AVX2_STEP_5
#undef WINFER_AVX2_BASES_5
#undef WINFER_AVX2_AHEAD_5
#undef WINFER_AVX2_ACC_5
#undef WINFER_AVX2_STEP_6
#undef WINFER_AVX2_BASES_6
#undef WINFER_AVX2_AHEAD_6
#undef WINFER_AVX2_ACC_6

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
