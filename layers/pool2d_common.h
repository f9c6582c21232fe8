// Attribute parsing and shape rules shared by maxpool2d and avgpool2d (PyTorch MaxPool2d /
// AvgPool2d): kernel_size, stride (defaults to kernel_size), symmetric padding, dilation
// (max pooling only) and ceil_mode.
#pragma once

#include <cstdint>

#include "engine/src/attrs.h"
#include "kernels/common/pool_params.h"
#include "winfer/shape.h"
#include "winfer/status.h"

namespace winfer {

struct Pool2dAttrs {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // symmetric: the same on both sides
  int64_t dilation_h = 1, dilation_w = 1;
  bool ceil_mode = false;
};

// Reads and validates the shared attributes; `dilation` only when with_dilation (AvgPool2d
// has none, so the key stays unread and the loader reports it as unknown).
Status read_pool2d_attrs(const Attrs& attrs, bool with_dilation, Pool2dAttrs* out);

// [N,C,Ho,Wo] for a 4-D input, or an error naming the input shape when the window does not fit.
Status pool2d_output_shape(const Pool2dAttrs& a, const Shape& input, Shape* output);

// The kernel's description of one pooling (input and output shapes are NCHW).
PoolParams pool2d_params(const Pool2dAttrs& a, const Shape& input, const Shape& output);

}  // namespace winfer
