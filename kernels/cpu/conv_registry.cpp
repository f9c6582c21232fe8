// The list of CPU convolution algorithms. The order is fixed (it is the order `auto` tries and
// `winfer plan` prints); new algorithms (im2win, indirect) are appended here.
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/conv_indirect.h"

namespace winfer {

const std::vector<const ConvAlgorithm*>& conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> algorithms = {
      &cpu::direct_conv_algorithm(), &cpu::im2col_conv_algorithm(),   &cpu::depthwise_conv_algorithm(),
      &cpu::im2win_conv_algorithm(), &cpu::indirect_conv_algorithm(), &cpu::winograd_conv_algorithm(),
  };
  return algorithms;
}

const ConvAlgorithm* find_conv_algorithm(std::string_view name) {
  for (const ConvAlgorithm* a : conv_algorithms())
    if (name == a->name()) return a;
  return nullptr;
}

const std::vector<const ConvAlgorithm*>& selectable_conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> selectable = [] {
    std::vector<const ConvAlgorithm*> out;
    for (const ConvAlgorithm* a : conv_algorithms())
      if (a->user_selectable()) out.push_back(a);
    return out;
  }();
  return selectable;
}

}  // namespace winfer
