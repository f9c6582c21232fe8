#include "engine/src/fusion.h"

#include <algorithm>

namespace winfer {
namespace {

bool is_graph_output(const Graph& graph, int t) {
  return std::find(graph.outputs.begin(), graph.outputs.end(), t) != graph.outputs.end();
}

// The node that alone reads node `n`'s only output, or -1. The output must not be a graph
// output (fusing would make it disappear).
int only_reader(const Graph& graph, int n) {
  const GraphNode& node = graph.nodes[n];
  if (node.outputs.size() != 1 || is_graph_output(graph, node.outputs[0])) return -1;
  const GraphTensor& tensor = graph.tensors[node.outputs[0]];
  return tensor.consumers.size() == 1 ? tensor.consumers[0] : -1;
}

// The node that alone reads node `n`'s only output and nothing else, or -1.
int sole_consumer(const Graph& graph, int n) {
  const int consumer = only_reader(graph, n);
  return consumer >= 0 && graph.nodes[consumer].inputs.size() == 1 ? consumer : -1;
}

// The two-input node that alone reads node `n`'s only output and whose other input (returned in
// *other) is produced before node n (or is the graph input), or -1. Node n can then take that
// input over and stay where it is in the topological order: of the two producers of an add,
// the one that runs last absorbs it (in a ResNet downsampling block, the shortcut's convolution
// when the file lists it after the main branch).
int residual_consumer(const Graph& graph, int n, int* other) {
  const int consumer = only_reader(graph, n);
  if (consumer < 0 || graph.nodes[consumer].inputs.size() != 2) return -1;
  const std::vector<int>& in = graph.nodes[consumer].inputs;
  const int mine = graph.nodes[n].outputs[0];
  const int candidate = in[0] == mine ? in[1] : in[0];
  if (candidate == mine || graph.tensors[candidate].producer >= n) return -1;
  *other = candidate;
  return consumer;
}

// Node n takes over node `next`'s outputs and display names; `next` is removed.
void absorb(Graph& graph, int n, int next) {
  GraphNode& node = graph.nodes[n];
  const Op& absorbed = *graph.nodes[next].op;
  node.op->record_fused(graph.nodes[next].name, absorbed.param_count() + absorbed.fused_param_count());
  for (const std::string& name : absorbed.fused_names()) node.op->record_fused(name, 0);
  node.outputs = graph.nodes[next].outputs;
  graph.nodes.erase(graph.nodes.begin() + next);  // next > n: topological order
  graph.link();
}

// One absorption into node n (a single-input consumer, else a residual add); false when none.
bool absorb_one(Graph& graph, int n) {
  const int next = sole_consumer(graph, n);
  if (next >= 0) {
    if (!graph.nodes[n].op->try_absorb(*graph.nodes[next].op)) return false;
    absorb(graph, n, next);
    return true;
  }
  int residual = -1;
  const int add = residual_consumer(graph, n, &residual);
  if (add < 0 || !graph.nodes[n].op->try_absorb_residual(*graph.nodes[add].op)) return false;
  graph.nodes[n].inputs.push_back(residual);
  absorb(graph, n, add);
  return true;
}

}  // namespace

int fuse_graph(Graph& graph) {
  graph.link();
  int removed = 0;
  for (int n = 0; n < static_cast<int>(graph.nodes.size()); ++n) {
    // Absorb as long as possible: conv <- bn <- add <- relu is three steps.
    while (absorb_one(graph, n)) ++removed;
  }
  return removed;
}

}  // namespace winfer
