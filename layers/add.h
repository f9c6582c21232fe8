// add: element-wise sum of two tensors of identical shape (no broadcasting), as in a ResNet
// shortcut. Absorbs a following relu/relu6.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_add(const Attrs& attrs);

}  // namespace winfer
