// A convolution followed by max pooling (VGG's conv -> relu -> pool, ResNet's stem), computed
// band by band (kernels/cpu/conv_bands.h) so that the convolution's full output never exists:
// the largest tensor of these networks (VGG16's conv1_2 output: 12.8 MB per image) becomes a
// band of a few rows in the workspace, and the pooling reads it while it is in cache.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_bands.h"
#include "kernels/cpu/pooling.h"

namespace winfer {

// `conv` as the whole layer (any batch); `pool` pools its output (pool.batch, channels, in_h
// and in_w match conv's output). The bands are chosen from these and the sizing alone: as many
// pooled rows as keep a band's convolution rows within the band bytes (at least one), or the
// more the algorithm asks for (ConvAlgorithm::band_rows); lanes for up to sizing.threads.
class ConvPool {
 public:
  ConvPool(const ConvAlgorithm& algorithm, const ConvParams& conv, const PoolParams& pool, BandSizing sizing);

  // Band buffer plus the largest workspace the algorithm needs for any band.
  size_t workspace_bytes() const { return bands_.workspace_bytes(); }
  // output (NHWC, pooled) = maxpool(act(conv(input) + bias)).
  void run(const float* input_nhwc, const float* packed, const float* bias, float* output_nhwc, void* workspace,
           Activation act, int threads) const;

 private:
  PoolParams pool_;
  ConvBands bands_;
};

}  // namespace winfer
