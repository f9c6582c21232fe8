// Load-time graph rewrites: the fusions, one rule per file in this folder, applied in order by
// one driver (fuse_graph, engine/src/fusion.cpp). ONNX Runtime's RewriteRule is the model
// (onnxruntime/core/optimizer/rewrite_rule.h, conv_bn_fusion.cc): a rule is tried at a node,
// matches its pattern through the graph's producer/consumer links, checks its conditions and
// rewrites the graph. Rules are where the knowledge of two ops meets: they dynamic_cast to the
// ops' classes and call the ops' typed mutators (Conv2dOp::fold_batchnorm, ...), which refuse
// what the op's kernel cannot compute; no op includes another op's header for fusion.
//
// How to add a rule: docs/ARCHITECTURE.md, "How to add a fusion rule".
#pragma once

#include "engine/src/graph.h"

namespace winfer {

class RewriteRule {
 public:
  virtual ~RewriteRule() = default;
  // The rule's file name, e.g. "conv_batchnorm".
  virtual const char* name() const = 0;
  // Tries the rule with node n as the root of its pattern (the node the others are folded
  // into). True when it rewrote the graph, false (graph unchanged) when the pattern or a
  // condition does not hold. A rewrite keeps node n at index n and every node before it
  // unchanged, and leaves the producer/consumer links up to date (Graph::link): the driver
  // relies on both. A rule that replaces several nodes by one (the ONNX importer's patterns,
  // e.g. reshape -> transpose -> reshape as channel_shuffle) implements this directly.
  virtual bool apply(Graph& graph, int n) const = 0;
};

// The pattern of most fusions: node n and the node that alone reads n's only output and has no
// other input; n absorbs it (conv <- batchnorm2d, conv <- maxpool2d, linear <- relu, ...). The
// graph's conditions are this class's (sole_consumer below); a rule only checks the two ops.
class AbsorbConsumerRule : public RewriteRule {
 public:
  bool apply(Graph& graph, int n) const final;
  // The rule's conditions on the two ops; when they hold, mutates `producer` so that it
  // computes consumer(producer(x)) and returns true (the consumer node is then removed). False:
  // neither op changed. Also what fuse_pair (engine/src/fusion.h) calls, outside a graph.
  virtual bool absorb(Op& producer, const Op& consumer) const = 0;
};

// The node that alone reads node n's only output, or -1. That output must not be a graph output:
// fusing its producer and consumer would make it disappear.
int only_reader(const Graph& graph, int n);
// only_reader, when that node has no other input (so it can run as part of node n), else -1.
int sole_consumer(const Graph& graph, int n);
// Node n takes over node `next`'s outputs and records next's display name and the names it had
// absorbed, with their parameters (so that totals stay PyTorch's); `next` (> n: topological
// order) is removed and the links recomputed.
void absorb_node(Graph& graph, int n, int next);
// The other direction: node `reader` (> n), which alone reads node n's output, takes node n's
// place and its inputs, keeping its own op, name and outputs, and records n's display name and
// what n had absorbed (no parameters: the absorbing op's mutator took what it needed); node n's
// op is dropped, `reader` removed and the links recomputed (rule channel_scale_conv: the
// convolution takes the mul's place and inputs, x and the scale).
void absorb_producer(Graph& graph, int n, int reader);

}  // namespace winfer
