#include "kernels/cpu/conv_common.h"

#include <algorithm>
#include <cstring>
#include <memory>
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

// The packed weights are exactly as large as OIHW: a copy packed in place, whose two in-order
// passes are several times faster than scattering each weight (pack_weights_panels_in_place).
void pack_weights_panels(const ConvParams& p, const float* weight_oihw, float* packed) {
  std::memcpy(packed, weight_oihw, static_cast<size_t>(panel_weight_floats(p)) * sizeof(float));
  pack_weights_panels_in_place(p, packed);
}

void unpack_weights_panels(const ConvParams& p, const float* packed, float* weight_oihw) {
  for_each_panel(p, [&](int64_t start, int64_t rows) {
    for_each_panel_weight(p, rows, [&](int64_t i, int64_t j) { weight_oihw[start + i] = packed[start + j]; });
  });
}

namespace {

// Rows r[0..3] of a 4x4 block, transposed: out[i] = (r[0][i], r[1][i], r[2][i], r[3][i]).
WINFER_ALWAYS_INLINE inline void transpose4(const Vec<4> (&r)[4], Vec<4> (&out)[4]) {
  const Vec<4> t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5),
               t1 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
  const Vec<4> t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5),
               t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
  out[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
  out[1] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
  out[2] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
  out[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}

}  // namespace

bool pack_weights_panels_in_place(const ConvParams& p, float* weights) {
  const int64_t k = p.in_channels_per_group() * p.kernel_h * p.kernel_w;
  const int64_t cg = p.in_channels_per_group(), kh_count = p.kernel_h, kw_count = p.kernel_w;
  // The OIHW column (c, kh, kw) that panel row ((kw * Kh + kh) * Cg + c) holds.
  std::vector<int64_t> column_of(static_cast<size_t>(k));
  for (int64_t kw = 0; kw < kw_count; ++kw)
    for (int64_t kh = 0; kh < kh_count; ++kh)
      for (int64_t c = 0; c < cg; ++c)
        column_of[static_cast<size_t>((kw * kh_count + kh) * cg + c)] = (c * kh_count + kh) * kw_count + kw;
  // A panel's [K][rows] transpose (not a std::vector: its zero fill was a pass for nothing).
  const std::unique_ptr<float[]> transposed(
      new float[static_cast<size_t>(k * std::min<int64_t>(kPanel, p.out_channels_per_group()))]);
  // for_each_panel_weight's permutation in two passes that each read and write in order: the
  // panel's [rows][K] OIHW rows transposed into [K][rows] (4x4 blocks in registers: 4 OIHW rows'
  // next 4 columns, lines that stay in L1 while the columns move on), then the panel's rows
  // copied back in their (kw, kh, c) order, each one contiguous run of `rows` floats. Gathering
  // each panel row float by float from a copy (a strided read each) took 3.5 ms of
  // RegNet-Y-400MF's 17 ms load; with these two passes VGG-16's convolutions pack in 8.9 ms
  // instead of 18.5, and ResNet-50's whole load takes 63 ms instead of 83 (session 35).
  for_each_panel(p, [&, k](int64_t start, int64_t rows) {
    float* const panel = weights + start;
    float* const t = transposed.get();
    const int64_t rows4 = rows / 4 * 4, k4 = k / 4 * 4;
    for (int64_t i = 0; i < k4; i += 4) {
      for (int64_t o = 0; o < rows4; o += 4) {
        const float* src = panel + o * k + i;
        const Vec<4> r[4] = {load<4>(src), load<4>(src + k), load<4>(src + 2 * k), load<4>(src + 3 * k)};
        Vec<4> cols[4];
        transpose4(r, cols);
        for (int j = 0; j < 4; ++j) store<4>(t + (i + j) * rows + o, cols[j]);
      }
      for (int64_t o = rows4; o < rows; ++o)
        for (int j = 0; j < 4; ++j) t[(i + j) * rows + o] = panel[o * k + i + j];
    }
    for (int64_t i = k4; i < k; ++i)
      for (int64_t o = 0; o < rows; ++o) t[i * rows + o] = panel[o * k + i];
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(panel + j * rows, t + column_of[static_cast<size_t>(j)] * rows,
                  static_cast<size_t>(rows) * sizeof(float));
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

void PanelWeightsAlgorithm::scale_packed_input_channels(const ConvParams& p, const float* packed, const float* scale,
                                                        float* scaled) const {
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const int64_t k = cg * p.kernel_h * p.kernel_w, panels = ceil_div(cog, kPanel);
  for (int64_t g = 0; g < p.groups; ++g) {
    const float* s = scale + g * cg;
    for (int64_t panel = 0; panel < panels; ++panel) {
      const int64_t start = panel_start(g, cog, panel, k), width = panel_width(cog, panel);
      for (int64_t row = 0; row < k; ++row) {
        const float f = s[row % cg];
        const float* in = packed + start + row * width;
        float* out = scaled + start + row * width;
        for (int64_t o = 0; o < width; ++o) out[o] = in[o] * f;
      }
    }
  }
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
