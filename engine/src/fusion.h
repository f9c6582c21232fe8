// The fusion pass: load-time graph rewrites, one rule per file in engine/src/rewrites/
// (rules.h lists them), applied by fuse_graph in a fixed order. ModelLoader calls it after the
// parameters are loaded and before the weights are packed, unless LoadOptions::fuse is false
// (--no-fuse) or the model has no weights; dead tensors are dropped after it
// (Graph::remove_dead_tensors). docs/ARCHITECTURE.md, loading step 6, describes every fusion.
#pragma once

#include <functional>

#include "engine/src/graph.h"

namespace winfer {

struct FusionOptions {
  // false: no pointwise -> depthwise fusion (quantized models, whose tensor between the two is
  // rounded to u8).
  bool conv_pairs = true;
  // false: no channel scale (a mul) fused into the convolution after it (rule
  // channel_scale_conv): quantized models, whose INT8 convolutions scale no input.
  bool channel_scale = true;
  // Layers that absorb no element-wise function (sigmoid, hardswish, ...; rule conv_pointwise):
  // a quantized model's INT8 layers, whose kernels apply none. The function then stays a float32
  // layer after the layer's dequantized output. Null: none.
  std::function<bool(const GraphNode&)> no_pointwise;
};

// Rewrites the graph; returns the number of nodes removed.
int fuse_graph(Graph& graph, const FusionOptions& options = {});

// The rules whose pattern is a node and the node that alone reads its output, applied to two ops
// outside a graph, in the pass's order: true when one folded `consumer` into `producer` (what
// the pass does where `consumer` alone reads `producer`'s only output). For the layer tests.
bool fuse_pair(Op& producer, const Op& consumer);

}  // namespace winfer
