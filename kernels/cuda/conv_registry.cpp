// The list of CUDA convolution algorithms. The order is fixed (the order `auto` will try and
// `winfer plan` prints) and follows the CPU registry's: direct, im2col, depthwise, then im2win and
// the cuDNN comparison.
#include "kernels/cuda/conv_internal.h"

namespace winfer {
namespace cuda {

const std::vector<const ConvAlgorithm*>& conv_algorithms() {
  static const std::vector<const ConvAlgorithm*> algorithms = [] {
    std::vector<const ConvAlgorithm*> list = {&direct_conv_algorithm(), &im2col_conv_algorithm(),
                                              &depthwise_conv_algorithm(), &im2win_conv_algorithm()};
    if (const ConvAlgorithm* cudnn = cudnn_conv_algorithm()) list.push_back(cudnn);
    return list;
  }();
  return algorithms;
}

const ConvAlgorithm* find_conv_algorithm(std::string_view name) {
  for (const ConvAlgorithm* a : conv_algorithms())
    if (name == a->name()) return a;
  return nullptr;
}

}  // namespace cuda
}  // namespace winfer
