// The indirect convolution's indirection buffer (conv_indirect.cpp), exposed for the tests and
// for timing its construction.
#pragma once

#include <cstdint>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/common/conv_params.h"

namespace winfer {
namespace cpu {

// The algorithm (registered in conv_registry.cpp as "indirect").
const ConvAlgorithm& indirect_conv_algorithm();

// Output pixels per tile of the buffer, whatever the ISA (the workspace cannot depend on it):
// the widest micro-kernel's MR. Narrower kernels split a tile into sub-tiles.
constexpr int64_t kIndirectTile = 14;

// The buffer's shape for these params: per image, `tiles` balanced runs of at most
// kIndirectTile consecutive output pixels (row-major over the output, possibly spanning
// rows); per tile, for each tap (kx * Kh + ky, im2win's weight order), kIndirectTile
// pointers (slots past the tile's last pixel repeat it).
struct IndirectionLayout {
  explicit IndirectionLayout(const ConvParams& p);
  int64_t pixels;    // Ho * Wo
  int64_t tiles;     // per image: ceil(pixels / kIndirectTile)
  int64_t taps;      // Kh * Kw
  int64_t pointers;  // batch * tiles * taps * kIndirectTile
  // Pixels [first, last) of tile t of an image.
  int64_t tile_first(int64_t t) const { return pixels * t / tiles; }
  int64_t tile_last(int64_t t) const { return pixels * (t + 1) / tiles; }
  // Workspace: the pointers, then the zero vector (C floats).
  int64_t workspace_bytes(const ConvParams& p) const;
};

// Fills tiles [first, last) (counted over all images, image n's tile t is n * tiles + t) of the
// buffer at the start of `workspace` for input `input_nhwc`; padding taps point at the zero
// vector at the end of the workspace (which the caller fills with zeros: zero_vector()).
void build_indirection(const ConvParams& p, const IndirectionLayout& layout, const float* input_nhwc, void* workspace,
                       int64_t first, int64_t last);
float* zero_vector(const IndirectionLayout& layout, void* workspace);

}  // namespace cpu
}  // namespace winfer
