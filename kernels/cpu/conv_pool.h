// A convolution followed by max pooling (VGG's conv -> relu -> pool, ResNet's stem), computed
// band by band so that the convolution's full output never exists: the largest tensor of
// these networks (VGG16's conv1_2 output: 12.8 MB per image) becomes a band of a few rows in
// the workspace, and the pooling reads it while it is in cache.
//
// For each image, pooled rows are taken in groups; the convolution rows the group's windows
// need are computed by the algorithm itself on a sub-problem (the input rows they read, with
// the padding that falls inside the band), into the band buffer, and max-pooled from there.
// Rows that two groups share (pooling windows overlap when kernel > stride) are computed once:
// they move to the top of the buffer for the next group. Every convolution row is computed
// exactly once, by the same algorithm, reading the same taps.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/pooling.h"

namespace winfer {

// `conv` as the whole layer (any batch); `pool` pools its output (pool.batch, channels, in_h
// and in_w match conv's output). The bands are chosen from these alone: as many pooled rows
// as keep a band's convolution rows within band_bytes (at least one).
class ConvPool {
 public:
  static constexpr int64_t kDefaultBandBytes = 1 << 20;  // stays in L2 from the write to the read
  ConvPool(const ConvAlgorithm& algorithm, const ConvParams& conv, const PoolParams& pool,
           int64_t band_bytes = kDefaultBandBytes);

  // Band buffer plus the largest workspace the algorithm needs for any band.
  size_t workspace_bytes() const { return (band_floats_ + conv_workspace_floats_) * sizeof(float); }
  // output (NHWC, pooled) = maxpool(act(conv(input) + bias)).
  void run(const float* input_nhwc, const float* packed, const float* bias, float* output_nhwc, void* workspace,
           Activation act, int threads) const;

 private:
  // One group of pooled rows [ph0, ph1): its convolution rows are [r0, r1), of which [r0, kept)
  // are still in the buffer from the previous group.
  struct Band {
    int64_t ph0, ph1, r0, kept, r1;
  };
  template <class F>
  void for_each_band(F f) const;
  // The convolution of output rows [a, b) of one image as a problem of its own.
  ConvParams rows_problem(int64_t a, int64_t b) const;

  const ConvAlgorithm& algorithm_;
  ConvParams conv_;
  PoolParams pool_;
  int64_t pooled_rows_per_band_ = 1;
  size_t band_floats_ = 0, conv_workspace_floats_ = 0;
};

}  // namespace winfer
