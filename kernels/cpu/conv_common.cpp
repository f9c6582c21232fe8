#include "kernels/cpu/conv_common.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_conv.h"

namespace winfer {
namespace cpu {

namespace {

// f(oihw, ghwio) for every weight: its index in OIHW and in GHWIO.
template <class F>
void for_each_ghwio_weight(const ConvParams& p, F f) {
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const int64_t kh = p.kernel_h, kw = p.kernel_w;
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t o = 0; o < cog; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t x = 0; x < kw; ++x)
            f((((g * cog + o) * cg + c) * kh + y) * kw + x, (((g * kh + y) * kw + x) * cg + c) * cog + o);
}

// f(oihw, at) for every weight of one panel of `rows` (<= kPanel) output channels: oihw indexes
// the panel's OIHW rows [rows][Cg][Kh][Kw], at the packed panel [Kw][Kh][Cg][rows].
template <class F>
void for_each_panel_weight(const ConvParams& p, int64_t rows, F f) {
  const int64_t cg = p.in_channels_per_group(), kh_count = p.kernel_h, kw_count = p.kernel_w;
  for (int64_t o = 0; o < rows; ++o)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t kh = 0; kh < kh_count; ++kh)
        for (int64_t kw = 0; kw < kw_count; ++kw)
          f(((o * cg + c) * kh_count + kh) * kw_count + kw, ((kw * kh_count + kh) * cg + c) * rows + o);
}

// f(start, rows) for every panel: where it begins (in floats; the same offset in OIHW and in
// the packed weights, since a panel fills exactly its OIHW rows) and how many output channels
// it has.
template <class F>
void for_each_panel(const ConvParams& p, F f) {
  const int64_t cog = p.out_channels_per_group(), panels = ceil_div(cog, kPanel);
  const int64_t k = p.in_channels_per_group() * p.kernel_h * p.kernel_w;
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t panel = 0; panel < panels; ++panel) f(panel_start(g, cog, panel, k), panel_width(cog, panel));
}

}  // namespace

int64_t ghwio_weight_floats(const ConvParams& p) {
  return p.groups * p.kernel_h * p.kernel_w * p.in_channels_per_group() * p.out_channels_per_group();
}

void pack_weights_ghwio(const ConvParams& p, const float* weight_oihw, float* packed) {
  for_each_ghwio_weight(p, [&](int64_t oihw, int64_t at) { packed[at] = weight_oihw[oihw]; });
}

void unpack_weights_ghwio(const ConvParams& p, const float* packed, float* weight_oihw) {
  for_each_ghwio_weight(p, [&](int64_t oihw, int64_t at) { weight_oihw[oihw] = packed[at]; });
}

int64_t panel_weight_floats(const ConvParams& p) {
  return p.out_channels * p.in_channels_per_group() * p.kernel_h * p.kernel_w;
}

void pack_weights_panels(const ConvParams& p, const float* weight_oihw, float* packed) {
  for_each_panel(p, [&](int64_t start, int64_t rows) {
    for_each_panel_weight(p, rows, [&](int64_t i, int64_t j) { packed[start + j] = weight_oihw[start + i]; });
  });
}

void unpack_weights_panels(const ConvParams& p, const float* packed, float* weight_oihw) {
  for_each_panel(p, [&](int64_t start, int64_t rows) {
    for_each_panel_weight(p, rows, [&](int64_t i, int64_t j) { weight_oihw[start + i] = packed[start + j]; });
  });
}

bool pack_weights_panels_in_place(const ConvParams& p, float* weights) {
  const int64_t k = p.in_channels_per_group() * p.kernel_h * p.kernel_w;
  std::vector<float> rows_copy(static_cast<size_t>(k * std::min<int64_t>(kPanel, p.out_channels_per_group())));
  const int64_t cg = p.in_channels_per_group(), kh_count = p.kernel_h, kw_count = p.kernel_w;
  for_each_panel(p, [&](int64_t start, int64_t rows) {
    std::memcpy(rows_copy.data(), weights + start, static_cast<size_t>(rows * k) * sizeof(float));
    // for_each_panel_weight's permutation with the output channel innermost: the panel is
    // written row by row (contiguous) and read from the L2-resident copy with a stride, which
    // is about twice as fast at load as scattering each OIHW row's K floats (start-up, issue 25).
    float* panel = weights + start;
    for (int64_t kw = 0; kw < kw_count; ++kw)
      for (int64_t kh = 0; kh < kh_count; ++kh)
        for (int64_t c = 0; c < cg; ++c) {
          float* row = panel + ((kw * kh_count + kh) * cg + c) * rows;
          const float* from = rows_copy.data() + (c * kh_count + kh) * kw_count + kw;
          for (int64_t o = 0; o < rows; ++o) row[o] = from[o * k];
        }
  });
  return true;
}

int64_t merged_group_factor(const ConvParams& p) {
  const int64_t cog = p.out_channels_per_group();
  int64_t best = 1;
  for (int64_t g = 2; g * cog <= 16 && g <= p.groups; ++g)
    if (p.groups % g == 0) best = g;
  return best;
}

ConvParams merge_small_groups(const ConvParams& p) {
  ConvParams m = p;
  m.groups = p.groups / merged_group_factor(p);
  return m;
}

namespace {

// f(oihw, merged) for every weight of p: its index in p's OIHW weights and in the OIHW weights
// of merge_small_groups(p) (block-diagonal: group j of a merged group of G takes output rows
// j*Cog.. and input columns j*Cg..).
template <class F>
void for_each_merged_weight(const ConvParams& p, F f) {
  const int64_t factor = merged_group_factor(p);
  const int64_t cg = p.in_channels_per_group(), taps = p.kernel_h * p.kernel_w;
  for (int64_t o = 0; o < p.out_channels; ++o) {
    const int64_t j = (o / p.out_channels_per_group()) % factor;  // the group's place in its merged group
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t t = 0; t < taps; ++t) f((o * cg + c) * taps + t, (o * factor * cg + j * cg + c) * taps + t);
  }
}

}  // namespace

void PanelWeightsAlgorithm::pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const {
  if (merged_group_factor(p) == 1) return pack_weights_panels(p, weight_oihw, packed);
  const ConvParams m = merge_small_groups(p);
  std::vector<float> merged(static_cast<size_t>(panel_weight_floats(m)), 0.f);
  for_each_merged_weight(p, [&](int64_t i, int64_t j) { merged[j] = weight_oihw[i]; });
  pack_weights_panels(m, merged.data(), packed);
}

void PanelWeightsAlgorithm::unpack_weights(const ConvParams& p, const float* packed, float* weight_oihw) const {
  if (merged_group_factor(p) == 1) return unpack_weights_panels(p, packed, weight_oihw);
  const ConvParams m = merge_small_groups(p);
  std::vector<float> merged(static_cast<size_t>(panel_weight_floats(m)));
  unpack_weights_panels(m, packed, merged.data());
  for_each_merged_weight(p, [&](int64_t i, int64_t j) { weight_oihw[i] = merged[j]; });
}

void bias_residual_activation_rows(float* out, int64_t pixels, int64_t channels, const float* bias,
                                   const float* residual, Activation act, int threads) {
  bias_residual_activation_strided_rows(out, channels, pixels, channels, bias, residual, act, threads);
}

void bias_residual_activation_strided_rows(float* out, int64_t out_stride, int64_t pixels, int64_t channels,
                                           const float* bias, const float* residual, Activation act, int threads) {
  if (bias == nullptr && residual == nullptr && act == Activation::kNone) return;
  const Clamp clip = activation_clamp(act);
  const int nt = threads_for_work(threads, pixels * channels / 4);
  parallel_pieces(nt, pixels, pieces_for(nt, pixels, pixels * channels / 4), [&](int64_t first, int64_t last, int) {
    for (int64_t px = first; px < last; ++px) {
      float* row = out + px * out_stride;
      const float* res = residual != nullptr ? residual + px * channels : nullptr;
      // bias first, then the residual: the order of the unfused conv-then-add, so that fusing
      // does not change the rounding.
      if (bias != nullptr && res != nullptr)
        for (int64_t c = 0; c < channels; ++c) row[c] = clamp((row[c] + bias[c]) + res[c], clip);
      else if (bias != nullptr)
        for (int64_t c = 0; c < channels; ++c) row[c] = clamp(row[c] + bias[c], clip);
      else if (res != nullptr)
        for (int64_t c = 0; c < channels; ++c) row[c] = clamp(row[c] + res[c], clip);
      else
        for (int64_t c = 0; c < channels; ++c) row[c] = clamp(row[c], clip);
    }
  });
}

void add_residual(const ConvParams& p, const float* residual, float* output, Activation act, int threads) {
  if (residual == nullptr) return;
  bias_residual_activation_rows(output, p.batch * p.out_h() * p.out_w(), p.out_channels, nullptr, residual, act,
                                threads);
}

}  // namespace cpu
}  // namespace winfer
