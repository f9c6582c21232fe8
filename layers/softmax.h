// softmax: PyTorch nn.Softmax(dim=1) over the channels of [N,C] or [N,C,H,W] (numerically
// stable: the row maximum is subtracted first).
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_softmax(const Attrs& attrs);

}  // namespace winfer
