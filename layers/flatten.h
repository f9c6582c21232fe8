// flatten: PyTorch nn.Flatten(start_dim=1): [N,C,H,W] -> [N, C*H*W] in NCHW element order
// (so a following linear layer sees PyTorch's feature order). A 2-D input is copied as is.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_flatten(const Attrs& attrs);

// Whether flattening `input` moves elements: a 4-D input is stored NHWC, and its flat PyTorch
// order is NCHW. Both orders coincide for a single pixel (the usual case, after global pooling)
// or a single channel; then flatten is a plain copy (or nothing, in place).
bool flatten_needs_reorder(const Shape& input);

}  // namespace winfer
