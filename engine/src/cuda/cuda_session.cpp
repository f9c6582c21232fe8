// The CUDA backend's session (docs/CUDA.md): kernels from the CUDA op table, one device arena
// planned like the CPU's, per-layer times from events. Part of the CUDA backend
// (cuda_backend.cpp), built natively or against the host emulator for tests.
#include "engine/src/cuda/cuda_session.h"

#include <algorithm>

#include "engine/src/cuda/cuda_kernel.h"
#include "engine/src/cuda/cuda_ops.h"
#include "engine/src/cuda/device_weights.h"
#include "engine/src/graph.h"
#include "engine/src/session_plan.h"
#include "kernels/cuda/layout.h"
#include "kernels/cuda/memory.h"

namespace winfer {
namespace {

// cudaMalloc returns 256-byte aligned memory; planning every offset to 256 keeps each tensor
// as aligned as its own allocation would be (vector loads, cuDNN, cuBLAS).
constexpr size_t kDeviceAlignment = 256;

size_t bytes_of(const Shape& shape) { return static_cast<size_t>(shape.numel()) * sizeof(float); }

std::string algorithm_names() {
  std::string names;
  for (const std::string& name : cuda_selectable_conv_algorithms()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// Per-layer times: CUDA events recorded on the stream between layers (no synchronisation inside
// the run). The emulator's events read the host clock when recorded, after the work before them
// has finished, so they measure the same thing.
class LayerClock {
 public:
  ~LayerClock() {
    for (cudaEvent_t e : events_) {
      if (e != nullptr) (void)cudaEventDestroy(e);
    }
  }
  Status init(size_t layers) {
    events_.assign(layers + 1, nullptr);
    for (cudaEvent_t& e : events_) {
      const cuda::Status s = cuda::cuda_status(cudaEventCreate(&e), "cudaEventCreate");
      if (!s.ok()) return from_cuda(s);
    }
    return Status::Ok();
  }
  // Marks the boundary before layer i (i == layers: after the last one).
  cuda::Status mark(size_t i, cudaStream_t stream) {
    return cuda::cuda_status(cudaEventRecord(events_[i], stream), "cudaEventRecord");
  }
  // After the stream finished: milliseconds of layer i.
  double milliseconds(size_t i) const {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, events_[i], events_[i + 1]) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return ms;
  }

 private:
  std::vector<cudaEvent_t> events_;
};

class CudaSession : public SessionImpl {
 public:
  ~CudaSession() override {
    if (stream_ != nullptr) {
      (void)cudaSetDevice(device_index_);
      (void)cudaStreamSynchronize(stream_);
      libraries_.reset();
      (void)cudaStreamDestroy(stream_);
      (void)cudaGetLastError();
    }
  }

  Status create(int device_index) {
    device_index_ = device_index;
    device = "cuda:" + std::to_string(device_index);
    const DeviceAvailability available = cuda_device_availability();
    if (available.count == 0) return device_error("no CUDA device: " + available.reason);
    if (device_index >= available.count) {
      return device_error("no CUDA device " + device + ": this machine has " + std::to_string(available.count) +
                          " (cuda:0 .. cuda:" + std::to_string(available.count - 1) + ")");
    }
    if (options.conv_algorithm == "auto") {
      return unsupported("conv_algorithm 'auto' (per-layer timing) is CPU-only for now; on CUDA choose one of " +
                         algorithm_names());
    }
    const cuda::ConvAlgorithm* algorithm = cuda::find_conv_algorithm(options.conv_algorithm);
    if (algorithm == nullptr || !algorithm->user_selectable()) {
      return invalid_argument("unknown convolution algorithm '" + options.conv_algorithm +
                              "' for CUDA (known: " + algorithm_names() + ")");
    }
    WINFER_RETURN_IF_ERROR(checked(cuda::cuda_status(cudaSetDevice(device_index), "cudaSetDevice"), ""));
    WINFER_RETURN_IF_ERROR(checked(cuda::cuda_status(cudaStreamCreate(&stream_), "cudaStreamCreate"), ""));
    cuda::LibrariesPtr libraries;
    const cuda::Status libs = cuda::create_libraries(stream_, options.allow_tf32, &libraries);
    // kUnsupported: a build without NVIDIA's libraries (the emulator). The session runs without
    // them; the algorithms that need them say so when asked.
    if (!libs.ok() && libs.code() != cuda::StatusCode::kUnsupported) {
      return from_cuda(libs).with_context(device + ": cuBLAS/cuDNN");
    }
    libraries_ = std::move(libraries);
    context_.stream = stream_;
    context_.libraries = libraries_.get();

    const Graph& graph = model->graph();
    WINFER_RETURN_IF_ERROR(infer_session_shapes(*model, options, &shapes));
    WINFER_RETURN_IF_ERROR(compile_kernels(algorithm));

    std::vector<KernelMemory> memory;
    for (const auto& kernel : kernels_) memory.push_back({kernel->workspace_bytes(), kernel->weight_bytes(), 0});
    auto plan = plan_session_memory(*model, shapes, memory, kDeviceAlignment);
    if (!plan.ok()) return plan.status();
    report = plan.value().report;
    WINFER_RETURN_IF_ERROR(allocate(plan.value().workspace_of));
    if (options.plan_memory && options.poison_unused_memory) poison_ranges_ = dead_ranges_per_step(report);
    for (int t : graph.outputs) output_shapes.push_back(shapes[t]);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      timings.push_back({graph.nodes[n].name, graph.nodes[n].type, kernels_[n]->describe(), 0.0});
    }
    return clock_.init(graph.nodes.size());
  }

  size_t activation_bytes() const override {
    size_t total = arena_.bytes() + shared_workspace_.bytes();
    for (const cuda::DeviceBuffer& b : separate_) total += b.bytes();
    return total;
  }

  Status run_into(const Tensor& input, std::vector<Tensor>* outputs) override {
    WINFER_RETURN_IF_ERROR(check_input(input));
    if (options.check_numerics) {
      WINFER_RETURN_IF_ERROR(check_finite(input.data(), input.numel(), "input '" + model->input_name() + "'"));
    }
    WINFER_RETURN_IF_ERROR(prepare_outputs(outputs));
    WINFER_RETURN_IF_ERROR(checked(cuda::cuda_status(cudaSetDevice(device_index_), "cudaSetDevice"), ""));
    WINFER_RETURN_IF_ERROR(upload_input(input));
    const Status executed = execute();
    if (!executed.ok()) {
      // Let whatever was queued before the failure finish, so the session (or another one) can
      // run again when the device is still usable (out of memory, a failed launch); after a
      // sticky error every later call reports it.
      (void)cudaStreamSynchronize(stream_);
      (void)cudaGetLastError();
      return executed;
    }
    WINFER_RETURN_IF_ERROR(download_outputs(outputs));
    for (size_t n = 0; n < kernels_.size(); ++n) timings[n].milliseconds = clock_.milliseconds(n);
    return Status::Ok();
  }

 private:
  // A CUDA failure as the engine's error, prefixed with the device and `where` (a layer).
  Status checked(const cuda::Status& s, const std::string& where) const {
    if (s.ok()) return Status::Ok();
    return from_cuda(s).with_context(where.empty() ? device : device + ": " + where);
  }

  Status compile_kernels(const cuda::ConvAlgorithm* algorithm) {
    const Graph& graph = model->graph();
    CudaCompileOptions compile_options;
    compile_options.conv_algorithm = algorithm;
    compile_options.context = context_;
    compile_options.device = device_index_;
    compile_options.weights = &device_weights_of(*model);
    for (const GraphNode& node : graph.nodes) {
      std::vector<Shape> in, out;
      for (int t : node.inputs) in.push_back(shapes[t]);
      for (int t : node.outputs) out.push_back(shapes[t]);
      auto kernel = compile_cuda_kernel(*node.op, in, out, compile_options);
      if (!kernel.ok()) return Status(kernel.status()).with_context(node.context(model->path()));
      kernels_.push_back(std::move(kernel).value());
    }
    return Status::Ok();
  }

  // The arena (or, unplanned, one buffer per tensor and one shared workspace), the staging
  // buffer for NCHW <-> NHWC at the graph's edges, and each node's pointers.
  Status allocate(const std::vector<int>& workspace_of) {
    const Graph& graph = model->graph();
    std::vector<char*> tensor_data(graph.tensors.size(), nullptr);
    char* workspace_base = nullptr;
    WINFER_RETURN_IF_ERROR(check_free_memory());
    if (options.plan_memory) {
      WINFER_RETURN_IF_ERROR(allocate_buffer(report.arena_bytes, "the activation arena", &arena_));
      for (size_t t = 0; t < graph.tensors.size(); ++t) {
        tensor_data[t] = static_cast<char*>(arena_.data()) + report.buffers[t].offset;
      }
    } else {
      separate_.resize(graph.tensors.size());
      for (size_t t = 0; t < graph.tensors.size(); ++t) {
        WINFER_RETURN_IF_ERROR(
            allocate_buffer(bytes_of(shapes[t]), "tensor '" + graph.tensors[t].name + "'", &separate_[t]));
        tensor_data[t] = static_cast<char*>(separate_[t].data());
      }
      WINFER_RETURN_IF_ERROR(allocate_buffer(report.max_workspace_bytes, "the workspace", &shared_workspace_));
      workspace_base = static_cast<char*>(shared_workspace_.data());
    }
    size_t staging = shapes[graph.input].rank() == 4 ? bytes_of(shapes[graph.input]) : 0;
    for (int t : graph.outputs) {
      if (shapes[t].rank() == 4) staging = std::max(staging, bytes_of(shapes[t]));
    }
    WINFER_RETURN_IF_ERROR(allocate_buffer(staging, "the input/output staging buffer", &staging_));
    tensors_.resize(graph.tensors.size());
    for (size_t t = 0; t < graph.tensors.size(); ++t) tensors_[t] = reinterpret_cast<float*>(tensor_data[t]);
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      Binding b;
      for (int t : graph.nodes[n].inputs) b.inputs.push_back(tensors_[t]);
      for (int t : graph.nodes[n].outputs) b.outputs.push_back(tensors_[t]);
      const int ws = workspace_of[n];
      if (ws >= 0) {
        b.workspace =
            options.plan_memory ? static_cast<char*>(arena_.data()) + report.buffers[ws].offset : workspace_base;
      }
      bindings_.push_back(std::move(b));
    }
    return Status::Ok();
  }

  // Refuses, before allocating, a session whose activation memory exceeds what the device has
  // free (with the numbers), rather than failing somewhere in the middle of allocating.
  Status check_free_memory() {
    size_t free_bytes = 0, total_bytes = 0;
    WINFER_RETURN_IF_ERROR(checked(cuda::cuda_status(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"), ""));
    const size_t needed = options.plan_memory ? report.arena_bytes : report.activations_sum_bytes;
    if (needed <= free_bytes) return Status::Ok();
    auto mib = [](size_t b) { return std::to_string((b + (1u << 20) - 1) >> 20) + " MiB"; };
    return out_of_memory(device + ": " + model->path() + " needs " + mib(needed) +
                         " of device memory for its activations" + " (batch " +
                         std::to_string(shapes[model->graph().input].n()) + "), but only " + mib(free_bytes) + " of " +
                         mib(total_bytes) + " are free; use a smaller batch");
  }

  Status allocate_buffer(size_t bytes, const std::string& what, cuda::DeviceBuffer* out) {
    const cuda::Status s = cuda::DeviceBuffer::allocate(bytes, out);
    if (s.ok()) return Status::Ok();
    return checked(s, "allocating " + std::to_string(bytes) + " bytes for " + what + " of " + model->path());
  }

  // The user's NCHW input -> the graph input's NHWC storage (through the staging buffer).
  Status upload_input(const Tensor& input) {
    const Shape& s = input.shape();
    float* dst = tensors_[model->graph().input];
    if (s.rank() == 4 && input.layout() != Layout::kNHWC) {
      WINFER_RETURN_IF_ERROR(
          checked(cuda::copy_to_device(staging_.data(), input.data(), input.bytes(), stream_), "input"));
      return checked(cuda::nchw_to_nhwc(s.n(), s.c(), s.h(), s.w(), staging_.floats(), dst, stream_), "input");
    }
    return checked(cuda::copy_to_device(dst, input.data(), input.bytes(), stream_), "input");
  }

  Status execute() {
    const Graph& graph = model->graph();
    for (size_t n = 0; n < kernels_.size(); ++n) {
      if (!poison_ranges_.empty()) WINFER_RETURN_IF_ERROR(poison(n));
      WINFER_RETURN_IF_ERROR(checked(clock_.mark(n, stream_), ""));
      const Binding& b = bindings_[n];
      const cuda::Status s = kernels_[n]->run(context_, b.inputs, b.outputs, b.workspace);
      if (!s.ok()) return checked(s, graph.nodes[n].context(model->path()));
      if (options.check_numerics) WINFER_RETURN_IF_ERROR(check_layer_outputs(n));
    }
    return checked(clock_.mark(kernels_.size(), stream_), "");
  }

  // check_numerics: the layer's outputs, copied to the host (waits for the stream).
  Status check_layer_outputs(size_t n) {
    const Graph& graph = model->graph();
    for (int t : graph.nodes[n].outputs) {
      numerics_host_.resize(static_cast<size_t>(shapes[t].numel()));
      const std::string what = "output '" + graph.tensors[t].name + "'";
      WINFER_RETURN_IF_ERROR(checked(
          cuda::copy_to_host(numerics_host_.data(), tensors_[t], numerics_host_.size() * sizeof(float), stream_),
          what));
      const Status s = check_finite(numerics_host_.data(), shapes[t].numel(), what);
      if (!s.ok()) return Status(s).with_context(graph.nodes[n].context(model->path()));
    }
    return Status::Ok();
  }

  Status poison(size_t step) {
    char* base = static_cast<char*>(arena_.data());
    for (const auto& [begin, end] : poison_ranges_[step]) {
      WINFER_RETURN_IF_ERROR(
          checked(cuda::fill_bytes(base + begin, 0xff, end - begin, stream_), "poisoning the arena"));
    }
    return Status::Ok();
  }

  // Graph outputs -> the user's tensors (NCHW unless the tensor asks for NHWC). Waits for the
  // stream, so an error of any layer queued before surfaces here.
  Status download_outputs(std::vector<Tensor>* outputs) {
    const Graph& graph = model->graph();
    for (size_t i = 0; i < graph.outputs.size(); ++i) {
      const float* src = tensors_[graph.outputs[i]];
      Tensor& dst = (*outputs)[i];
      const Shape& s = dst.shape();
      const std::string what = "output '" + graph.tensors[graph.outputs[i]].name + "'";
      if (s.rank() == 4 && dst.layout() != Layout::kNHWC) {
        WINFER_RETURN_IF_ERROR(
            checked(cuda::nhwc_to_nchw(s.n(), s.c(), s.h(), s.w(), src, staging_.floats(), stream_), what));
        src = staging_.floats();
      }
      WINFER_RETURN_IF_ERROR(checked(cuda::copy_to_host(dst.data(), src, dst.bytes(), stream_), what));
    }
    return checked(cuda::synchronize(stream_), "running " + model->path());
  }

  struct Binding {
    std::vector<const float*> inputs;
    std::vector<float*> outputs;
    void* workspace = nullptr;
  };

  int device_index_ = 0;
  cudaStream_t stream_ = nullptr;
  cuda::LibrariesPtr libraries_;
  cuda::Context context_;
  std::vector<std::unique_ptr<CudaKernel>> kernels_;
  cuda::DeviceBuffer arena_, shared_workspace_, staging_;
  std::vector<cuda::DeviceBuffer> separate_;  // unplanned: one per tensor
  std::vector<float*> tensors_;               // per graph tensor
  std::vector<Binding> bindings_;             // per node
  std::vector<std::vector<std::pair<size_t, size_t>>> poison_ranges_;
  LayerClock clock_;
  std::vector<float> numerics_host_;  // check_numerics
};

}  // namespace

Result<std::unique_ptr<SessionImpl>> create_cuda_session(std::shared_ptr<const Model> model,
                                                         const SessionOptions& options, int device_index) {
  auto impl = std::make_unique<CudaSession>();
  impl->model = std::move(model);
  impl->options = options;
  try {
    WINFER_RETURN_IF_ERROR(impl->create(device_index));
  } catch (const std::bad_alloc&) {
    return out_of_memory(impl->model->path() + ": not enough host memory for a CUDA session with batch " +
                         std::to_string(options.batch));
  }
  return std::unique_ptr<SessionImpl>(std::move(impl));
}

}  // namespace winfer
