// Portable convolution micro-kernels (baseline ISA: SSE2 on x86-64, NEON on AArch64): up to
// 6 pixels x 8 channels (2 x 4 lanes) per tile, 12 accumulators in 16 vector registers. Also
// the tile_kernels() dispatcher.
#include <cstring>
#include <utility>

#include "kernels/cpu/ukernel_conv.h"
#include "kernels/cpu/ukernel_conv_body.h"

namespace winfer {
namespace cpu {
namespace {

struct Generic {
  static constexpr int kLanes = 4;
  static constexpr int kAsmLoopMinRows = 0;      // none (see Avx2)
  static constexpr bool kAffineAsmLoop = false;  // none (see Avx512)
  __attribute__((always_inline)) static inline Vec<4> broadcast(const float* p) { return cpu::broadcast<4>(*p); }
  // p[0..kB) repeated over the vector (a group-set K step, group_sets.h).
  template <int kB>
  __attribute__((always_inline)) static inline Vec<4> broadcast_group(const float* p) {
    Vec<4> v;
    for (int i = 0; i < 4; ++i) v[i] = p[i % kB];
    return v;
  }
  __attribute__((always_inline)) static inline Vec<4> load_first(const float* p, int n) {
    Vec<4> v{};
    for (int i = 0; i < n; ++i) v[i] = p[i];
    return v;
  }
  __attribute__((always_inline)) static inline void store_first(float* p, const Vec<4>& v, int n) {
    for (int i = 0; i < n; ++i) p[i] = v[i];
  }
};

template <int kRows, int kVecs>
using GenericTile = TileEntries<Generic, kRows, kVecs>;

}  // namespace

const TileKernels& tile_kernels_generic() {
  static const TileKernels table = make_tile_kernels<GenericTile, 4, 6, 2>("generic");
  return table;
}

const TileKernels& tile_kernels(Isa isa) {
  const TileKernels* t = nullptr;
  if (isa == Isa::kAvx512) t = tile_kernels_avx512();
  if (isa == Isa::kAvx2) t = tile_kernels_avx2();
  return t != nullptr ? *t : tile_kernels_generic();
}

}  // namespace cpu
}  // namespace winfer
