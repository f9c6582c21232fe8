#include "engine/src/session_plan.h"

#include <algorithm>
#include <string>

namespace winfer {
namespace {

size_t bytes_of(const Shape& shape) { return static_cast<size_t>(shape.numel()) * sizeof(float); }

bool contains(const std::vector<int>& values, int value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// The planner's view of a session: one buffer per graph tensor (same index), then one per
// convolution workspace.
struct BufferList {
  std::vector<PlanBuffer> plan;
  std::vector<MemoryBuffer> info;  // names and kinds, for the report
  std::vector<int> workspace_of;   // per node: its workspace buffer, or -1
};

// Lifetimes of the graph tensors. The session writes the graph input before step 0 and reads
// the outputs after the last step, so the input is pinned from step 0 and every output until
// the last step: nothing else may be placed over them while the user's data is in them.
void add_tensor_buffers(const Graph& graph, const std::vector<Shape>& shapes, BufferList* list) {
  const int last_step = std::max(0, static_cast<int>(graph.nodes.size()) - 1);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const GraphTensor& tensor = graph.tensors[t];
    PlanBuffer b;
    b.bytes = bytes_of(shapes[t]);
    b.first_step = std::max(tensor.producer, 0);
    b.last_step = b.first_step;
    for (int consumer : tensor.consumers) b.last_step = std::max(b.last_step, consumer);
    if (contains(graph.outputs, static_cast<int>(t))) b.last_step = last_step;
    list->plan.push_back(b);
    MemoryBuffer info;
    info.name = tensor.name;
    info.bytes = b.bytes;
    list->info.push_back(info);
  }
}

// In place: a node writes its output over an input of the same size that is read for the last
// time by this node: any input where the op allows it for every kernel, or the one its kernel
// names (KernelMemory::in_place_input). The graph input stays untouched (it holds the user's
// data for the whole of its lifetime) and so do outputs (the user reads them after the run).
void add_in_place_aliases(const Graph& graph, const std::vector<Shape>& shapes,
                          const std::vector<KernelMemory>& kernels, BufferList* list) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const GraphNode& node = graph.nodes[n];
    if (node.outputs.size() != 1) continue;
    std::vector<Shape> in;
    for (int t : node.inputs) in.push_back(shapes[t]);
    std::vector<int> candidates;
    if (node.op->can_run_in_place(in)) {
      candidates = node.inputs;
    } else if (kernels[n].in_place_input >= 0 && kernels[n].in_place_input < static_cast<int>(node.inputs.size())) {
      // The kernel may overwrite this input as it writes its output (a fused residual, read
      // element by element just before the store), but not when the node reads the same tensor
      // through another input too: add(conv(y), y) would overwrite y while the convolution
      // still reads it.
      const int t = node.inputs[kernels[n].in_place_input];
      if (std::count(node.inputs.begin(), node.inputs.end(), t) == 1) candidates = {t};
    }
    const int out = node.outputs[0];
    for (int t : candidates) {
      const PlanBuffer& candidate = list->plan[t];
      const bool eligible = t != graph.input && !contains(graph.outputs, t) &&
                            candidate.last_step == static_cast<int>(n) && candidate.bytes == list->plan[out].bytes;
      if (!eligible) continue;
      list->plan[out].alias_of = t;
      list->info[out].in_place_of = graph.tensors[t].name;
      break;
    }
  }
}

void add_workspace_buffers(const Graph& graph, const std::vector<KernelMemory>& kernels, BufferList* list) {
  list->workspace_of.assign(graph.nodes.size(), -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const size_t bytes = kernels[n].workspace_bytes;
    if (bytes == 0) continue;
    list->workspace_of[n] = static_cast<int>(list->plan.size());
    PlanBuffer b;
    b.bytes = bytes;
    b.first_step = b.last_step = static_cast<int>(n);
    list->plan.push_back(b);
    MemoryBuffer info;
    info.name = graph.nodes[n].name + " workspace";
    info.workspace = true;
    info.bytes = bytes;
    list->info.push_back(info);
  }
}

}  // namespace

Result<SessionPlan> plan_session_memory(const Model& model, const std::vector<Shape>& shapes,
                                        const std::vector<KernelMemory>& kernels, size_t alignment) {
  const Graph& graph = model.graph();
  BufferList buffers;
  add_tensor_buffers(graph, shapes, &buffers);
  add_in_place_aliases(graph, shapes, kernels, &buffers);
  add_workspace_buffers(graph, kernels, &buffers);
  auto plan = plan_memory(buffers.plan, alignment);
  if (!plan.ok()) return internal_error("memory plan: " + plan.status().message());

  SessionPlan result;
  result.workspace_of = buffers.workspace_of;
  MemoryReport& report = result.report;
  report.weights_bytes = model.weight_bytes();
  for (const KernelMemory& kernel : kernels) {
    report.packed_weights_bytes += kernel.owned_weight_bytes + kernel.shared_weight_bytes;
    report.session_weights_bytes += kernel.owned_weight_bytes;
    report.max_workspace_bytes = std::max(report.max_workspace_bytes, kernel.workspace_bytes);
  }
  report.activations_sum_bytes = plan.value().sum_bytes;
  report.activations_lower_bound_bytes = plan.value().lower_bound_bytes;
  report.arena_bytes = plan.value().arena_bytes;
  report.alignment = alignment;
  for (const GraphNode& node : graph.nodes) report.steps.push_back(node.name);
  report.buffers = buffers.info;
  for (size_t i = 0; i < report.buffers.size(); ++i) {
    MemoryBuffer& b = report.buffers[i];
    b.offset = plan.value().offsets[i];
    b.first_step = buffers.plan[i].first_step;
    b.last_step = buffers.plan[i].last_step;
    if (!b.in_place_of.empty()) ++report.in_place_layers;
  }
  return result;
}

std::vector<std::vector<std::pair<size_t, size_t>>> dead_ranges_per_step(const MemoryReport& report) {
  std::vector<std::vector<std::pair<size_t, size_t>>> dead(report.steps.size());
  for (size_t s = 0; s < dead.size(); ++s) {
    std::vector<std::pair<size_t, size_t>> live;
    for (const MemoryBuffer& b : report.buffers) {
      const int step = static_cast<int>(s);
      if (b.bytes > 0 && b.first_step <= step && step <= b.last_step) live.emplace_back(b.offset, b.offset + b.bytes);
    }
    std::sort(live.begin(), live.end());
    size_t cursor = 0;
    for (const auto& [begin, end] : live) {
      if (begin > cursor) dead[s].emplace_back(cursor, begin);
      cursor = std::max(cursor, end);
    }
    if (cursor < report.arena_bytes) dead[s].emplace_back(cursor, report.arena_bytes);
  }
  return dead;
}

}  // namespace winfer
