// How im2win runs a convolution on the GPU: tile shape, load widths and batch chunks
// (host code; the kernels are in im2win_gemm.cuh, the algorithm in conv_im2win.cu). Plain C++,
// so the tests and the bench include it too.
//
// Tile shapes (256 threads each, K step 8, register micro-tile per thread):
//
//   | tile    | block tile | micro-tile | shared memory | for                                   |
//   |---------|------------|------------|---------------|---------------------------------------|
//   | 128x128 | 128 x 128  | 8 x 8      | 16.25 KiB     | wide GEMMs with many blocks (H200: conv5, 6, 8, 10)   |
//   | 128x64  | 128 x 64   | 8 x 4      | 12.25 KiB     | Co/g <= 64, C = 3, small grids (conv1-4, 7, 9, 12)    |
//   | 64x64   | 64 x 64    | 4 x 4      | 8.25 KiB      | grids that would end in a mostly empty wave (conv11)  |
//
// Heuristic (im2win_plan): a cost model per tile, waves of the grid x blocks resident per SM x
// padded tile area / the tile's relative efficiency (estimates from the register counts and the
// SASS, to be tuned on a GPU; conv_im2win.cu), the cheapest wins, a larger tile unless a smaller
// one is over 5% cheaper. Padded columns and partial last waves count, so Co/g = 64 gets 64-wide
// tiles and small grids (14x14 and 7x7 layers) smaller tiles. 128x128 is built only with 16-byte
// loads of A and B over contiguous window rows (Cg % 4 == 0, Co/g % 4 == 0, no groups, no
// horizontal dilation, aligned pointers): its other forms need more than the 128 registers that
// two blocks per SM allow, so those layers (and a forced 128x128) run 128x64.
//
// Batch chunks: the window tensor is built and consumed `chunk_images` images at a time, so the
// workspace is one chunk's window. The whole batch when its window fits the budget (256 MiB);
// otherwise as few chunks as keep each window within the budget, but no chunk so small that its
// GEMM grid has fewer than 8 waves (16 blocks per SM), which would lose speed to partial waves.
#pragma once

#include <cstdint>

#include "kernels/common/conv_params.h"

namespace winfer {
namespace cuda {

enum class Im2winTile : int { k128x128 = 0, k128x64 = 1, k64x64 = 2 };
constexpr int kIm2winTileCount = 3;
const char* im2win_tile_name(Im2winTile tile);

struct Im2winPlan {
  Im2winTile tile = Im2winTile::k128x128;
  bool vector_a = false;  // 16-byte window loads: Cg % 4 == 0
  bool vector_b = false;  // cp.async weight copies and 16-byte output stores: Co/g % 4 == 0
  int64_t chunk_images = 1;
  int64_t blocks = 0;  // of one chunk's GEMM grid
};

// The plan for `p` on the current device (its SM count, cached). The kernels also need 16-byte
// aligned pointers for the vector paths; run() falls back to scalar loads when one is not.
Im2winPlan im2win_plan(const ConvParams& p);
int im2win_sm_count();  // of the current device; 132 (H100/H200) when none can be asked

// Test hooks (not for production): force a tile shape (-1: the heuristic), force scalar loads
// and stores, and change the window budget in bytes (-1: the default). Not thread-safe.
void im2win_force_tile(int tile);
void im2win_force_scalar(bool scalar);
void im2win_set_window_budget(int64_t bytes);
void im2win_force_sm_count(int sms);  // plan for a device with this many SMs (0: the current one)

}  // namespace cuda
}  // namespace winfer
