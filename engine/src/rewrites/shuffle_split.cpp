// shuffle_split: channel_shuffle <- split, ShuffleNetV2's unit boundary (the shuffle that ends a
// unit and the split of its output that starts the next): the shuffle writes each split piece
// straight from its input (ChannelShuffleOp::absorb_split, kernels/cpu/channel_ops.h,
// channel_shuffle_split_nhwc), so that the shuffled tensor is never stored and read back. The
// two passes took 1.6 ms of 22 at batch 8 on one thread (docs/PERFORMANCE.md, session 41).
//
// Pattern: the split alone reads the shuffle's only output, as its only input (sole_consumer);
// the shuffle takes over the split's outputs.
// Conditions:
// - the shuffle has not absorbed a split already (ChannelShuffleOp::absorb_split refuses);
// - the split's outputs have known channel counts (the graph's shapes; channels do not depend
//   on the input's size), each at least 1.
#include "engine/src/rewrites/rules.h"
#include "layers/channel_shuffle.h"

namespace winfer {
namespace {

class ShuffleSplit : public RewriteRule {
 public:
  const char* name() const override { return "shuffle_split"; }
  bool apply(Graph& graph, int n) const override {
    auto* shuffle = dynamic_cast<ChannelShuffleOp*>(graph.nodes[n].op.get());
    if (shuffle == nullptr) return false;
    const int next = sole_consumer(graph, n);
    if (next < 0 || graph.nodes[next].type != "split") return false;
    std::vector<int64_t> pieces;
    for (int t : graph.nodes[next].outputs) {
      const Shape& shape = graph.tensors[t].shape;
      if (shape.rank() != 4) return false;
      pieces.push_back(shape.c());
    }
    if (!shuffle->absorb_split(std::move(pieces))) return false;
    absorb_node(graph, n, next);
    return true;
  }
};

}  // namespace

const RewriteRule& shuffle_split_rule() {
  static const ShuffleSplit rule;
  return rule;
}

}  // namespace winfer
