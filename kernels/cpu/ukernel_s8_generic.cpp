// Portable INT8 micro-kernels (plain int32 arithmetic, up to 4 pixels x 32 channels), and the
// INT8 ISA dispatch. The reference the SIMD kernels must match bit for bit.
#include <cstring>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_s8.h"

namespace winfer {
namespace cpu {
namespace {

template <int kRows, bool kIndirect>
struct GenericS8Tile {
  static void run(const S8TileArgs& a) {
    int32_t acc[kRows][kS8Panel];
    for (int m = 0; m < kRows; ++m)
      for (int j = 0; j < kS8Panel; ++j) acc[m][j] = a.bias[j];
    for (int64_t s = 0; s < a.segments; ++s) {
      const int8_t* w0 = a.weights + s * a.w_seg_stride;
      for (int m = 0; m < kRows; ++m) {
        const uint8_t* x = s8_segment<kIndirect>(a, s, m);
        const int8_t* w = w0;
        for (int64_t q = 0; q < a.quads; ++q, x += 4, w += 4 * kS8Panel)
          for (int j = 0; j < kS8Panel; ++j)
            acc[m][j] += x[0] * w[4 * j] + x[1] * w[4 * j + 1] + x[2] * w[4 * j + 2] + x[3] * w[4 * j + 3];
        if (a.tail > 0) {
          const uint32_t t = s8_load_tail(x, a.tail);
          const int32_t x0 = t & 255, x1 = (t >> 8) & 255, x2 = (t >> 16) & 255;
          for (int j = 0; j < kS8Panel; ++j) acc[m][j] += x0 * w[4 * j] + x1 * w[4 * j + 1] + x2 * w[4 * j + 2];
        }
      }
    }
    if (a.res != nullptr) {
      for (int m = 0; m < kRows; ++m)
        for (int j = 0; j < a.cols; ++j)
          a.out[m * a.out_stride + j] = s8_requantize_residual(acc[m][j], a.mult[j], a.res[m * a.res_stride + j],
                                                               a.res_zero, a.res_scale, a.out_zero, a.lo, a.hi);
      return;
    }
    for (int m = 0; m < kRows; ++m)
      for (int j = 0; j < a.cols; ++j)
        a.out[m * a.out_stride + j] = s8_requantize(acc[m][j], a.mult[j], a.out_zero, a.lo, a.hi);
  }
};

}  // namespace

const S8TileKernels& s8_tile_kernels_generic() {
  static const S8TileKernels table = [] {
    S8TileKernels t{};
    t.isa = "generic";
    t.max_rows = 4;
    fill_s8_tiles<GenericS8Tile, 1, 2, 3, 4>(t);
    return t;
  }();
  return table;
}

namespace {
bool cpu_has_vnni() {
#if WINFER_X86_DISPATCH
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}
}  // namespace

S8Isa s8_isa() {
  static const bool vnni = cpu_has_vnni();
  const Isa isa = cpu_isa();
  if (isa == Isa::kAvx512 && vnni && s8_tile_kernels_vnni() != nullptr) return S8Isa::kVnni;
  if (isa >= Isa::kAvx2 && s8_tile_kernels_avx2() != nullptr) return S8Isa::kAvx2;
  return S8Isa::kGeneric;
}

const char* s8_isa_name(S8Isa isa) {
  return isa == S8Isa::kVnni ? "avx512vnni" : isa == S8Isa::kAvx2 ? "avx2" : "generic";
}

const S8TileKernels& s8_tile_kernels(S8Isa isa) {
  const S8TileKernels* t = nullptr;
  if (isa == S8Isa::kVnni) t = s8_tile_kernels_vnni();
  if (isa == S8Isa::kAvx2) t = s8_tile_kernels_avx2();
  return t != nullptr ? *t : s8_tile_kernels_generic();
}

}  // namespace cpu
}  // namespace winfer
