// Load-time graph rewrites: a node absorbs the single consumer of its single output when its
// op agrees (conv <- batchnorm2d folded into the weights; conv/add/linear/batchnorm <- relu or
// relu6 fused into the epilogue; conv <- add, the add's other operand becoming the conv's
// residual input, when that operand is produced before the conv). Graph outputs are never fused
// away.
#pragma once

#include "engine/src/graph.h"

namespace winfer {

// Returns the number of nodes removed.
int fuse_graph(Graph& graph);

}  // namespace winfer
