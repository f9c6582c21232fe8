#include "layers/pool2d_common.h"

#include <algorithm>
#include <string>
#include <vector>

#include "layers/layer_util.h"

namespace winfer {
namespace {

std::string hw_text(int64_t h, int64_t w) { return "[" + std::to_string(h) + "," + std::to_string(w) + "]"; }

// PyTorch rejects padding wider than half the (undilated) window, which guarantees that
// every window overlaps the input: no output is taken from padding alone.
Status check_padding_fits(const Pool2dAttrs& a) {
  if (a.pad_h <= a.kernel_h / 2 && a.pad_w <= a.kernel_w / 2) return Status::Ok();
  return invalid_argument("attribute 'padding' " + hw_text(a.pad_h, a.pad_w) + " must be at most half of kernel_size " +
                          hw_text(a.kernel_h, a.kernel_w) +
                          " in each dimension (PyTorch requires padding <= kernel_size / 2)");
}

}  // namespace

Status read_pool2d_attrs(const Attrs& attrs, bool with_dilation, Pool2dAttrs* out) {
  Pool2dAttrs a;
  WINFER_RETURN_IF_ERROR(read_hw(attrs, "kernel_size", &a.kernel_h, &a.kernel_w));
  WINFER_RETURN_IF_ERROR(read_hw(attrs, "stride", &a.stride_h, &a.stride_w, a.kernel_h, a.kernel_w));
  // Pooling padding is symmetric in PyTorch: an int or [h, w], never four sides.
  std::vector<int64_t> pad;
  WINFER_RETURN_IF_ERROR(attrs.get_ints("padding", &pad, {1, 2}, {0}));
  a.pad_h = pad[0];
  a.pad_w = pad.size() == 2 ? pad[1] : pad[0];
  if (with_dilation) {
    WINFER_RETURN_IF_ERROR(read_hw(attrs, "dilation", &a.dilation_h, &a.dilation_w, 1, 1));
  }
  WINFER_RETURN_IF_ERROR(attrs.get_bool("ceil_mode", &a.ceil_mode, false));

  WINFER_RETURN_IF_ERROR(expect_at_least("kernel_size", std::min(a.kernel_h, a.kernel_w), 1));
  WINFER_RETURN_IF_ERROR(expect_at_least("stride", std::min(a.stride_h, a.stride_w), 1));
  WINFER_RETURN_IF_ERROR(expect_at_least("padding", std::min(a.pad_h, a.pad_w), 0));
  WINFER_RETURN_IF_ERROR(expect_at_least("dilation", std::min(a.dilation_h, a.dilation_w), 1));
  WINFER_RETURN_IF_ERROR(check_padding_fits(a));
  // Reject absurd sizes before products such as dilation * kernel can overflow.
  const int64_t kLimit = int64_t(1) << 24;
  if (std::max({a.kernel_h, a.kernel_w, a.stride_h, a.stride_w, a.dilation_h, a.dilation_w}) > kLimit) {
    return invalid_argument("pooling attributes must be at most " + std::to_string(kLimit));
  }
  *out = a;
  return Status::Ok();
}

Status pool2d_output_shape(const Pool2dAttrs& a, const Shape& input, Shape* output) {
  WINFER_RETURN_IF_ERROR(expect_rank(input, 4, "input"));
  const int64_t out_h = pooled_extent(input.h(), a.pad_h, a.pad_h, a.kernel_h, a.stride_h, a.dilation_h, a.ceil_mode);
  const int64_t out_w = pooled_extent(input.w(), a.pad_w, a.pad_w, a.kernel_w, a.stride_w, a.dilation_w, a.ceil_mode);
  if (out_h < 1 || out_w < 1) {
    return shape_mismatch("input " + input.to_string() + " is smaller than the pooling window " +
                          std::to_string(a.dilation_h * (a.kernel_h - 1) + 1) + "x" +
                          std::to_string(a.dilation_w * (a.kernel_w - 1) + 1) + " plus padding " +
                          hw_text(a.pad_h, a.pad_w));
  }
  *output = Shape{input.n(), input.c(), out_h, out_w};
  return Status::Ok();
}

PoolParams pool2d_params(const Pool2dAttrs& a, const Shape& input, const Shape& output) {
  PoolParams p;
  p.batch = input.n();
  p.channels = input.c();
  p.in_h = input.h();
  p.in_w = input.w();
  p.out_h = output.h();
  p.out_w = output.w();
  p.kernel_h = a.kernel_h;
  p.kernel_w = a.kernel_w;
  p.stride_h = a.stride_h;
  p.stride_w = a.stride_w;
  p.pad_top = a.pad_h;
  p.pad_left = a.pad_w;
  p.dilation_h = a.dilation_h;
  p.dilation_w = a.dilation_w;
  return p;
}

}  // namespace winfer
