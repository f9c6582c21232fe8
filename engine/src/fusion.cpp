#include "engine/src/fusion.h"

#include <algorithm>

namespace winfer {
namespace {

// The node that alone reads node `n`'s only output, or -1.
int sole_consumer(const Graph& graph, int n) {
  const GraphNode& node = graph.nodes[n];
  if (node.outputs.size() != 1) return -1;
  const int t = node.outputs[0];
  if (std::find(graph.outputs.begin(), graph.outputs.end(), t) != graph.outputs.end()) return -1;
  const GraphTensor& tensor = graph.tensors[t];
  if (tensor.consumers.size() != 1) return -1;
  const int consumer = tensor.consumers[0];
  return graph.nodes[consumer].inputs.size() == 1 ? consumer : -1;
}

}  // namespace

int fuse_graph(Graph& graph) {
  graph.link();
  int removed = 0;
  for (int n = 0; n < static_cast<int>(graph.nodes.size()); ++n) {
    // Absorb as long as possible: conv <- bn <- relu is two steps.
    for (int next = sole_consumer(graph, n); next >= 0; next = sole_consumer(graph, n)) {
      GraphNode& node = graph.nodes[n];
      if (!node.op->try_absorb(*graph.nodes[next].op)) break;
      node.op->record_fused(graph.nodes[next].name, graph.nodes[next].op->param_count());
      node.outputs = graph.nodes[next].outputs;
      graph.nodes.erase(graph.nodes.begin() + next);  // next > n: topological order
      graph.link();
      ++removed;
    }
  }
  return removed;
}

}  // namespace winfer
