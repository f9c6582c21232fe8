// maxpool2d: PyTorch nn.MaxPool2d (kernel_size, stride = kernel_size, symmetric padding,
// dilation, ceil_mode). Padding never wins the max: the window covers only in-bounds taps.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_maxpool2d(const Attrs& attrs);

}  // namespace winfer
