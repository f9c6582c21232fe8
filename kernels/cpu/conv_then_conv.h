// A convolution whose output only a second convolution reads, computed band by band
// (kernels/cpu/conv_bands.h): ShuffleNet's and MobileNet's pointwise -> depthwise pair, where
// the pointwise output is the block's largest tensor (ShuffleNet's stage2 downsampling block:
// 58 channels at 56x56, 2.4x the block's input) and the depthwise convolution reads three of
// its rows at a time. The first convolution's output becomes a band of rows in the workspace,
// read by the second from cache.
//
// The second convolution runs on each band as a problem of its own (the band's images, its rows
// as its input, the part of its windows above and below them as padding), so any algorithm
// computes it; the engine uses this for a grouped (depthwise or not) second convolution only:
// RegNet's 1x1 -> grouped 3x3 too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_bands.h"

namespace winfer {

// One convolution of the pair: its algorithm, weights in that algorithm's layout, bias (may be
// null), fused activation and an element-wise function after it (EfficientNet's SiLU,
// MobileNetV3's Hardswish), applied to each band of its output while the band is in cache.
struct ConvStage {
  const ConvAlgorithm* algorithm = nullptr;
  const float* packed = nullptr;
  const float* bias = nullptr;
  Activation act = Activation::kNone;
  std::optional<PointwiseFn> pointwise;
};

class ConvThenConv {
 public:
  // `first` and `second` are whole layers (any batch, the same for both); second reads first's
  // output: its batch, in_channels, in_h and in_w are first's output's. Bands and lanes as
  // `sizing` says (ConvBands).
  ConvThenConv(const ConvAlgorithm& first_algorithm, const ConvParams& first, const ConvAlgorithm& second_algorithm,
               const ConvParams& second, BandSizing sizing);

  // Band buffer plus the largest scratch either algorithm needs for any band.
  size_t workspace_bytes() const { return bands_.workspace_bytes(); }
  // output (NHWC, second's output) = second(first(input)), each with its bias, activation and
  // pointwise function.
  void run(const float* input_nhwc, const ConvStage& first, const ConvStage& second, float* output_nhwc,
           void* workspace, int threads) const;

 private:
  // The second convolution of consumer rows [b.o0, b.o1) of `images` images, reading only the band.
  ConvParams second_rows_problem(const ConvBands::Band& b, int64_t images) const;

  ConvParams second_;
  ConvBands bands_;
};

}  // namespace winfer
