// Plain description of one 2-D convolution: the vocabulary shared by every algorithm of every
// backend (kernels/cpu, kernels/cuda), the layers and the bench. Free of graph types on purpose:
// kernels see only this struct and raw pointers. Every convolution has an epilogue activation,
// so this header brings Activation along.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/common/activation.h"

namespace winfer {

struct ConvParams {
  int64_t batch = 1;
  int64_t in_channels = 0, in_h = 0, in_w = 0;
  int64_t out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  // Floats from one output pixel to the next: 0 (the default) means out_channels, a dense NHWC
  // output. More: the output is a channel slice of a wider tensor, e.g. a concat's output that
  // its producers write in place (each pixel row holds out_pixel_stride floats, this
  // convolution's channels first). Honoured only by algorithms whose supports_output_stride()
  // is true, and only without a residual; no weight layout or workspace depends on it.
  int64_t out_pixel_stride = 0;

  int64_t out_stride() const { return out_pixel_stride > 0 ? out_pixel_stride : out_channels; }
  int64_t out_h() const { return (in_h + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1; }
  int64_t out_w() const { return (in_w + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1; }
  int64_t in_channels_per_group() const { return in_channels / groups; }
  int64_t out_channels_per_group() const { return out_channels / groups; }
  bool is_depthwise() const { return groups > 1 && groups == in_channels && groups == out_channels; }
  // Multiply-adds x 2.
  int64_t flops() const {
    return 2 * batch * out_h() * out_w() * out_channels * in_channels_per_group() * kernel_h * kernel_w;
  }
  std::string to_string() const;  // "N1 C3 H32 W32 -> Co8 k3x3 s1x1 p1,1,1,1 d1x1 g1"
  // Every size positive (padding >= 0), channels divisible by groups, output at least 1x1.
  // Algorithms' supports() return false for invalid params.
  bool is_valid() const;
};

}  // namespace winfer
