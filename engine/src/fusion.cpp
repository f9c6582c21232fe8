#include "engine/src/fusion.h"

#include "engine/src/rewrites/rules.h"

namespace winfer {
namespace {

// The order in which the pass tries the rules at a node; the first that applies wins. No two
// patterns match the same nodes (each is told apart by its ops' types: conv2d <- batchnorm2d,
// layer <- relu/relu6, conv2d <- sigmoid/silu/..., conv2d <- maxpool2d, conv2d <- conv2d, conv2d <- add, the only
// one whose consumer has two inputs, mul -> conv2d, the only one rooted at a mul, and channel_shuffle <- split, the
// only one rooted at a shuffle), so the order changes no result;
// it is the order in which the layers come in a block (conv, bn, relu, then pooling, a depthwise convolution or an
// add).
const std::vector<const AbsorbConsumerRule*>& consumer_rules() {
  static const std::vector<const AbsorbConsumerRule*> rules = {&conv_batchnorm_rule(), &activation_epilogue_rule(),
                                                               &conv_pointwise_rule(), &conv_maxpool_rule(),
                                                               &pointwise_depthwise_rule()};
  return rules;
}

const std::vector<const RewriteRule*>& rules() {
  static const std::vector<const RewriteRule*> all = [] {
    std::vector<const RewriteRule*> list(consumer_rules().begin(), consumer_rules().end());
    list.push_back(&conv_add_rule());
    list.push_back(&channel_scale_conv_rule());
    list.push_back(&shuffle_split_rule());
    return list;
  }();
  return all;
}

bool apply_one(Graph& graph, int n, const FusionOptions& options) {
  for (const RewriteRule* rule : rules()) {
    if (!options.conv_pairs && rule == &pointwise_depthwise_rule()) continue;
    if (!options.channel_scale && rule == &channel_scale_conv_rule()) continue;
    if (options.no_pointwise && rule == &conv_pointwise_rule() && options.no_pointwise(graph.nodes[n])) continue;
    if (rule->apply(graph, n)) return true;
  }
  return false;
}

}  // namespace

int fuse_graph(Graph& graph, const FusionOptions& options) {
  graph.link();
  const size_t nodes = graph.nodes.size();
  for (int n = 0; n < static_cast<int>(graph.nodes.size()); ++n) {
    // Fold into node n as long as a rule applies (conv <- bn <- add <- relu is three steps),
    // then move on: a rewrite leaves the nodes before n as they are, so they are never tried
    // again, and node n's new consumer (the one after what it absorbed) is tried next.
    while (apply_one(graph, n, options)) {
    }
  }
  return static_cast<int>(nodes - graph.nodes.size());
}

bool fuse_pair(Op& producer, const Op& consumer) {
  for (const AbsorbConsumerRule* rule : consumer_rules()) {
    if (rule->absorb(producer, consumer)) return true;
  }
  return false;
}

}  // namespace winfer
