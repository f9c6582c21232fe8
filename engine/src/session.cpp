#include "winfer/session.h"

#include <chrono>
#include <cstring>

#include "engine/src/graph.h"
#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/layout.h"

namespace winfer {
namespace {

// CPU storage layout of a tensor with this logical shape.
Layout cpu_layout(const Shape& shape) { return shape.rank() == 4 ? Layout::kNHWC : Layout::kPlain; }

std::string algorithm_names() {
  std::string names;
  for (const ConvAlgorithm* a : conv_algorithms()) {
    if (std::string(a->name()) == "depthwise") continue;  // chosen automatically, not by the user
    names += (names.empty() ? "" : ", ") + std::string(a->name());
  }
  return names;
}

}  // namespace

struct Session::Impl {
  std::shared_ptr<const Model> model;
  SessionOptions options;
  std::vector<Shape> shapes;                     // per graph tensor
  std::vector<Tensor> tensors;                   // per graph tensor, CPU layout
  std::vector<std::unique_ptr<Kernel>> kernels;  // per node
  Tensor workspace;                              // shared: nodes run one at a time
  size_t workspace_bytes = 0;
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
      workspace_bytes = std::max(workspace_bytes, kernel.value()->workspace_bytes());
      kernels.push_back(std::move(kernel).value());
    }
    for (const Shape& s : shapes) tensors.push_back(Tensor::allocate(s, cpu_layout(s)));
    if (workspace_bytes > 0) {
      workspace = Tensor::allocate(Shape{static_cast<int64_t>((workspace_bytes + 3) / 4)});
    }
    for (int t : graph.outputs) output_shapes.push_back(shapes[t]);
    timings.resize(graph.nodes.size());
    return Status::Ok();
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

  void execute() {
    const Graph& graph = model->graph();
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const GraphNode& node = graph.nodes[n];
      std::vector<const Tensor*> in;
      std::vector<Tensor*> out;
      for (int t : node.inputs) in.push_back(&tensors[t]);
      for (int t : node.outputs) out.push_back(&tensors[t]);
      const auto start = std::chrono::steady_clock::now();
      kernels[n]->run(in, out, workspace.empty() ? nullptr : workspace.data(), options.threads);
      const auto end = std::chrono::steady_clock::now();
      timings[n] = {node.name, node.type, kernels[n]->describe(),
                    std::chrono::duration<double, std::milli>(end - start).count()};
    }
  }

  std::vector<Tensor> collect_outputs() const {
    std::vector<Tensor> result;
    for (int t : model->graph().outputs) {
      const Tensor& src = tensors[t];
      result.push_back(src.shape().rank() == 4 ? src.to_layout(Layout::kNCHW)
                                               : src.to_layout(Layout::kPlain));
    }
    return result;
  }
};

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
size_t Session::workspace_bytes() const { return impl_->workspace_bytes; }

size_t Session::activation_bytes() const {
  size_t total = 0;
  for (const Tensor& t : impl_->tensors) total += t.bytes();
  return total;
}

Result<std::vector<Tensor>> Session::run_all(const Tensor& input) {
  WINFER_RETURN_IF_ERROR(impl_->load_input(input));
  impl_->execute();
  return impl_->collect_outputs();
}

Result<Tensor> Session::run(const Tensor& input) {
  auto outputs = run_all(input);
  if (!outputs.ok()) return outputs.status();
  return std::move(outputs.value()[0]);
}

}  // namespace winfer
