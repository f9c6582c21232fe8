// concat: PyTorch torch.cat along dim 1 (channels of NCHW, features of [N,F]). All inputs
// have the same rank and agree on every other dim.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_concat(const Attrs& attrs);

}  // namespace winfer
