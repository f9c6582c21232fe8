#include "winfer/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "engine/src/graph.h"
#include "engine/src/planner.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/layout.h"

namespace winfer {
namespace {

// Offsets in the arena keep the alignment every tensor allocation has on the CPU (a CUDA
// backend would plan with 256).
constexpr size_t kArenaAlignment = Tensor::kAlignment;

// CPU storage layout of a tensor with this logical shape.
Layout cpu_layout(const Shape& shape) { return shape.rank() == 4 ? Layout::kNHWC : Layout::kPlain; }

size_t bytes_of(const Shape& shape) { return static_cast<size_t>(shape.numel()) * sizeof(float); }

std::string algorithm_names() {
  std::string names;
  for (const std::string& name : conv_algorithm_names()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

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

// In place: a node whose op allows it writes its output over an input that is read for the
// last time by this node. The graph input stays untouched (it holds the user's data for the
// whole of its lifetime) and so do outputs (the user reads them after the run).
void add_in_place_aliases(const Graph& graph, const std::vector<Shape>& shapes, BufferList* list) {
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const GraphNode& node = graph.nodes[n];
    if (node.outputs.size() != 1) continue;
    std::vector<Shape> in;
    for (int t : node.inputs) in.push_back(shapes[t]);
    if (!node.op->can_run_in_place(in)) continue;
    const int out = node.outputs[0];
    for (int t : node.inputs) {
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

void add_workspace_buffers(const Graph& graph, const std::vector<std::unique_ptr<Kernel>>& kernels,
                           BufferList* list) {
  list->workspace_of.assign(graph.nodes.size(), -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const size_t bytes = kernels[n]->workspace_bytes();
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

// Arena byte ranges [begin, end) not alive at each step: what poisoning overwrites.
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

}  // namespace

struct Session::Impl {
  // What one node reads and writes, bound once so that running allocates nothing.
  struct Binding {
    std::vector<const Tensor*> inputs;
    std::vector<Tensor*> outputs;
    void* workspace = nullptr;
  };

  std::shared_ptr<const Model> model;
  SessionOptions options;
  std::vector<Shape> shapes;                     // per graph tensor
  std::vector<std::unique_ptr<Kernel>> kernels;  // per node
  std::vector<Tensor> tensors;                   // per graph tensor, CPU layout: arena views or own storage
  Tensor arena;                                  // planned: the one activation allocation
  Tensor shared_workspace;                       // unplanned: one workspace for every node
  std::vector<Binding> bindings;                 // per node
  MemoryReport report;
  std::vector<std::vector<std::pair<size_t, size_t>>> poison_ranges;  // per step, when poisoning
  std::vector<Shape> output_shapes;
  std::vector<LayerTiming> timings;

  Status compile() {
    const Graph& graph = model->graph();
    const ConvAlgorithm* algorithm = find_conv_algorithm(options.conv_algorithm);
    if (algorithm == nullptr || std::string(algorithm->name()) == "depthwise") {
      return invalid_argument("unknown convolution algorithm '" + options.conv_algorithm +
                              "' (known: " + algorithm_names() + ")");
    }
    if (options.threads < 1) return invalid_argument("threads must be >= 1, got " + std::to_string(options.threads));
    if (options.batch < 0) return invalid_argument("batch must be >= 1, got " + std::to_string(options.batch));

    Shape input = model->input_shape();
    if (options.batch > 0) input[0] = options.batch;
    WINFER_RETURN_IF_ERROR(graph.infer_shapes(input, &shapes, model->path()));

    CompileOptions compile_options;
    compile_options.conv_algorithm = algorithm;
    compile_options.threads = options.threads;
    for (const GraphNode& node : graph.nodes) {
      std::vector<Shape> in, out;
      for (int t : node.inputs) in.push_back(shapes[t]);
      for (int t : node.outputs) out.push_back(shapes[t]);
      auto kernel = node.op->compile(in, out, compile_options);
      if (!kernel.ok()) return Status(kernel.status()).with_context(node.context(model->path()));
      kernels.push_back(std::move(kernel).value());
    }
    BufferList buffers;
    WINFER_RETURN_IF_ERROR(plan(&buffers));
    if (options.plan_memory) {
      allocate_arena();
    } else {
      allocate_separately();
    }
    bind(buffers);
    if (options.plan_memory && options.poison_unused_memory) poison_ranges = dead_ranges_per_step(report);
    for (int t : graph.outputs) output_shapes.push_back(shapes[t]);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      timings.push_back({graph.nodes[n].name, graph.nodes[n].type, kernels[n]->describe(), 0.0});
    }
    return Status::Ok();
  }

  // Lifetimes, in-place aliases and workspaces -> offsets; fills the report.
  Status plan(BufferList* buffers) {
    const Graph& graph = model->graph();
    add_tensor_buffers(graph, shapes, buffers);
    add_in_place_aliases(graph, shapes, buffers);
    add_workspace_buffers(graph, kernels, buffers);
    auto plan = plan_memory(buffers->plan, kArenaAlignment);
    if (!plan.ok()) return internal_error("memory plan: " + plan.status().message());

    report.weights_bytes = model->weight_bytes();
    for (const auto& kernel : kernels) {
      report.packed_weights_bytes += kernel->owned_weight_bytes() + kernel->shared_weight_bytes();
      report.session_weights_bytes += kernel->owned_weight_bytes();
      report.max_workspace_bytes = std::max(report.max_workspace_bytes, kernel->workspace_bytes());
    }
    report.activations_sum_bytes = plan.value().sum_bytes;
    report.activations_lower_bound_bytes = plan.value().lower_bound_bytes;
    report.arena_bytes = plan.value().arena_bytes;
    report.alignment = kArenaAlignment;
    for (const GraphNode& node : graph.nodes) report.steps.push_back(node.name);
    report.buffers = buffers->info;
    for (size_t i = 0; i < report.buffers.size(); ++i) {
      MemoryBuffer& b = report.buffers[i];
      b.offset = plan.value().offsets[i];
      b.first_step = buffers->plan[i].first_step;
      b.last_step = buffers->plan[i].last_step;
      if (!b.in_place_of.empty()) ++report.in_place_layers;
    }
    return Status::Ok();
  }

  void allocate_arena() {
    const Graph& graph = model->graph();
    arena = Tensor::allocate(Shape{static_cast<int64_t>(report.arena_bytes / sizeof(float))});
    char* base = reinterpret_cast<char*>(arena.data());
    for (size_t t = 0; t < graph.tensors.size(); ++t) {
      float* data = reinterpret_cast<float*>(base + report.buffers[t].offset);
      tensors.push_back(Tensor::view(data, shapes[t], cpu_layout(shapes[t])));
    }
  }

  void allocate_separately() {
    for (const Shape& s : shapes) tensors.push_back(Tensor::allocate(s, cpu_layout(s)));
    if (report.max_workspace_bytes > 0) {
      shared_workspace = Tensor::allocate(Shape{static_cast<int64_t>((report.max_workspace_bytes + 3) / 4)});
    }
  }

  void bind(const BufferList& buffers) {
    const Graph& graph = model->graph();
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      Binding b;
      for (int t : graph.nodes[n].inputs) b.inputs.push_back(&tensors[t]);
      for (int t : graph.nodes[n].outputs) b.outputs.push_back(&tensors[t]);
      const int ws = buffers.workspace_of[n];
      if (ws >= 0) {
        b.workspace = options.plan_memory ? static_cast<void*>(reinterpret_cast<char*>(arena.data()) +
                                                               report.buffers[ws].offset)
                                          : static_cast<void*>(shared_workspace.data());
      }
      bindings.push_back(std::move(b));
    }
  }

  Status load_input(const Tensor& input) {
    const Graph& graph = model->graph();
    Tensor& dst = tensors[graph.input];
    if (input.shape() != dst.shape()) {
      return shape_mismatch("input '" + model->input_name() + "' has shape " + input.shape().to_string() +
                            ", expected " + dst.shape().to_string() + " (NCHW)");
    }
    if (input.empty()) return invalid_argument("input '" + model->input_name() + "' has no data");
    const Shape& s = input.shape();
    if (s.rank() == 4 && input.layout() != Layout::kNHWC) {
      nchw_to_nhwc(s.n(), s.c(), s.h(), s.w(), input.data(), dst.data(), options.threads);
    } else {
      std::memcpy(dst.data(), input.data(), dst.bytes());
    }
    return Status::Ok();
  }

  void poison(size_t step) {
    char* base = reinterpret_cast<char*>(arena.data());
    // All bits set is a quiet NaN in every float it touches.
    for (const auto& [begin, end] : poison_ranges[step]) std::memset(base + begin, 0xff, end - begin);
  }

  void execute() {
    for (size_t n = 0; n < kernels.size(); ++n) {
      if (!poison_ranges.empty()) poison(n);
      const Binding& b = bindings[n];
      const auto start = std::chrono::steady_clock::now();
      kernels[n]->run(b.inputs, b.outputs, b.workspace, options.threads);
      const auto end = std::chrono::steady_clock::now();
      timings[n].milliseconds = std::chrono::duration<double, std::milli>(end - start).count();
    }
  }

  // Missing or empty outputs are allocated; the others must have the output's shape.
  Status prepare_outputs(std::vector<Tensor>* outputs) const {
    if (outputs->size() < output_shapes.size()) outputs->resize(output_shapes.size());
    for (size_t i = 0; i < output_shapes.size(); ++i) {
      Tensor& out = (*outputs)[i];
      const Shape& shape = output_shapes[i];
      if (out.empty()) {
        out = Tensor::allocate(shape, shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain);
      } else if (out.shape() != shape) {
        return shape_mismatch("output " + std::to_string(i) + " ('" + model->output_names()[i] + "') has shape " +
                              out.shape().to_string() + ", expected " + shape.to_string());
      }
    }
    return Status::Ok();
  }

  void store_outputs(std::vector<Tensor>* outputs) const {
    const Graph& graph = model->graph();
    for (size_t i = 0; i < graph.outputs.size(); ++i) {
      const Tensor& src = tensors[graph.outputs[i]];
      Tensor& dst = (*outputs)[i];
      const Shape& s = src.shape();
      if (s.rank() == 4 && dst.layout() != Layout::kNHWC) {
        nhwc_to_nchw(s.n(), s.c(), s.h(), s.w(), src.data(), dst.data(), options.threads);
      } else {
        std::memcpy(dst.data(), src.data(), src.bytes());
      }
    }
  }
};

std::vector<std::string> conv_algorithm_names() {
  std::vector<std::string> names;
  for (const ConvAlgorithm* a : conv_algorithms()) {
    if (std::string(a->name()) == "depthwise") continue;  // chosen automatically, not by the user
    names.push_back(a->name());
  }
  return names;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model,
                                                 const SessionOptions& options) {
  if (!model) return invalid_argument("Session::create: model is null");
  if (model->structure_only()) {
    return invalid_argument(model->path() + ": the model was loaded without weights (structure only)");
  }
  auto impl = std::make_unique<Impl>();
  impl->model = std::move(model);
  impl->options = options;
  try {
    WINFER_RETURN_IF_ERROR(impl->compile());
  } catch (const std::bad_alloc&) {
    return invalid_argument(impl->model->path() + ": not enough memory for a session with batch " +
                            std::to_string(options.batch));
  }
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

const Shape& Session::input_shape() const { return impl_->shapes[impl_->model->graph().input]; }
const std::vector<Shape>& Session::output_shapes() const { return impl_->output_shapes; }
const std::vector<LayerTiming>& Session::last_timings() const { return impl_->timings; }
size_t Session::workspace_bytes() const { return impl_->report.max_workspace_bytes; }
const MemoryReport& Session::memory_report() const { return impl_->report; }

size_t Session::activation_bytes() const {
  if (impl_->options.plan_memory) return impl_->arena.bytes();
  size_t total = impl_->shared_workspace.bytes();
  for (const Tensor& t : impl_->tensors) total += t.bytes();
  return total;
}

Status Session::run_into(const Tensor& input, std::vector<Tensor>* outputs) {
  if (outputs == nullptr) return invalid_argument("Session::run_into: outputs is null");
  WINFER_RETURN_IF_ERROR(impl_->prepare_outputs(outputs));
  WINFER_RETURN_IF_ERROR(impl_->load_input(input));
  impl_->execute();
  impl_->store_outputs(outputs);
  return Status::Ok();
}

Result<std::vector<Tensor>> Session::run_all(const Tensor& input) {
  std::vector<Tensor> outputs;
  WINFER_RETURN_IF_ERROR(run_into(input, &outputs));
  return outputs;
}

Result<Tensor> Session::run(const Tensor& input) {
  auto outputs = run_all(input);
  if (!outputs.ok()) return outputs.status();
  return std::move(outputs.value()[0]);
}

}  // namespace winfer
