// flatten: PyTorch nn.Flatten(start_dim=1): [N,C,H,W] -> [N, C*H*W] in NCHW element order
// (so a following linear layer sees PyTorch's feature order). A 2-D input is copied as is.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_flatten(const Attrs& attrs);

}  // namespace winfer
