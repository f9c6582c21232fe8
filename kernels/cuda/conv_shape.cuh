// ConvParams as the kernels see it (device code; include from .cu files only): ConvParams' member
// functions are host code, so the derived sizes are computed once on the host and passed by value.
#pragma once

#include <cstdint>

#include "kernels/common/conv_params.h"
#include "kernels/cuda/runtime.h"

namespace winfer {
namespace cuda {

struct ConvShape {
  int64_t batch, in_c, in_h, in_w;
  int64_t out_c, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  int64_t groups, cg, cog;  // channels per group, in and out
  int64_t window_w;         // im2win: columns of the window tensor, (Wo-1)*sw + (Kw-1)*dw + 1
};

inline ConvShape make_conv_shape(const ConvParams& p) {
  ConvShape s;
  s.batch = p.batch;
  s.in_c = p.in_channels;
  s.in_h = p.in_h;
  s.in_w = p.in_w;
  s.out_c = p.out_channels;
  s.out_h = p.out_h();
  s.out_w = p.out_w();
  s.kernel_h = p.kernel_h;
  s.kernel_w = p.kernel_w;
  s.stride_h = p.stride_h;
  s.stride_w = p.stride_w;
  s.pad_top = p.pad_top;
  s.pad_left = p.pad_left;
  s.dilation_h = p.dilation_h;
  s.dilation_w = p.dilation_w;
  s.groups = p.groups;
  s.cg = p.in_channels_per_group();
  s.cog = p.out_channels_per_group();
  s.window_w = (s.out_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1;
  return s;
}

// Output pixel index m = (n*Ho + oh)*Wo + ow, split.
struct Pixel {
  int64_t n, oh, ow;
};
__host__ __device__ __forceinline__ Pixel split_pixel(const ConvShape& s, int64_t m) {
  Pixel px;
  px.ow = m % s.out_w;
  const int64_t rest = m / s.out_w;
  px.oh = rest % s.out_h;
  px.n = rest / s.out_h;
  return px;
}

}  // namespace cuda
}  // namespace winfer
