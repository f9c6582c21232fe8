// Pieces shared by the CPU convolution algorithms (internal to kernels/cpu).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/cpu_caches.h"  // l2_bytes(), l2_weight_bytes()
#include "kernels/common/conv_params.h"
#include "kernels/cpu/ukernel_conv.h"  // kPanel

namespace winfer {
namespace cpu {

// The registered algorithms, one per file; conv_registry.cpp lists them in a fixed order.
const ConvAlgorithm& direct_conv_algorithm();
const ConvAlgorithm& im2col_conv_algorithm();
const ConvAlgorithm& depthwise_conv_algorithm();
const ConvAlgorithm& im2win_conv_algorithm();
const ConvAlgorithm& winograd_conv_algorithm();

// Weights OIHW [Co][C/g][Kh][Kw] -> "GHWIO" [g][Kh][Kw][C/g][Co/g]. For a fixed group and tap,
// rows over input channels are contiguous and each row holds that group's output channels, so
// this is both the direct kernel's layout (inner loop over output channels) and, per group, the
// row-major K x N matrix B of im2col's GEMM with K = Kh*Kw*C/g ordered (kh, kw, c).
int64_t ghwio_weight_floats(const ConvParams& p);
void pack_weights_ghwio(const ConvParams& p, const float* weight_oihw, float* packed);
void unpack_weights_ghwio(const ConvParams& p, const float* packed, float* weight_oihw);

// The micro-kernel algorithms' layout (im2win, indirect): panels of kPanel output channels,
// [g][panel][Kw][Kh][Cg][width], where width = kPanel except for a group's last panel, which
// holds its remaining channels (no padding), so that the K order matches a window run and
// each K step reads one contiguous panel row (ukernel_conv.h). A panel fills exactly the
// floats of its OIHW rows: the packed weights are as large as OIHW and a panel starts where
// its rows start.
int64_t panel_weight_floats(const ConvParams& p);
void pack_weights_panels(const ConvParams& p, const float* weight_oihw, float* packed);
void unpack_weights_panels(const ConvParams& p, const float* packed, float* weight_oihw);
// The same in the weights' own storage, through a copy of one panel's rows at a time (at most
// kPanel * K floats: 590 KB for 512->512 3x3). Always possible (returns true).
bool pack_weights_panels_in_place(const ConvParams& p, float* weights);
// Channels of panel `panel` of a group of `cog` output channels (the last one may be narrower).
inline int64_t panel_width(int64_t cog, int64_t panel) { return std::min<int64_t>(kPanel, cog - panel * kPanel); }
// Where that panel of group g begins in the packed weights, in floats (K = Kw * Kh * Cg).
inline int64_t panel_start(int64_t g, int64_t cog, int64_t panel, int64_t k) { return (g * cog + panel * kPanel) * k; }

// Whether a group's packed weights (`weight_bytes`) dwarf the pixels an image's tiles read
// (`pixel_bytes`: output pixels x K floats): at least 512 KiB and 4x. Such a layer is computed
// panel by panel even where its weights fit L2 (im2win, indirect): tile by tile, the first tile
// meets every panel and, in a network, streams all the weights from L3 or memory at the FMAs'
// pace; panel by panel, each panel's tiles prefetch the next panel while they compute, and the
// pixels, the smaller side, are what is read again. ResNet-50's 256 -> 1024 1x1 layers on 14x14
// (1 MiB of weights, 200 KiB of pixels): 0.87-0.91x the time in the network (im2win, session 37,
// Intel Xeon); its 1x1 layers of 56x56 and 28x28 (64-256 KiB of weights, more pixels than
// weights) ran 8-35% slower panel by panel. 256 KiB and 2x measured the same as these.
inline bool weights_dwarf_pixels(int64_t weight_bytes, int64_t pixel_bytes) {
  constexpr int64_t kMinWeightBytes = 512 << 10, kRatio = 4;
  return weight_bytes >= kMinWeightBytes && weight_bytes >= kRatio * pixel_bytes;
}

// Small groups merged (issue 23). A group of fewer than 16 output channels fills only part of an
// AVX-512 vector, and its tiles are short (K = Kh*Kw*Cg: 72 for RegNet's 8 channels per group)
// while each still pays a call, a window build or a pass over the indirection buffer, and a
// masked store. So G consecutive groups (G * Cog <= 16, G divides the group count) run as one
// group of G*Cg input and G*Cog output channels whose weights are block-diagonal (zeros
// between one group's outputs and another's inputs): in NHWC those G groups' channels are
// contiguous, so the merged group reads and writes exactly the same channels, bias and
// residual as the G groups. The zeros are multiplied (G times the multiply-adds) but they sit
// in lanes the narrow panel left empty anyway, and the tiles, windows and calls are G times
// fewer: C208 14x14 g26 runs as g13, C128 g32 (4 per group) as g8.
// The factor G (1: nothing merged) depends on the shape only, never on the ISA, so that the
// packed layout is the same everywhere.
int64_t merged_group_factor(const ConvParams& p);
// p with groups / G groups; the packed weights and every run of im2win and indirect use it.
ConvParams merge_small_groups(const ConvParams& p);

// The weight handling of the micro-kernel algorithms (im2win, indirect): the panel layout above
// for the merged groups (packed in place when nothing is merged; G times larger with zero
// blocks otherwise, unpacked bit for bit either way), and a fused residual added in
// the tile's store, each element read just before the same element is written, so the output
// may be the residual.
class PanelWeightsAlgorithm : public ConvAlgorithm {
 public:
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(panel_weight_floats(merge_small_groups(p))) * sizeof(float);
  }
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override;
  bool pack_weights_in_place(const ConvParams& p, float* weights) const override {
    return merged_group_factor(p) == 1 && pack_weights_panels_in_place(p, weights);
  }
  bool can_unpack_weights() const override { return true; }
  void unpack_weights(const ConvParams& p, const float* packed, float* weight_oihw) const override;
  bool residual_may_alias_output() const override { return true; }
  bool supports_output_stride() const override { return true; }  // im2win and indirect
  // Every panel row is one input channel's (k = (kw * Kh + kh) * Cg + c): row k of group g
  // times scale[g * Cg + c]. Not for merged small groups (their block-diagonal panels); im2win
  // declines its group sets.
  bool scales_packed_input_channels(const ConvParams& p) const override { return merged_group_factor(p) == 1; }
  void scale_packed_input_channels(const ConvParams& p, const float* packed, const float* scale,
                                   float* scaled) const override;
};

// out[p][c] = act(out[p][c] + bias[c] + residual[p][c]) over `pixels` rows of `channels`
// floats; bias and residual (rows of `channels` floats, like out) may be null. Does nothing
// when both are null and act is kNone.
void bias_residual_activation_rows(float* out, int64_t pixels, int64_t channels, const float* bias,
                                   const float* residual, Activation act, int threads);
// The same with out's rows `out_stride` (>= channels) floats apart, a channel slice of a wider
// tensor (ConvParams::out_pixel_stride); residual rows stay `channels` floats apart.
void bias_residual_activation_strided_rows(float* out, int64_t out_stride, int64_t pixels, int64_t channels,
                                           const float* bias, const float* residual, Activation act, int threads);
inline void bias_activation_rows(float* out, int64_t pixels, int64_t channels, const float* bias, Activation act,
                                 int threads) {
  bias_residual_activation_rows(out, pixels, channels, bias, nullptr, act, threads);
}

// The residual of the algorithms whose epilogue cannot read it (direct, depthwise): they
// convolve with activation_before_residual() (none when there is a residual, since the
// activation must follow the sum), then add_residual() makes one pass out = act(out + residual)
// over the output (nothing when residual is null).
inline Activation activation_before_residual(const float* residual, Activation act) {
  return residual != nullptr ? Activation::kNone : act;
}
void add_residual(const ConvParams& p, const float* residual, float* output, Activation act, int threads);

}  // namespace cpu
}  // namespace winfer
