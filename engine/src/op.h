// The operator interface. An Op is one node's definition: its parsed attributes and (after
// load_params) its weights. It is immutable once the model is loaded and shared by every
// session. compile() turns it into a Kernel: the executable form for one session's shapes and
// options (packed weights for the chosen convolution algorithm, workspace size): compile() is
// the CPU backend's, which every op has. Other devices map op types to their own kernels in
// their own files (engine/src/device_backend.h; CUDA: engine/src/cuda/cuda_ops.h) and read the
// op through its class's public accessors: an op knows nothing of them.
//
// Layout convention of the CPU backend: rank-4 activations are stored NHWC (logical shapes
// stay NCHW), every other rank is plain row-major. Kernels receive tensors in that layout.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/src/attrs.h"
#include "kernels/common/conv_params.h"
#include "winfer/shape.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {

class ConvAlgorithm;
class ConvCapability;

// Where weights come from (a safetensors file, inline YAML tensors, or a seeded generator).
class ParamSource {
 public:
  virtual ~ParamSource() = default;
  // Copies parameter `name` into `out` (allocated by the callee, Layout::kPlain) after checking
  // that it exists, is float32 and has exactly `expected` shape. Errors name the tensor.
  virtual Status get(const std::string& name, const Shape& expected, Tensor* out) = 0;
};

// Weights this large stay out of the gathered block (engine/src/huge_page_weights.h): copying
// them would hold them twice at the load's peak.
constexpr size_t kOwnPagesWeightBytes = size_t(4) << 20;
// Larger tensors stay out of the block a load reads into: a classifier that large (VGG-16's 411
// MB fc6) streams from memory once per image, where 2 MiB pages gained 1% of VGG-16's time.
constexpr size_t kOwnPagesAtMostBytes = size_t(64) << 20;

// A parameter tensor for a ParamSource to fill (every element written by the caller): in the
// block a load reads its weights into (WeightBlock, engine/src/huge_page_weights.h) where there
// is one and the tensor fits, else as any tensor.
Tensor allocate_weight(const Shape& shape);

struct CompileOptions {
  // The session's convolution algorithm (never null). Layers whose shape it does not support
  // (and depthwise layers, which always use "depthwise") pick another and say so in describe().
  const ConvAlgorithm* conv_algorithm = nullptr;
  int threads = 1;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual size_t workspace_bytes() const { return 0; }
  // Bytes of the weights run() reads, for the memory report: those the kernel allocated itself
  // (packed convolution weights) and those it reads from its op's storage (biases, linear and
  // batch-norm parameters), which the Model holds anyway.
  virtual size_t owned_weight_bytes() const { return 0; }
  // f(tensor) for each tensor of weights the kernel packed for itself (what owned_weight_bytes()
  // counts), for the session to move them (gather_weights_in_huge_pages).
  virtual void for_each_owned_weight(const std::function<void(Tensor&)>& /*f*/) {}
  virtual size_t shared_weight_bytes() const { return 0; }
  // An input whose storage the output may take over when that input dies at this step, beyond
  // what the op allows for every kernel (Op::can_run_in_place): the index, or -1. A convolution
  // whose algorithm adds a fused residual in its store (each output element reads its own
  // residual element just before writing it) may write over the residual.
  virtual int in_place_input() const { return -1; }
  // Concat without copies (docs/MEMORY.md): whether run() can write output `output` (rank 4,
  // NHWC) as a channel slice of a wider tensor, each pixel's channels `stride` floats after the
  // previous pixel's, touching nothing in between. The session then places that output in its
  // slice of a concat's output and calls set_output_pixel_stride(output, stride) once, before
  // any run.
  virtual bool supports_output_pixel_stride(int /*output*/) const { return false; }
  virtual void set_output_pixel_stride(int /*output*/, int64_t /*floats*/) {}
  // One line for `winfer info`/logs, e.g. "im2col" or "depthwise (fused relu)".
  virtual std::string describe() const { return std::string(); }
  // Shapes were checked at compile time; run() cannot fail on valid tensors.
  virtual void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs, void* workspace,
                   int threads) const = 0;
};

class Op {
 public:
  virtual ~Op() = default;
  virtual const char* type() const = 0;

  // Output shapes from input shapes; errors say what was expected and what was given.
  virtual Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const = 0;
  // Reads this op's weights as `prefix + "." + param` (input shapes are known by now).
  virtual Status load_params(const std::string& /*prefix*/, const std::vector<Shape>& /*inputs*/,
                             ParamSource& /*params*/) {
    return Status::Ok();
  }
  virtual Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                                  const CompileOptions& options) const = 0;

  // Called once at load, after fusion, with the declared input shapes (LoadOptions::pack_for):
  // an op whose CPU kernel repacks its weights may pack them now for `conv` (as compile() would
  // choose for these shapes) and drop its original copy, so that the model holds one copy that
  // every session using that layout shares. weight_bytes() then counts the packed bytes.
  virtual void pack_weights_at_load(const std::vector<Shape>& /*inputs*/, const ConvAlgorithm& /*conv*/) {}

  // The op's convolution, for engine code that needs its parameters and weights (the autotuner),
  // or null when the op is not one (engine/src/conv_capability.h).
  virtual const ConvCapability* conv() const { return nullptr; }

  // Multiply-adds x 2 (0 for data movement).
  virtual int64_t flops(const std::vector<Shape>& /*inputs*/, const std::vector<Shape>& /*outputs*/) const { return 0; }
  // Learnable parameters as PyTorch counts them (batch-norm running statistics excluded).
  virtual int64_t param_count() const { return 0; }
  // Bytes of the parameters this op holds after loading and fusion (batch norm folded in).
  virtual size_t weight_bytes() const { return 0; }
  // f(tensor) for each tensor of parameters the op holds (what weight_bytes() counts), for the
  // loader to move them once they are final (ModelLoader::gather_weights).
  virtual void for_each_weight(const std::function<void(Tensor&)>& /*f*/) {}

  // In-place capability, for the memory planner: true when this op's kernel (compiled for
  // these input shapes) stays correct when its one output shares storage with any one of its
  // inputs of the same size. The planner then lets the output take over an input that dies at
  // this step. Element-wise ops say yes; anything that reads an element after writing another
  // one at the same place must not.
  virtual bool can_run_in_place(const std::vector<Shape>& /*inputs*/) const { return false; }

  // Fusion is not the op's business: the rules in engine/src/rewrites/ match patterns of nodes,
  // check their conditions and call the ops' own typed mutators (Conv2dOp::fold_batchnorm, ...).
  // An op only records what it absorbed: the layers (for display) and their parameter count
  // (so totals stay PyTorch's).
  const std::vector<std::string>& fused_names() const { return fused_names_; }
  int64_t fused_param_count() const { return fused_params_; }
  void record_fused(const std::string& name, int64_t params) {
    fused_names_.push_back(name);
    fused_params_ += params;
  }
  // An op that takes another's place in the graph (a quantized model's INT8 form of a layer)
  // carries over what that one absorbed.
  void record_fused_of(const Op& replaced) {
    fused_names_.insert(fused_names_.end(), replaced.fused_names_.begin(), replaced.fused_names_.end());
    fused_params_ += replaced.fused_params_;
  }

 private:
  std::vector<std::string> fused_names_;
  int64_t fused_params_ = 0;
};

// Builds an Op from its attributes; fails on missing or invalid attributes.
using OpFactory = Result<std::unique_ptr<Op>> (*)(const Attrs& attrs);

struct OpInfo {
  const char* type;
  OpFactory create;
  int min_inputs;
  int max_inputs;  // -1: unbounded
  // Number of outputs (split computes it from its attributes; every other op has 1).
  int (*num_outputs)(const Attrs& attrs);
};

}  // namespace winfer
