// Small groups in interleaved panels ("group sets"): im2win's layout for grouped convolutions
// of 4, 8 or 16 output channels per group (RegNet's 8, ResNeXt's 4/8/16).
//
// A panel of kPanel = 32 lanes holds P = 32 / Cog whole groups as two "sets" of 16 lanes, each
// set B = 16 / Cog groups. Within a set, lane r holds output channel o = r / B of group
// h = r % B: the groups are interleaved, so that the B input values one K step needs (channel
// c of each of the set's groups) are consecutive in the window and one broadcast of B floats
// (vbroadcastss / vbroadcastsd / vbroadcastf32x4, a load and nothing else) gives every lane its
// own group's input. Every lane does useful work: merging groups into a block-diagonal
// group (conv_common.h, merge_small_groups) multiplies (G-1)/G zeros, and a narrow panel of a
// lone 8- or 16-channel group leaves half a vector or a whole one idle.
//
//   window cell (x, kh) of panel q:  [c][j]          j < P: group q*P + j, c < Cg
//   packed weights:                   [q][kw][kh][c][32]   lane L = s*16 + o*B + h, group j = s*B + h
//
// The window cell is the P groups' channels transposed (group-minor); the K order (kw, kh, c)
// is the one of every other im2win panel. A group count that P does not divide leaves the last
// panel with "absent" groups: zero weights, zero window cells, lanes never stored.
//
// The lanes of a set with B > 1 are not in channel order: the tile permutes each set's
// accumulators into channel order before it stores them (lane_of() is that permutation), and
// takes its bias already in lane order (lane_bias()).
#pragma once

#include <cstdint>

#include "kernels/common/conv_params.h"

namespace winfer {
namespace cpu {

// B, the groups per set (1, 2 or 4), where the shape uses group sets; 0 where it does not (one
// group, depthwise, or output channels per group other than 4, 8, 16).
int64_t group_set_width(const ConvParams& p);

// The shape's group sets; only for a shape with group_set_width(p) > 0.
struct GroupSets {
  explicit GroupSets(const ConvParams& p);
  int64_t b;          // groups per set
  int64_t per_panel;  // groups per panel (2b)
  int64_t panels;     // ceil(groups / per_panel); 0 where the shape has no sets
  int64_t cg, cog;    // input and output channels per group
  int64_t k;          // K steps: Kw * Kh * Cg
  int64_t groups;

  // Groups of panel q that exist (the last panel may hold fewer).
  int64_t groups_in(int64_t q) const;
  int64_t weight_floats() const { return panels * k * 32; }
};

// The lane (0..15) of a set that holds the set's channel `channel` (0..15): o * B + h for
// channel h * Cog + o.
inline int lane_of(int64_t b, int channel) {
  const int cog = static_cast<int>(16 / b);
  return static_cast<int>((channel % cog) * b + channel / cog);
}

// OIHW -> the packed panels above (zeros for absent groups), and back.
void pack_weights_group_sets(const ConvParams& p, const float* weight_oihw, float* packed);
void unpack_weights_group_sets(const ConvParams& p, const float* packed, float* weight_oihw);
// The same in the weights' own storage, when the panels are exactly as large as OIHW (P
// divides the group count); false, touching nothing, otherwise.
bool pack_weights_group_sets_in_place(const ConvParams& p, float* weights);

// Panel q's bias in lane order (32 floats; zeros for absent groups, or all zeros without a
// bias).
void lane_bias(const GroupSets& s, int64_t q, const float* bias, float* lanes);

}  // namespace cpu
}  // namespace winfer
