// The CPU backend of winfer::Session: kernels compiled per node, every activation and workspace
// in one planned arena of host memory, activations stored NHWC (logical shapes stay NCHW).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "engine/src/conv_autotune.h"
#include "engine/src/graph.h"
#include "engine/src/huge_page_weights.h"
#include "engine/src/session_impl.h"
#include "engine/src/session_plan.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/layout.h"
#include "kernels/cpu/thread_pool.h"

namespace winfer {
namespace {

// Offsets in the arena keep the alignment every tensor allocation has on the CPU.
constexpr size_t kArenaAlignment = Tensor::kAlignment;
static_assert(Session::kArenaAlignment == kArenaAlignment, "SessionOptions::arena's alignment is the arena's");

// CPU storage layout of a tensor with this logical shape.
Layout cpu_layout(const Shape& shape) { return shape.rank() == 4 ? Layout::kNHWC : Layout::kPlain; }

std::string algorithm_names() {
  std::string names;
  for (const std::string& name : conv_algorithm_names("cpu")) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// WINFER_PAUSE_WORKERS=0 keeps the workers spinning for the next call (for 2 ms, then they
// sleep): read at every run, so that a process may change it between runs
// (bench/tools/idle_ab.py).
bool rest_workers_after_run() {
  const char* text = std::getenv("WINFER_PAUSE_WORKERS");
  return text == nullptr || std::strcmp(text, "0") != 0;
}

// Sends the calling thread's pool workers (kernels/cpu/thread_pool.h) to sleep when a
// multi-threaded run (or session creation) returns, on every way out. Between the layers of
// a run they spin for the next one; after its last layer that spin would take the cores from
// whatever the process does next (docs/PERFORMANCE.md, "Idle workers"). They stay alive,
// asleep: the next run wakes them, and does not wait for them meanwhile (the caller works).
class IdleWorkersAsleep {
 public:
  explicit IdleWorkersAsleep(int threads) : active_(threads > 1) {}
  ~IdleWorkersAsleep() {
    if (active_ && rest_workers_after_run()) cpu::rest_workers();
  }
  IdleWorkersAsleep(const IdleWorkersAsleep&) = delete;
  IdleWorkersAsleep& operator=(const IdleWorkersAsleep&) = delete;

 private:
  bool active_;
};

class CpuSession : public SessionImpl {
 public:
  // What one node reads and writes, bound once so that running allocates nothing.
  struct Binding {
    std::vector<const Tensor*> inputs;
    std::vector<Tensor*> outputs;
    void* workspace = nullptr;
  };

  std::vector<std::unique_ptr<Kernel>> kernels;  // per node
  std::vector<Tensor> tensors;                   // per graph tensor, CPU layout: arena views or own storage
  Tensor arena;                                  // planned: the one activation allocation
  Tensor shared_workspace;                       // unplanned: one workspace for every node
  std::vector<Binding> bindings;                 // per node
  std::vector<std::vector<std::pair<size_t, size_t>>> poison_ranges;  // per step, when poisoning
  std::vector<int64_t> slice_stride;  // per graph tensor: its pixel stride when a concat slice, else 0

  // Kernels for every node, then their memory planned and allocated: the session ready to run.
  // plan_only (Session::plan): stops once the memory report is made, allocating no arena.
  Status compile(bool plan_only = false) {
    // "auto" chooses per layer (compile_tuned_convs); the other nodes compile as with the default.
    const bool autotune = options.conv_algorithm == "auto";
    const ConvAlgorithm* algorithm = find_conv_algorithm(autotune ? "im2win" : options.conv_algorithm);
    if (algorithm == nullptr || !algorithm->user_selectable()) {
      return invalid_argument("unknown convolution algorithm '" + options.conv_algorithm +
                              "' for the CPU (known: " + algorithm_names() + ", auto)");
    }

    WINFER_RETURN_IF_ERROR(infer_session_shapes(*model, options, &shapes));

    std::vector<bool> tuned;
    WINFER_RETURN_IF_ERROR(compile_untuned_nodes(algorithm, autotune, &tuned));
    std::vector<ConvChoice> conv_choices;
    if (autotune) WINFER_RETURN_IF_ERROR(compile_tuned_convs(tuned, &conv_choices));
    WINFER_ASSIGN_OR_RETURN(SessionPlan plan, plan_within_memory(std::move(conv_choices)));
    if (plan_only) return Status::Ok();
    gather_owned_weights();
    WINFER_RETURN_IF_ERROR(check_caller_arena());
    allocate_and_bind(plan.workspace_of);
    if (options.plan_memory) write_slices_in_place(plan.slice_of);
    return Status::Ok();
  }

  // The weights the kernels packed for themselves (a model loaded without LoadOptions::pack_for
  // or for another algorithm; "auto"'s choices), in one block of 2 MiB pages as the loader's;
  // whether that pays depends on all the weights a run reads, the model's that kernels read in
  // place included.
  void gather_owned_weights() {
    std::vector<Tensor*> weights;
    size_t model_bytes = 0;
    for (auto& kernel : kernels) {
      kernel->for_each_owned_weight([&](Tensor& t) { weights.push_back(&t); });
      model_bytes += kernel->shared_weight_bytes();
    }
    gather_weights_in_huge_pages(weights, nullptr, model_bytes);
  }

  // One node's kernel for the inferred shapes, with this convolution algorithm.
  Status compile_node(size_t n, const ConvAlgorithm* conv) {
    const GraphNode& node = model->graph().nodes[n];
    std::vector<Shape> in, out;
    for (int t : node.inputs) in.push_back(shapes[t]);
    for (int t : node.outputs) out.push_back(shapes[t]);
    CompileOptions compile_options;
    compile_options.conv_algorithm = conv;
    compile_options.threads = options.threads;
    auto kernel = node.op->compile(in, out, compile_options);
    if (!kernel.ok()) return Status(kernel.status()).with_context(node.context(model->path()));
    kernels[n] = std::move(kernel).value();
    return Status::Ok();
  }

  // Every node's kernel with the session's algorithm, except the convolutions "auto" times
  // (marked in *tuned): their choice needs the other kernels' memory first.
  Status compile_untuned_nodes(const ConvAlgorithm* algorithm, bool autotune, std::vector<bool>* tuned) {
    const size_t count = model->graph().nodes.size();
    kernels.resize(count);
    tuned->assign(count, false);
    for (size_t n = 0; n < count; ++n) {
      (*tuned)[n] = autotune && is_tuned_conv(*model, shapes, n);
      if (!(*tuned)[n]) WINFER_RETURN_IF_ERROR(compile_node(n, algorithm));
    }
    return Status::Ok();
  }

  // "auto": times the tuned convolutions' candidates against the memory budget and compiles each
  // with its choice; *conv_choices says why, for the memory report.
  Status compile_tuned_convs(const std::vector<bool>& tuned, std::vector<ConvChoice>* conv_choices) {
    const size_t count = model->graph().nodes.size();
    std::vector<KernelMemory> known(count);
    for (size_t n = 0; n < count; ++n) {
      if (kernels[n]) {
        known[n] = {kernels[n]->workspace_bytes(), kernels[n]->owned_weight_bytes(), kernels[n]->shared_weight_bytes(),
                    kernels[n]->in_place_input()};
      }
    }
    ConvAutotuneOptions tune;
    tune.threads = options.threads;
    tune.budget = options.memory_budget;
    tune.cache_path = options.autotune_cache;
    tune.alignment = kArenaAlignment;
    tune.plan_memory = options.plan_memory;
    WINFER_ASSIGN_OR_RETURN(ConvAutotuneResult chosen, autotune_conv_layers(*model, shapes, known, tune));
    for (size_t n = 0; n < count; ++n) {
      if (tuned[n]) WINFER_RETURN_IF_ERROR(compile_node(n, chosen.algorithm_of[n]));
    }
    *conv_choices = std::move(chosen.choices);
    return Status::Ok();
  }

  // The arena's plan and the memory report; a session over memory_budget or beyond the host's
  // memory is refused here with the numbers, before allocating (rather than left to the
  // allocator, which may overcommit and fail later, when the pages are touched).
  Result<SessionPlan> plan_within_memory(std::vector<ConvChoice> conv_choices) {
    std::vector<KernelMemory> memory;
    for (size_t n = 0; n < kernels.size(); ++n) {
      const Kernel& kernel = *kernels[n];
      std::vector<bool> strided;
      for (size_t i = 0; i < model->graph().nodes[n].outputs.size(); ++i) {
        strided.push_back(kernel.supports_output_pixel_stride(static_cast<int>(i)));
      }
      memory.push_back({kernel.workspace_bytes(), kernel.owned_weight_bytes(), kernel.shared_weight_bytes(),
                        kernel.in_place_input(), std::move(strided)});
    }
    WINFER_ASSIGN_OR_RETURN(SessionPlan plan,
                            plan_session_memory(*model, shapes, memory, kArenaAlignment,
                                                /*concat_alias=*/options.concat_alias && options.plan_memory));
    report = plan.report;
    report.session_bytes = session_bytes_of(report, options.plan_memory);
    report.images_per_run = shapes[model->graph().input].n();
    report.memory_budget = options.memory_budget;
    report.conv_choices = std::move(conv_choices);
    if (options.memory_budget > 0 && report.session_bytes > options.memory_budget) {
      return out_of_memory(model->path() + ": the session needs " + std::to_string(report.session_bytes) +
                           " bytes with conv algorithm '" + options.conv_algorithm + "', over memory_budget " +
                           std::to_string(options.memory_budget) + " (conv_algorithm \"auto\" picks per layer to fit)");
    }
    // The caller's arena is there already: only the rest is new memory.
    const size_t needed = report.session_bytes - (options.arena != nullptr ? report.arena_bytes : 0);
    WINFER_RETURN_IF_ERROR(check_host_memory(*model, report, needed, shapes[model->graph().input].n()));
    return plan;
  }

  // SessionOptions::arena against the plan (check_common_options checked the rest).
  Status check_caller_arena() const {
    if (options.arena == nullptr) return Status::Ok();
    const std::string needs = model->path() + ": the session needs an arena of " + std::to_string(report.arena_bytes) +
                              " bytes aligned to " + std::to_string(kArenaAlignment) + " (Session::plan tells it)";
    if (reinterpret_cast<uintptr_t>(options.arena) % kArenaAlignment != 0) {
      return invalid_argument(needs + "; SessionOptions::arena is not " + std::to_string(kArenaAlignment) +
                              "-byte aligned (its address modulo " + std::to_string(kArenaAlignment) + " is " +
                              std::to_string(reinterpret_cast<uintptr_t>(options.arena) % kArenaAlignment) + ")");
    }
    if (options.arena_bytes < report.arena_bytes) {
      return invalid_argument(needs + "; SessionOptions::arena_bytes is only " + std::to_string(options.arena_bytes));
    }
    return Status::Ok();
  }

  // Allocates the tensors as planned, binds each node to them, and sets up what running reports.
  void allocate_and_bind(const std::vector<int>& workspace_of) {
    const Graph& graph = model->graph();
    if (options.plan_memory) {
      allocate_arena();
    } else {
      allocate_separately();
    }
    bind(workspace_of);
    if (options.plan_memory && options.poison_unused_memory) poison_ranges = dead_ranges_per_step(report);
    for (int t : graph.outputs) output_shapes.push_back(shapes[t]);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      timings.push_back({graph.nodes[n].name, graph.nodes[n].type, kernels[n]->describe(), 0.0});
    }
  }

  void allocate_arena() {
    const Graph& graph = model->graph();
    const Shape arena_shape{static_cast<int64_t>(report.arena_bytes / sizeof(float))};
    // Not zeroed, like a caller's arena (SessionOptions::arena): every kernel writes what it
    // reads later (the poisoned-plan tests fill every byte that is not live with NaNs before each
    // layer and get the same bits), so a zeroing pass over the pages would only add to the
    // session's creation (at batch 8 the arena is most of what a small network's session touches).
    arena = options.arena != nullptr ? Tensor::view(static_cast<float*>(options.arena), arena_shape)
                                     : Tensor::allocate_for_overwrite(arena_shape);
    char* base = reinterpret_cast<char*>(arena.data());
    for (size_t t = 0; t < graph.tensors.size(); ++t) {
      // A concat slice (docs/MEMORY.md) starts at its channel offset in its concat output.
      char* data = base + report.buffers[t].offset + report.buffers[t].slice_offset;
      tensors.push_back(Tensor::view(data, shapes[t], cpu_layout(shapes[t]), graph.tensors[t].dtype));
    }
  }

  // Concat without copies: the producer of each tensor planned as a channel slice of a concat's
  // output writes it with that output's pixel stride (allocate_arena started the tensor's view
  // at its slice: MemoryBuffer::offset + slice_offset). Unplanned sessions keep every tensor dense.
  void write_slices_in_place(const std::vector<int>& slice_of) {
    const Graph& graph = model->graph();
    slice_stride.assign(graph.tensors.size(), 0);
    for (size_t t = 0; t < slice_of.size(); ++t) {
      if (slice_of[t] < 0) continue;
      slice_stride[t] = shapes[slice_of[t]].c();
      const GraphNode& producer = graph.nodes[graph.tensors[t].producer];
      const auto output = std::find(producer.outputs.begin(), producer.outputs.end(), static_cast<int>(t));
      kernels[graph.tensors[t].producer]->set_output_pixel_stride(static_cast<int>(output - producer.outputs.begin()),
                                                                  slice_stride[t]);
    }
  }

  void allocate_separately() {
    const Graph& graph = model->graph();
    for (size_t t = 0; t < shapes.size(); ++t) {
      tensors.push_back(Tensor::allocate(shapes[t], cpu_layout(shapes[t]), graph.tensors[t].dtype));
    }
    if (report.max_workspace_bytes > 0) {
      shared_workspace = Tensor::allocate(Shape{static_cast<int64_t>((report.max_workspace_bytes + 3) / 4)});
    }
  }

  void bind(const std::vector<int>& workspace_of) {
    const Graph& graph = model->graph();
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      Binding b;
      for (int t : graph.nodes[n].inputs) b.inputs.push_back(&tensors[t]);
      for (int t : graph.nodes[n].outputs) b.outputs.push_back(&tensors[t]);
      const int ws = workspace_of[n];
      if (ws >= 0) {
        b.workspace = options.plan_memory
                          ? static_cast<void*>(reinterpret_cast<char*>(arena.data()) + report.buffers[ws].offset)
                          : static_cast<void*>(shared_workspace.data());
      }
      bindings.push_back(std::move(b));
    }
  }

  Status load_input(const Tensor& input) {
    WINFER_RETURN_IF_ERROR(check_input(input));
    Tensor& dst = tensors[model->graph().input];
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

  Status execute() {
    for (size_t n = 0; n < kernels.size(); ++n) {
      if (!poison_ranges.empty()) poison(n);
      const Binding& b = bindings[n];
      const auto start = std::chrono::steady_clock::now();
      kernels[n]->run(b.inputs, b.outputs, b.workspace, options.threads);
      const auto end = std::chrono::steady_clock::now();
      timings[n].milliseconds = std::chrono::duration<double, std::milli>(end - start).count();
      if (options.check_numerics) WINFER_RETURN_IF_ERROR(check_layer_outputs(n));
      if (layer_observer) layer_observer(n, b.outputs);
    }
    return Status::Ok();
  }

  // check_numerics: the first non-finite value a layer wrote, named by layer and tensor.
  Status check_layer_outputs(size_t n) const {
    const Graph& graph = model->graph();
    for (int t : graph.nodes[n].outputs) {
      if (graph.tensors[t].dtype != DType::kFloat32) continue;  // u8: every value is finite
      const std::string what = "output '" + graph.tensors[t].name + "'";
      Status s = Status::Ok();
      if (!slice_stride.empty() && slice_stride[t] > 0) {  // a concat slice: its channels of each pixel row
        const Shape& shape = shapes[t];
        const int64_t pixels = shape.n() * shape.h() * shape.w();
        for (int64_t px = 0; px < pixels && s.ok(); ++px) {
          s = check_finite(tensors[t].data() + px * slice_stride[t], shape.c(), what);
        }
      } else {
        s = check_finite(tensors[t].data(), tensors[t].numel(), what);
      }
      if (!s.ok()) return Status(s).with_context(graph.nodes[n].context(model->path()));
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

  size_t activation_bytes() const override {
    if (options.plan_memory) return arena.bytes();
    size_t total = shared_workspace.bytes();
    for (const Tensor& t : tensors) total += t.bytes();
    return total;
  }

  Status run_into(const Tensor& input, std::vector<Tensor>* outputs) override {
    const IdleWorkersAsleep sleep_after(options.threads);
    WINFER_RETURN_IF_ERROR(prepare_outputs(outputs));
    WINFER_RETURN_IF_ERROR(load_input(input));
    if (options.check_numerics) {
      WINFER_RETURN_IF_ERROR(check_finite(input.data(), input.numel(), "input '" + model->input_name() + "'"));
    }
    WINFER_RETURN_IF_ERROR(execute());
    store_outputs(outputs);
    return Status::Ok();
  }
};

}  // namespace

Result<std::unique_ptr<SessionImpl>> create_cpu_session(std::shared_ptr<const Model> model,
                                                        const SessionOptions& options) {
  const IdleWorkersAsleep sleep_after(options.threads);  // packing and "auto"'s timing run threads too
  auto impl = std::make_unique<CpuSession>();
  impl->model = std::move(model);
  impl->options = options;
  impl->device = "cpu";
  try {
    WINFER_RETURN_IF_ERROR(impl->compile());
  } catch (const std::bad_alloc&) {
    return invalid_argument(impl->model->path() + ": not enough memory for a session with batch " +
                            std::to_string(options.batch));
  }
  return std::unique_ptr<SessionImpl>(std::move(impl));
}

Result<MemoryReport> plan_cpu_session(std::shared_ptr<const Model> model, const SessionOptions& options) {
  CpuSession session;
  session.model = std::move(model);
  session.options = options;
  session.device = "cpu";
  try {
    WINFER_RETURN_IF_ERROR(session.compile(/*plan_only=*/true));
  } catch (const std::bad_alloc&) {
    return out_of_memory(session.model->path() + ": not enough memory to plan a session with batch " +
                         std::to_string(options.batch));
  }
  return session.report;
}

std::vector<std::string> cpu_conv_algorithm_names() {
  std::vector<std::string> names;
  for (const ConvAlgorithm* a : selectable_conv_algorithms()) names.push_back(a->name());
  return names;
}

}  // namespace winfer
