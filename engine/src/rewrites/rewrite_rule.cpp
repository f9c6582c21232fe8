#include "engine/src/rewrites/rewrite_rule.h"

#include <algorithm>

namespace winfer {
namespace {

bool is_graph_output(const Graph& graph, int t) {
  return std::find(graph.outputs.begin(), graph.outputs.end(), t) != graph.outputs.end();
}

}  // namespace

int only_reader(const Graph& graph, int n) {
  const GraphNode& node = graph.nodes[n];
  if (node.outputs.size() != 1 || is_graph_output(graph, node.outputs[0])) return -1;
  const GraphTensor& tensor = graph.tensors[node.outputs[0]];
  return tensor.consumers.size() == 1 ? tensor.consumers[0] : -1;
}

int sole_consumer(const Graph& graph, int n) {
  const int consumer = only_reader(graph, n);
  return consumer >= 0 && graph.nodes[consumer].inputs.size() == 1 ? consumer : -1;
}

void absorb_node(Graph& graph, int n, int next) {
  GraphNode& node = graph.nodes[n];
  const Op& absorbed = *graph.nodes[next].op;
  node.op->record_fused(graph.nodes[next].name, absorbed.param_count() + absorbed.fused_param_count());
  for (const std::string& name : absorbed.fused_names()) node.op->record_fused(name, 0);
  node.outputs = graph.nodes[next].outputs;
  graph.nodes.erase(graph.nodes.begin() + next);
  graph.link();
}

bool AbsorbConsumerRule::apply(Graph& graph, int n) const {
  const int next = sole_consumer(graph, n);
  if (next < 0 || !absorb(*graph.nodes[n].op, *graph.nodes[next].op)) return false;
  absorb_node(graph, n, next);
  return true;
}

}  // namespace winfer
