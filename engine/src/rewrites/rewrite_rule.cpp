#include "engine/src/rewrites/rewrite_rule.h"

#include <algorithm>
#include <string>
#include <utility>

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

void absorb_producer(Graph& graph, int n, int reader) {
  GraphNode& node = graph.nodes[n];
  GraphNode& absorbing = graph.nodes[reader];
  absorbing.op->record_fused(node.name, 0);
  for (const std::string& fused : node.op->fused_names()) absorbing.op->record_fused(fused, 0);
  node.name = absorbing.name;
  node.type = absorbing.type;
  node.op = std::move(absorbing.op);
  node.param_prefix = absorbing.param_prefix;
  node.line = absorbing.line;
  node.outputs = absorbing.outputs;
  graph.nodes.erase(graph.nodes.begin() + reader);
  graph.link();
}

bool AbsorbConsumerRule::apply(Graph& graph, int n) const {
  const int next = sole_consumer(graph, n);
  if (next < 0 || !absorb(*graph.nodes[n].op, *graph.nodes[next].op)) return false;
  absorb_node(graph, n, next);
  return true;
}

}  // namespace winfer
