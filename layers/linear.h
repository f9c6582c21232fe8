// linear: PyTorch nn.Linear on [N, in_features] -> [N, out_features]; weight [out, in],
// optional bias [out]. Absorbs a following relu/relu6 (fused into the kernel's epilogue).
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_linear(const Attrs& attrs);

}  // namespace winfer
