#include "kernels/cpu/group_sets.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace cpu {

int64_t group_set_width(const ConvParams& p) {
  if (p.groups <= 1 || p.is_depthwise()) return 0;
  const int64_t cog = p.out_channels_per_group();
  return cog == 4 || cog == 8 || cog == 16 ? 16 / cog : 0;
}

GroupSets::GroupSets(const ConvParams& p)
    : b(group_set_width(p)),
      per_panel(2 * b),
      panels(b > 0 ? ceil_div(p.groups, 2 * b) : 0),  // none where the shape has no sets
      cg(p.in_channels_per_group()),
      cog(p.out_channels_per_group()),
      k(p.kernel_w * p.kernel_h * p.in_channels_per_group()),
      groups(p.groups) {}

int64_t GroupSets::groups_in(int64_t q) const { return std::min(per_panel, groups - q * per_panel); }

namespace {

// f(oihw, at) for every weight of panel q: its index in the panel's OIHW rows (the rows of
// its groups' output channels, [rows][Cg][Kh][Kw], from the panel's first channel) and in the
// packed panel [Kw][Kh][Cg][32].
template <class F>
void for_each_panel_weight(const ConvParams& p, const GroupSets& s, int64_t q, F f) {
  const int64_t kh_count = p.kernel_h, kw_count = p.kernel_w;
  const int64_t rows = s.groups_in(q) * s.cog;
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t j = row / s.cog, o = row % s.cog;  // group in the panel, channel in the group
    const int64_t lane = (j / s.b) * 16 + o * s.b + j % s.b;
    for (int64_t c = 0; c < s.cg; ++c)
      for (int64_t kh = 0; kh < kh_count; ++kh)
        for (int64_t kw = 0; kw < kw_count; ++kw)
          f(((row * s.cg + c) * kh_count + kh) * kw_count + kw, ((kw * kh_count + kh) * s.cg + c) * 32 + lane);
  }
}

}  // namespace

void pack_weights_group_sets(const ConvParams& p, const float* weight_oihw, float* packed) {
  const GroupSets s(p);
  std::fill(packed, packed + s.weight_floats(), 0.f);
  for (int64_t q = 0; q < s.panels; ++q) {
    const float* rows = weight_oihw + q * 32 * s.k;  // the panel's channels start at q * 32
    float* panel = packed + q * 32 * s.k;
    for_each_panel_weight(p, s, q, [&](int64_t i, int64_t at) { panel[at] = rows[i]; });
  }
}

void unpack_weights_group_sets(const ConvParams& p, const float* packed, float* weight_oihw) {
  const GroupSets s(p);
  for (int64_t q = 0; q < s.panels; ++q) {
    float* rows = weight_oihw + q * 32 * s.k;
    const float* panel = packed + q * 32 * s.k;
    for_each_panel_weight(p, s, q, [&](int64_t i, int64_t at) { rows[i] = panel[at]; });
  }
}

bool pack_weights_group_sets_in_place(const ConvParams& p, float* weights) {
  const GroupSets s(p);
  if (s.groups % s.per_panel != 0) return false;
  // A panel fills exactly its groups' OIHW rows: pack each from a copy of them.
  std::vector<float> rows(static_cast<size_t>(32 * s.k));
  for (int64_t q = 0; q < s.panels; ++q) {
    float* panel = weights + q * 32 * s.k;
    std::copy(panel, panel + rows.size(), rows.begin());
    for_each_panel_weight(p, s, q, [&](int64_t i, int64_t at) { panel[at] = rows[i]; });
  }
  return true;
}

void lane_bias(const GroupSets& s, int64_t q, const float* bias, float* lanes) {
  std::fill(lanes, lanes + 32, 0.f);
  if (bias == nullptr) return;
  const int64_t present = s.groups_in(q) * s.cog;
  for (int set = 0; set < 2; ++set)
    for (int channel = 0; channel < 16; ++channel)
      if (set * 16 + channel < present) lanes[set * 16 + lane_of(s.b, channel)] = bias[q * 32 + set * 16 + channel];
}

}  // namespace cpu
}  // namespace winfer
