// identity and dropout: both pass their input through unchanged (dropout is the identity at
// inference; its `p` is validated and otherwise ignored). One file because they are one op
// with two names.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_identity(const Attrs& attrs);
// dropout: p (default 0.5), in [0, 1).
Result<std::unique_ptr<Op>> create_dropout(const Attrs& attrs);

}  // namespace winfer
