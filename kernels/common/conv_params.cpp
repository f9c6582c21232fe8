#include "kernels/common/conv_params.h"

namespace winfer {

std::string ConvParams::to_string() const {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "N" + s(batch) + " C" + s(in_channels) + " H" + s(in_h) + " W" + s(in_w) + " -> Co" + s(out_channels) + " k" +
         s(kernel_h) + "x" + s(kernel_w) + " s" + s(stride_h) + "x" + s(stride_w) + " p" + s(pad_top) + "," +
         s(pad_left) + "," + s(pad_bottom) + "," + s(pad_right) + " d" + s(dilation_h) + "x" + s(dilation_w) + " g" +
         s(groups);
}

bool ConvParams::is_valid() const {
  if (batch < 1 || in_channels < 1 || in_h < 1 || in_w < 1 || out_channels < 1) return false;
  if (kernel_h < 1 || kernel_w < 1 || stride_h < 1 || stride_w < 1) return false;
  if (dilation_h < 1 || dilation_w < 1 || groups < 1) return false;
  if (pad_top < 0 || pad_left < 0 || pad_bottom < 0 || pad_right < 0) return false;
  if (in_channels % groups != 0 || out_channels % groups != 0) return false;
  if (out_pixel_stride != 0 && out_pixel_stride < out_channels) return false;
  // Checked directly: out_h() rounds a small negative numerator towards zero.
  return in_h + pad_top + pad_bottom >= dilation_h * (kernel_h - 1) + 1 &&
         in_w + pad_left + pad_right >= dilation_w * (kernel_w - 1) + 1;
}

}  // namespace winfer
