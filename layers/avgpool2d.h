// avgpool2d: PyTorch nn.AvgPool2d (kernel_size, stride = kernel_size, symmetric padding,
// ceil_mode, count_include_pad). divisor_override is not supported.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_avgpool2d(const Attrs& attrs);

}  // namespace winfer
