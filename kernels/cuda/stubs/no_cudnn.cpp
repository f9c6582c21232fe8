// Builds without cuDNN (the emulator, or a toolkit without it) have no "cudnn" algorithm.
#include "kernels/cuda/conv_internal.h"

namespace winfer {
namespace cuda {

const ConvAlgorithm* cudnn_conv_algorithm() { return nullptr; }

}  // namespace cuda
}  // namespace winfer
