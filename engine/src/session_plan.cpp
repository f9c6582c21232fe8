#include "engine/src/session_plan.h"

#include <algorithm>
#include <string>
#include <utility>

namespace winfer {
namespace {

size_t bytes_of(const Shape& shape, DType dtype) { return static_cast<size_t>(shape.numel()) * dtype_size(dtype); }

bool contains(const std::vector<int>& values, int value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// The planner's view of a session: one buffer per graph tensor (same index), then one per
// convolution workspace.
struct BufferList {
  std::vector<PlanBuffer> plan;
  std::vector<MemoryBuffer> info;         // names and kinds, for the report
  std::vector<int> workspace_of;          // per node: its workspace buffer, or -1
  std::vector<int> slice_of;              // per tensor: the concat output it is a slice of, or -1
  std::vector<size_t> slice_byte_offset;  // per tensor: where its slice starts in that output
};

// Lifetimes of the graph tensors. The session writes the graph input before step 0 and reads
// the outputs after the last step, so the input is pinned from step 0 and every output until
// the last step: nothing else may be placed over them while the user's data is in them.
void add_tensor_buffers(const Graph& graph, const std::vector<Shape>& shapes, BufferList* list) {
  const int last_step = std::max(0, static_cast<int>(graph.nodes.size()) - 1);
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const GraphTensor& tensor = graph.tensors[t];
    PlanBuffer b;
    b.bytes = bytes_of(shapes[t], tensor.dtype);
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

// Bytes alive at each of `steps` steps, counted as the planner counts them: a buffer with the
// buffers that take it over in place is one block (its largest size, over the union of their
// lifetimes), sizes rounded up to the alignment.
std::vector<size_t> live_per_step(const std::vector<PlanBuffer>& buffers, size_t alignment, int steps) {
  struct Block {
    size_t bytes = 0;
    int first = 0, last = -1;
  };
  std::vector<Block> blocks(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    size_t root = i;
    while (buffers[root].alias_of >= 0) root = static_cast<size_t>(buffers[root].alias_of);
    Block& block = blocks[root];
    const size_t bytes = (buffers[i].bytes + alignment - 1) / alignment * alignment;
    if (block.last < block.first) {
      block = {bytes, buffers[i].first_step, buffers[i].last_step};
    } else {
      block.bytes = std::max(block.bytes, bytes);
      block.first = std::min(block.first, buffers[i].first_step);
      block.last = std::max(block.last, buffers[i].last_step);
    }
  }
  std::vector<long long> delta(static_cast<size_t>(steps) + 1, 0);
  for (const Block& block : blocks) {
    if (block.last < block.first || block.bytes == 0) continue;
    delta[block.first] += static_cast<long long>(block.bytes);
    delta[block.last + 1] -= static_cast<long long>(block.bytes);
  }
  std::vector<size_t> live(static_cast<size_t>(steps), 0);
  long long running = 0;
  for (int s = 0; s < steps; ++s) live[s] = static_cast<size_t>(running += delta[s]);
  return live;
}

// Concat without copies: an input of a concat may become a channel slice of the concat's
// output, written there by its producer with the output's pixel stride, when
//   * the concat is rank 4 (NHWC: a slice is every pixel's channels [c0, c0 + Ci)),
//   * its producer's kernel writes it with a pixel stride (KernelMemory::strided_outputs: a
//     plain convolution of most algorithms, a split),
//   * the concat is its only consumer and takes it once (not concat(x, x), not x read by
//     another layer too, whose kernel would not know the stride),
//   * it is neither the graph input nor a graph output, and shares no storage in place.
// A slice gets no storage of its own (0 bytes for the planner), and the concat output's
// lifetime starts at its earliest producer instead. The concat kernel sees the input in its
// place and copies only the others.
// Whether `node`'s kernel can write its output tensor t with a pixel stride.
bool writes_strided(const GraphNode& node, const KernelMemory& kernel, int t) {
  const auto at = std::find(node.outputs.begin(), node.outputs.end(), t);
  const size_t output = static_cast<size_t>(at - node.outputs.begin());
  return at != node.outputs.end() && output < kernel.strided_outputs.size() && kernel.strided_outputs[output];
}

struct ConcatSlice {
  int tensor = -1, output = -1, concat_step = 0;
  size_t byte_offset = 0;
  bool on = true;
};

std::vector<ConcatSlice> concat_slice_candidates(const Graph& graph, const std::vector<Shape>& shapes,
                                                 const std::vector<KernelMemory>& kernels, const BufferList& list) {
  std::vector<bool> taken_over(list.plan.size(), false);
  for (const PlanBuffer& b : list.plan) {
    if (b.alias_of >= 0) taken_over[b.alias_of] = true;
  }
  std::vector<ConcatSlice> slices;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const GraphNode& node = graph.nodes[n];
    if (std::string(node.op->type()) != "concat" || node.outputs.size() != 1) continue;
    const int out = node.outputs[0];
    if (shapes[out].rank() != 4) continue;
    int64_t channel = 0;
    for (int t : node.inputs) {
      const int64_t c0 = channel;
      channel += shapes[t].c();
      const GraphTensor& tensor = graph.tensors[t];
      const int producer = tensor.producer;
      const bool qualifies = producer >= 0 && tensor.dtype == DType::kFloat32 &&
                             writes_strided(graph.nodes[producer], kernels[producer], t) &&
                             tensor.consumers.size() == 1 &&
                             std::count(node.inputs.begin(), node.inputs.end(), t) == 1 && t != graph.input &&
                             !contains(graph.outputs, t) && list.plan[t].alias_of < 0 && !taken_over[t];
      if (qualifies) {
        ConcatSlice slice;
        slice.tensor = t;
        slice.output = out;
        slice.concat_step = static_cast<int>(n);
        slice.byte_offset = static_cast<size_t>(c0) * sizeof(float);
        slices.push_back(slice);
      }
    }
  }
  return slices;
}

// `base` with the slices that are on.
BufferList with_slices(const Graph& graph, const BufferList& base, const std::vector<ConcatSlice>& slices) {
  BufferList list = base;
  for (const ConcatSlice& slice : slices) {
    if (!slice.on) continue;
    list.plan[slice.output].first_step =
        std::min(list.plan[slice.output].first_step, base.plan[slice.tensor].first_step);
    list.plan[slice.tensor].bytes = 0;  // it lives in the concat output's storage
    list.slice_of[slice.tensor] = slice.output;
    list.slice_byte_offset[slice.tensor] = slice.byte_offset;
    list.info[slice.tensor].slice_of = graph.tensors[slice.output].name;
  }
  return list;
}

// Starting a concat output early costs memory while the other branches still compute
// (ShuffleNet's downsampling units: branch 1's output would hold the whole concat output alive
// across branch 2). So the slices must not raise the most bytes alive at any step above what
// it is without them: while some step is above, the slice that starts its concat output
// earliest among those whose early start covers such a step is turned off (keeps its own
// storage and its copy).
void limit_concat_slices(const Graph& graph, const BufferList& base, size_t alignment,
                         std::vector<ConcatSlice>* slices) {
  if (slices->empty()) return;
  const int steps = static_cast<int>(graph.nodes.size());
  const std::vector<size_t> copying = live_per_step(base.plan, alignment, steps);
  const size_t limit = copying.empty() ? 0 : *std::max_element(copying.begin(), copying.end());
  for (;;) {
    const BufferList list = with_slices(graph, base, *slices);
    const std::vector<size_t> live = live_per_step(list.plan, alignment, steps);
    int worst = -1, worst_start = steps;
    for (size_t i = 0; i < slices->size(); ++i) {
      const ConcatSlice& slice = (*slices)[i];
      const int start = base.plan[slice.tensor].first_step;
      if (!slice.on || start != list.plan[slice.output].first_step || start >= worst_start) continue;
      bool over = false;
      for (int s = start; s < slice.concat_step && !over; ++s) over = live[s] > limit;
      if (over) {
        worst = static_cast<int>(i);
        worst_start = start;
      }
    }
    if (worst < 0) break;
    (*slices)[worst].on = false;
  }
}

// The buffers and their placement with the concat slices, never a larger arena than without
// them: the lifetimes above keep the lower bound from growing, but the placement search may
// not reach the bound on the new lifetimes (ShuffleNet 1.5x and 2.0x at batch 8: +25%, where
// without slices it does). The session then keeps every concat's copies. (Turning the slices
// off one at a time instead costs a placement search each, about 1.5 s on those two.)
Result<std::pair<BufferList, MemoryPlan>> place_with_slices(const Graph& graph, const BufferList& base,
                                                            const std::vector<ConcatSlice>& slices, size_t alignment) {
  BufferList list = with_slices(graph, base, slices);
  auto plan = plan_memory(list.plan, alignment);
  if (!plan.ok()) return plan.status();
  const bool any = std::any_of(slices.begin(), slices.end(), [](const ConcatSlice& s) { return s.on; });
  if (!any || plan.value().arena_bytes <= plan.value().lower_bound_bytes) {
    return std::make_pair(std::move(list), std::move(plan).value());
  }
  auto without = plan_memory(base.plan, alignment);
  if (!without.ok()) return without.status();
  if (plan.value().arena_bytes > without.value().arena_bytes) return std::make_pair(base, std::move(without).value());
  return std::make_pair(std::move(list), std::move(plan).value());
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
                                        const std::vector<KernelMemory>& kernels, size_t alignment, bool concat_alias) {
  const Graph& graph = model.graph();
  BufferList buffers;
  add_tensor_buffers(graph, shapes, &buffers);
  add_in_place_aliases(graph, shapes, kernels, &buffers);
  buffers.slice_of.assign(graph.tensors.size(), -1);
  buffers.slice_byte_offset.assign(graph.tensors.size(), 0);
  add_workspace_buffers(graph, kernels, &buffers);
  std::vector<ConcatSlice> slices;
  if (concat_alias) {
    slices = concat_slice_candidates(graph, shapes, kernels, buffers);
    limit_concat_slices(graph, buffers, alignment, &slices);
  }
  auto placed = place_with_slices(graph, buffers, slices, alignment);
  if (!placed.ok()) return internal_error("memory plan: " + placed.status().message());
  buffers = std::move(placed.value().first);
  const MemoryPlan* plan = &placed.value().second;

  SessionPlan result;
  result.workspace_of = buffers.workspace_of;
  result.slice_of = buffers.slice_of;
  MemoryReport& report = result.report;
  report.weights_bytes = model.weight_bytes();
  for (const KernelMemory& kernel : kernels) {
    report.packed_weights_bytes += kernel.owned_weight_bytes + kernel.shared_weight_bytes;
    report.session_weights_bytes += kernel.owned_weight_bytes;
    report.max_workspace_bytes = std::max(report.max_workspace_bytes, kernel.workspace_bytes);
  }
  report.activations_sum_bytes = plan->sum_bytes;
  report.activations_lower_bound_bytes = plan->lower_bound_bytes;
  report.arena_bytes = plan->arena_bytes;
  report.alignment = alignment;
  for (const GraphNode& node : graph.nodes) report.steps.push_back(node.name);
  report.buffers = buffers.info;
  for (size_t i = 0; i < report.buffers.size(); ++i) {
    MemoryBuffer& b = report.buffers[i];
    b.offset = plan->offsets[i];
    b.first_step = buffers.plan[i].first_step;
    b.last_step = buffers.plan[i].last_step;
    if (!b.in_place_of.empty()) ++report.in_place_layers;
  }
  // Slices: the concat output's storage, from the channel offset on in each pixel row
  // (first_step and last_step stay the tensor's own, inside the output's extended lifetime).
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    if (buffers.slice_of[t] < 0) continue;
    report.buffers[t].offset = report.buffers[buffers.slice_of[t]].offset;
    report.buffers[t].slice_offset = buffers.slice_byte_offset[t];
    report.concat_bytes_saved += report.buffers[t].bytes;
    ++report.concat_inputs_in_place;
  }
  for (const GraphNode& node : graph.nodes) {
    if (std::string(node.op->type()) != "concat") continue;
    for (int t : node.inputs) report.concat_bytes += bytes_of(shapes[t], graph.tensors[t].dtype);
  }
  return result;
}

std::vector<std::vector<std::pair<size_t, size_t>>> dead_ranges_per_step(const MemoryReport& report) {
  std::vector<std::vector<std::pair<size_t, size_t>>> dead(report.steps.size());
  for (size_t s = 0; s < dead.size(); ++s) {
    std::vector<std::pair<size_t, size_t>> live;
    for (const MemoryBuffer& b : report.buffers) {
      const int step = static_cast<int>(s);
      // A concat slice lies inside its concat output's storage, alive whenever the slice is.
      if (b.bytes > 0 && b.slice_of.empty() && b.first_step <= step && step <= b.last_step)
        live.emplace_back(b.offset, b.offset + b.bytes);
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
