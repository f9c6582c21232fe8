// adaptive_avgpool2d: PyTorch nn.AdaptiveAvgPool2d(output_size); output_size is an int or
// [h, w] (None entries are not supported). Bin i spans [floor(i*H/Ho), ceil((i+1)*H/Ho)).
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_adaptive_avgpool2d(const Attrs& attrs);

}  // namespace winfer
