// Portable convolution micro-kernels (baseline ISA: SSE2 on x86-64, NEON on AArch64): up to
// 6 pixels x 8 channels (2 x 4 lanes) per tile, 12 accumulators in 16 vector registers. Also
// the tile_kernels() dispatcher.
#include <cstring>

#include "kernels/cpu/ukernel_conv.h"
#include "kernels/cpu/ukernel_conv_body.h"

namespace winfer {
namespace cpu {
namespace {

struct Generic {
  static constexpr int kLanes = 4;
  __attribute__((always_inline)) static inline Vec<4> broadcast(const float* p) { return cpu::broadcast<4>(*p); }
};

template <int kRows, int kVecs>
struct GenericTile {
  static void run(const TileArgs& a) { tile<Generic, kRows, kVecs>(a); }
  static void run_indirect(const TileArgs& a) { indirect_tile<Generic, kRows, kVecs>(a); }
};

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
