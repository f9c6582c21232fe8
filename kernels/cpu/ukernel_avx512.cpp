// AVX-512 convolution micro-kernels: up to 14 pixels x 32 channels (2 zmm) per tile.
//
// Register budget (32 zmm): 28 accumulators + 2 weight vectors + 1 broadcast = 31. Measured on
// the 3x3 64->64 56x56 layer (one core, window tensor precomputed; GFLOP/s, best of 20):
// 14x32 160-170, 12x32 150-159, 8x48 167-173 (but 48 does not divide 64, 128, ...: a
// 16-channel tail block every panel), 6x64 154-158, 7x64 158-161 (33 registers: one spill),
// 4x64 117-121, 14x16 116-129. 14x32 is the best shape whose panel divides every common
// channel count. Pixel row pointers: 14 of them do not fit in the 15 usable general registers
// next to the loop state, so GCC reloads 8 of them from the stack per K step (61 instructions
// per 28 FMAs). A tile within one output row therefore addresses its pixels from three bases
// and two index registers instead (broadcast_nth, accumulate_affine: 55 per 28 FMAs, no reloads;
// ResNet-18/50 and VGG-16 2-5% faster at 1 thread, measured in turn in one process).
#include <cstring>
#include <utility>

#include "kernels/cpu/ukernel_conv.h"

#if WINFER_X86_DISPATCH

#include <immintrin.h>

// Everything defined from here to the matching pop is compiled for the ISA (see
// ukernel_conv_body.h).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,prfchw"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma,prfchw")
#endif

#include "kernels/cpu/ukernel_conv_body.h"

namespace winfer {
namespace cpu {
namespace {

struct Avx512 {
  static constexpr int kLanes = 16;
  static constexpr int kAsmLoopMinRows = 0;     // none (see Avx2)
  static constexpr bool kAffineAsmLoop = true;  // affine_loop_14x2, below
  // The float at base + k * d bytes (k < 5; d3 = 3 * d), by index addressing: accumulate_affine
  // in ukernel_conv_body.h. Written out because GCC otherwise makes a pointer per pixel. The
  // "m" operand (unused in the text) tells GCC the instruction reads memory at `base`: the
  // window it reads is written before the tile, never during it.
  __attribute__((always_inline)) static inline Vec<16> broadcast_nth(const float* base, int k, int64_t d, int64_t d3) {
    Vec<16> x;
    if (k == 0)
      x = broadcast(base);
    else if (k == 1)
      asm("vbroadcastss (%1,%2,1), %0" : "=v"(x) : "r"(base), "r"(d), "m"(*base));
    else if (k == 2)
      asm("vbroadcastss (%1,%2,2), %0" : "=v"(x) : "r"(base), "r"(d), "m"(*base));
    else if (k == 3)
      asm("vbroadcastss (%1,%2,1), %0" : "=v"(x) : "r"(base), "r"(d3), "m"(*base));
    else
      asm("vbroadcastss (%1,%2,4), %0" : "=v"(x) : "r"(base), "r"(d), "m"(*base));
    return x;
  }
  // The 14x32 tile's K loop within one output row (accumulate_affine in ukernel_conv_body.h) in
  // assembly, 16 steps per iteration: acc[m][v] += pixel m's float of step l * w[l][v] for
  // 16 * n16 steps, pixel m's floats from b0 + m * d bytes on. The accumulators stay in
  // zmm0-27 for the whole loop (read from and written back to `acc`), the weight row in zmm28-29,
  // the broadcast in zmm30. Each step is addressed by displacements from the three bases and the
  // weight pointer, which move once per 16 steps: 44 instructions per step where GCC's loop
  // took 50 (it moves every base every step), and unrolled in C++ GCC renamed the accumulators
  // between steps and spilled them (session 38). Every 16 steps: each pixel's line two ahead,
  // and `side`'s lines [pos >> 16, (pos + 16 * rate) >> 16) with pos = step0 * rate (the side
  // share of prefetch_side_share, the same lines); kPrefetchWeights: each step the weight row 16
  // steps ahead (TileArgs::weights_in_l2 false).
  // tile_ab (session 38, Intel Xeon, warm, weights in L2): 1x1 tiles of K >= 256 1.07-1.08x,
  // K = 64 1.00-1.07x, the 3x3 64-channel window tile 1.10x (176 -> 194 GFLOP/s).
  // clang-format off
#define WINFER_BC(OFF, ADDR) "vbroadcastss " #OFF ADDR ", %%zmm30\n\t"
#define WINFER_FMA(A0, A1) "vfmadd231ps %%zmm30, %%zmm28, %%zmm" #A0 "\n\tvfmadd231ps %%zmm30, %%zmm29, %%zmm" #A1 "\n\t"
// The 14 pixels of a step (byte offset OFF): pixel m's float into zmm30, times the weight row
// into zmm(2m) and zmm(2m + 1).
#define WINFER_PIXELS(OFF)                                                                             \
  WINFER_BC(OFF, "(%[b0])") WINFER_FMA(0, 1)                                                          \
  WINFER_BC(OFF, "(%[b0],%[d],1)") WINFER_FMA(2, 3) WINFER_BC(OFF, "(%[b0],%[d],2)") WINFER_FMA(4, 5)   \
  WINFER_BC(OFF, "(%[b0],%[d3],1)") WINFER_FMA(6, 7) WINFER_BC(OFF, "(%[b0],%[d],4)") WINFER_FMA(8, 9)  \
  WINFER_BC(OFF, "(%[b5])") WINFER_FMA(10, 11) WINFER_BC(OFF, "(%[b5],%[d],1)") WINFER_FMA(12, 13)      \
  WINFER_BC(OFF, "(%[b5],%[d],2)") WINFER_FMA(14, 15) WINFER_BC(OFF, "(%[b5],%[d3],1)") WINFER_FMA(16, 17) \
  WINFER_BC(OFF, "(%[b5],%[d],4)") WINFER_FMA(18, 19) WINFER_BC(OFF, "(%[b10])") WINFER_FMA(20, 21)     \
  WINFER_BC(OFF, "(%[b10],%[d],1)") WINFER_FMA(22, 23) WINFER_BC(OFF, "(%[b10],%[d],2)") WINFER_FMA(24, 25) \
  WINFER_BC(OFF, "(%[b10],%[d3],1)") WINFER_FMA(26, 27)
// One step: the weight row (W0, W1: its two vectors' offsets), the row 16 steps ahead asked
// for when PF, the 14 pixels' float at byte offset OFF.
#define WINFER_STEP(PF, OFF, W0, W1)                                                                   \
  PF("prefetcht0 2048+" #W0 "(%[w])\n\tprefetcht0 2048+" #W1 "(%[w])\n\t")                            \
  "vmovups " #W0 "(%[w]), %%zmm28\n\tvmovups " #W1 "(%[w]), %%zmm29\n\t" WINFER_PIXELS(OFF)
#define WINFER_16_STEPS(PF)                                                                            \
  WINFER_STEP(PF, 0, 0, 64) WINFER_STEP(PF, 4, 128, 192) WINFER_STEP(PF, 8, 256, 320)                 \
  WINFER_STEP(PF, 12, 384, 448) WINFER_STEP(PF, 16, 512, 576) WINFER_STEP(PF, 20, 640, 704)           \
  WINFER_STEP(PF, 24, 768, 832) WINFER_STEP(PF, 28, 896, 960) WINFER_STEP(PF, 32, 1024, 1088)        \
  WINFER_STEP(PF, 36, 1152, 1216) WINFER_STEP(PF, 40, 1280, 1344) WINFER_STEP(PF, 44, 1408, 1472)    \
  WINFER_STEP(PF, 48, 1536, 1600) WINFER_STEP(PF, 52, 1664, 1728) WINFER_STEP(PF, 56, 1792, 1856)    \
  WINFER_STEP(PF, 60, 1920, 1984)
#define WINFER_KEEP(TEXT) TEXT
#define WINFER_DROP(TEXT)
#define WINFER_LD(I) "vmovups " #I "*64(%[acc]), %%zmm" #I "\n\t"
#define WINFER_ST(I) "vmovups %%zmm" #I ", " #I "*64(%[acc])\n\t"
#define WINFER_28(OP)                                                                                  \
  OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11) OP(12) OP(13) OP(14)       \
  OP(15) OP(16) OP(17) OP(18) OP(19) OP(20) OP(21) OP(22) OP(23) OP(24) OP(25) OP(26) OP(27)
// Per iteration: the pixels' lines two ahead, then the side share's lines (rax from pos >> 16 up
// to rcx = (pos + rate16) >> 16, none when rate16 is 0), then 16 steps.
#define WINFER_AFFINE_ASM(PF)                                                                          \
  asm volatile(                                                                                        \
      WINFER_28(WINFER_LD)                                                                             \
      "1:\n\t"                                                                                         \
      "prefetcht0 128(%[b0])\n\tprefetcht0 128(%[b0],%[d],1)\n\tprefetcht0 128(%[b0],%[d],2)\n\t"      \
      "prefetcht0 128(%[b0],%[d3],1)\n\tprefetcht0 128(%[b0],%[d],4)\n\t"                              \
      "prefetcht0 128(%[b5])\n\tprefetcht0 128(%[b5],%[d],1)\n\tprefetcht0 128(%[b5],%[d],2)\n\t"      \
      "prefetcht0 128(%[b5],%[d3],1)\n\tprefetcht0 128(%[b5],%[d],4)\n\t"                              \
      "prefetcht0 128(%[b10])\n\tprefetcht0 128(%[b10],%[d],1)\n\tprefetcht0 128(%[b10],%[d],2)\n\t"   \
      "prefetcht0 128(%[b10],%[d3],1)\n\t"                                                             \
      "mov %[pos], %%rax\n\tsar $16, %%rax\n\tadd %[rate16], %[pos]\n\t"                               \
      "mov %[pos], %%rcx\n\tsar $16, %%rcx\n\tcmp %%rcx, %%rax\n\tjge 3f\n\t"                          \
      "2:\n\tmov %%rax, %%rdx\n\tshl $6, %%rdx\n\tprefetcht1 (%[side],%%rdx)\n\t"                      \
      "inc %%rax\n\tcmp %%rcx, %%rax\n\tjl 2b\n\t"                                                     \
      "3:\n\t" WINFER_16_STEPS(PF)                                                                     \
      "add $64, %[b0]\n\tadd $64, %[b5]\n\tadd $64, %[b10]\n\tadd $2048, %[w]\n\t"                     \
      "dec %[n]\n\tjnz 1b\n\t" WINFER_28(WINFER_ST)                                                    \
      : [b0] "+r"(b0), [b5] "+r"(b5), [b10] "+r"(b10), [w] "+r"(w), [n] "+r"(n16), [pos] "+r"(pos)      \
      : [d] "r"(d), [d3] "r"(d3), [acc] "r"(&acc[0][0]), [side] "r"(side), [rate16] "r"(rate16)        \
      : "memory", "cc", "rax", "rcx", "rdx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6",     \
        "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17",  \
        "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27",        \
        "xmm28", "xmm29", "xmm30", "xmm31")
  // clang-format on
  template <bool kPrefetchWeights>
  __attribute__((always_inline)) static inline void affine_loop_14x2(Vec<16> (&acc)[14][2], const float* b0, int64_t d,
                                                                     const float* w, int64_t n16, const char* side,
                                                                     int64_t rate, int64_t step0) {
    const float* b5 = reinterpret_cast<const float*>(reinterpret_cast<const char*>(b0) + 5 * d);
    const float* b10 = reinterpret_cast<const float*>(reinterpret_cast<const char*>(b0) + 10 * d);
    const int64_t d3 = 3 * d;
    int64_t pos = step0 * rate;
    const int64_t rate16 = side != nullptr ? 16 * rate : 0;
    // The displacements assume weight rows of 32 floats (128 bytes) and a 16-step iteration.
    static_assert(kPanel == 32, "affine_loop_14x2's weight offsets are 128 bytes a row");
    if constexpr (kPrefetchWeights)
      WINFER_AFFINE_ASM(WINFER_KEEP);
    else
      WINFER_AFFINE_ASM(WINFER_DROP);
  }
#undef WINFER_BC
#undef WINFER_FMA
#undef WINFER_PIXELS
#undef WINFER_STEP
#undef WINFER_16_STEPS
#undef WINFER_KEEP
#undef WINFER_DROP
#undef WINFER_LD
#undef WINFER_ST
#undef WINFER_28
#undef WINFER_AFFINE_ASM
  // A prefetch of the line two lines (128 bytes) past base + k * d bytes (k < 5), addressed as
  // broadcast_nth: accumulate_affine's pixel prefetches.
  __attribute__((always_inline)) static inline void prefetch_nth(const float* base, int k, int64_t d, int64_t d3) {
    if (k == 0)
      asm volatile("prefetcht0 128(%0)" : : "r"(base));
    else if (k == 1)
      asm volatile("prefetcht0 128(%0,%1,1)" : : "r"(base), "r"(d));
    else if (k == 2)
      asm volatile("prefetcht0 128(%0,%1,2)" : : "r"(base), "r"(d));
    else if (k == 3)
      asm volatile("prefetcht0 128(%0,%1,1)" : : "r"(base), "r"(d3));
    else
      asm volatile("prefetcht0 128(%0,%1,4)" : : "r"(base), "r"(d));
  }
  __attribute__((always_inline)) static inline Vec<16> broadcast(const float* p) {
    return reinterpret_cast<Vec<16>>(_mm512_set1_ps(*p));
  }
  // p[0..kB) repeated over the vector, one load-port instruction (vbroadcastss, vbroadcastsd,
  // vbroadcastf32x4): a group-set K step (group_sets.h).
  template <int kB>
  __attribute__((always_inline)) static inline Vec<16> broadcast_group(const float* p) {
    if constexpr (kB == 1) {
      return broadcast(p);
    } else if constexpr (kB == 2) {
      // The integer broadcast (vpbroadcastq): on AMD Zen 4 vbroadcastsd from memory takes a slot
      // of the FMA pipes as well as a load, vpbroadcastq only the load (one broadcast per FMA in
      // a register loop: 88 against 117 GFLOP/s, the FMA peak; RegNet-Y-400MF's 8-channel
      // groups, session 35). On Intel both are loads.
      long long q;
      std::memcpy(&q, p, sizeof q);
      return reinterpret_cast<Vec<16>>(_mm512_castsi512_ps(_mm512_set1_epi64(q)));
    } else {
      static_assert(kB == 4);
      // The intrinsic: GCC compiled a __builtin_shufflevector of a loaded Vec<4> into a 64-byte
      // stack round trip per broadcast (a failed store forward each: the B = 4 tile ran at 2%
      // of the peak). The zero-masked form with every lane kept: GCC 12's unmasked one warns
      // of its undefined pass-through operand.
      return reinterpret_cast<Vec<16>>(_mm512_maskz_broadcast_f32x4(__mmask16{0xFFFF}, _mm_loadu_ps(p)));
    }
  }
  // A set's lanes (o * kB + h) in channel order (h * Cog + o): group_sets.h, lane_of().
  template <int kB>
  __attribute__((always_inline)) static inline Vec<16> permute_set(const Vec<16>& v) {
    constexpr int kCog = 16 / kB;
    return __builtin_shufflevector(
        v, v, 0 % kCog * kB + 0 / kCog, 1 % kCog * kB + 1 / kCog, 2 % kCog * kB + 2 / kCog, 3 % kCog * kB + 3 / kCog,
        4 % kCog * kB + 4 / kCog, 5 % kCog * kB + 5 / kCog, 6 % kCog * kB + 6 / kCog, 7 % kCog * kB + 7 / kCog,
        8 % kCog * kB + 8 / kCog, 9 % kCog * kB + 9 / kCog, 10 % kCog * kB + 10 / kCog, 11 % kCog * kB + 11 / kCog,
        12 % kCog * kB + 12 / kCog, 13 % kCog * kB + 13 / kCog, 14 % kCog * kB + 14 / kCog, 15 % kCog * kB + 15 / kCog);
  }
  // A masked load: the masked-off lanes are neither read nor faulted on.
  __attribute__((always_inline)) static inline Vec<16> load_first(const float* p, int n) {
    return reinterpret_cast<Vec<16>>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p));
  }
  // A masked store: p[0..n) only.
  __attribute__((always_inline)) static inline void store_first(float* p, const Vec<16>& v, int n) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), reinterpret_cast<__m512>(v));
  }
};

template <int kRows, int kVecs>
using Avx512Tile = TileEntries<Avx512, kRows, kVecs>;

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

const TileKernels* tile_kernels_avx512() {
  static const TileKernels table = make_tile_kernels<Avx512Tile, 16, 14, 2>("avx512");
  return &table;
}

}  // namespace cpu
}  // namespace winfer

#else

namespace winfer {
namespace cpu {
const TileKernels* tile_kernels_avx512() { return nullptr; }
}  // namespace cpu
}  // namespace winfer

#endif
