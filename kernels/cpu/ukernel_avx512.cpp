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
  static constexpr int kAsmLoopMinRows = 0;  // none (see Avx2)
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
