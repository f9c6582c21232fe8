#include "kernels/cpu/conv_params.h"

namespace winfer {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kRelu6: return "relu6";
  }
  return "?";
}

std::string ConvParams::to_string() const {
  auto s = [](int64_t v) { return std::to_string(v); };
  return "N" + s(batch) + " C" + s(in_channels) + " H" + s(in_h) + " W" + s(in_w) + " -> Co" +
         s(out_channels) + " k" + s(kernel_h) + "x" + s(kernel_w) + " s" + s(stride_h) + "x" +
         s(stride_w) + " p" + s(pad_top) + "," + s(pad_left) + "," + s(pad_bottom) + "," +
         s(pad_right) + " d" + s(dilation_h) + "x" + s(dilation_w) + " g" + s(groups);
}

}  // namespace winfer
