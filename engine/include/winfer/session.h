// Session: runs a Model on the CPU or a CUDA GPU. Owns all activation memory and the per-session form of
// every layer (weights packed for the chosen convolution algorithm). One session runs one
// inference at a time; create one session per thread to run concurrently. A run started while
// another is in progress on the same session (from another thread) is refused, not queued:
// run/run_all/run_into return kInvalidArgument "Session::run: this session is already running
// on another thread; ...", and the run in progress goes on undisturbed.
//
//   winfer::SessionOptions options;
//   options.conv_algorithm = "im2col";
//   auto session = winfer::Session::create(model.value(), options);
//   auto output = session.value()->run(input_nchw);   // Result<Tensor>, NCHW / [N, classes]
//
// Memory: Session::create plans every activation tensor and convolution workspace into one
// arena (docs/MEMORY.md) and allocates it, together with the packed weights; nothing else is
// allocated while running. run()/run_all() then allocate only the tensors they return;
// run_into() allocates nothing once its output tensors exist (serving loops should use it).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "winfer/model.h"
#include "winfer/tensor.h"

namespace winfer {

// The thread count a session gets when SessionOptions::threads is left alone: the CPUs this
// process may run on (sched_getaffinity of the calling thread, so `taskset`, cgroup cpusets and
// a container's CPU list count; not the machine's CPUs), at least 1, unless the environment
// variable WINFER_NUM_THREADS holds a whole number >= 1, which then is the default (another value
// is ignored with a warning). Evaluated each time a SessionOptions is made. The C API (winfer_default_thread_count),
// the CLI's --threads and the Python binding's threads=None all use it.
int default_thread_count();

struct SessionOptions {
  // Where to run: "cpu", "cuda" (device 0), "cuda:N", or "auto" (CUDA device 0 when this build
  // has the CUDA backend and a device is present, else the CPU). See docs/CUDA.md.
  std::string device = "cpu";
  // Convolution algorithm for every non-depthwise convolution (see conv_algorithm_names()), or
  // "auto" (CPU only): Session::create times every algorithm that supports each layer, on the
  // session's own shapes and threads (the best of several runs on random input; on the
  // thread's CPU clock when threads is 1, so that other processes do not decide), and gives
  // each layer the fastest one that keeps the session within memory_budget. What was chosen
  // and why: memory_report().conv_choices. Layers of the same shape are measured once.
  std::string conv_algorithm = "im2win";
  // Upper bound (bytes) on the memory a CPU session allocates for itself: its activation arena
  // (tensors and workspaces; every tensor on its own when plan_memory is false) plus the
  // convolution weights it packs. The model's own weights, shared by all sessions, are not
  // counted. 0 = no bound. With "auto" the per-layer choice keeps under it (create fails when
  // no choice does); with a fixed algorithm create fails when the session would exceed it.
  size_t memory_budget = 0;
  // "auto" only: a text file of measured layer times, keyed by CPU ISA, threads and layer
  // shape. Times found there are not measured again (so a cached choice is repeatable);
  // new measurements are added to it. "" = measure every time, keep nothing.
  std::string autotune_cache;
  // Threads per run (each parallel layer splits its work among them): >= 1; 1 runs everything
  // on the calling thread. Default: default_thread_count(). 0 or negative is refused by
  // Session::create and Session::plan (it does not mean "the default"). Between runs the
  // workers sleep rather than spin, so that other code of the process gets the cores at once
  // (docs/PERFORMANCE.md, "Idle workers").
  int threads = default_thread_count();
  // Batch size; 0 = the model's declared batch (or input_shape's).
  int64_t batch = 0;
  // CPU only: run the batch this many images at a time; 0 = the whole batch in one run;
  // kImagesPerRunAuto (the default) = the engine chooses, see below. The arena, the kernels and
  // "auto"'s choices are made for that many images and each run takes the next ones through
  // them, so the activations need the memory of the images of one run whatever the batch (ncnn
  // runs one image at a time): EfficientNet-B0 at batch 8 with 1 image per run plans a fifth of
  // the arena on 1 thread (docs/MEMORY.md). On several threads the runs go side by side, one per
  // thread, each on one thread with an arena of its own (memory_report() and Session::plan give
  // their sum). A batch that is not a multiple runs its rest in a last, smaller run (a second
  // session on the same arena). Every graph output must keep the batch as its first dimension,
  // and the model must leave the batch free (a static ONNX export fixes it): create fails saying
  // so otherwise. memory_budget applies to each run's session.
  //
  // kImagesPerRunAuto: a CPU batch that is a multiple of the threads runs one run per thread side
  // by side, each of 2 images (1 where a thread's share is odd, but not on one thread; a
  // thread's whole share where each run would stream large weights, as VGG-16's classifier; 4
  // where the weights, beyond 24 MiB, are read from memory by every run and outweigh 8 times an
  // image's arena, as the ResNets': 0.94-0.99x the time of runs of 2, docs/PERFORMANCE.md session
  // 40): batch 8 runs as 2 + 2 images per thread on 2 threads, 2 + 2 + 2 + 2 on one. No thread then
  // waits for another at every layer or reads what another wrote, and the arena holds 2 images
  // per thread whatever the batch: measured 0.94-1.0x the whole batch's time on the zoo's
  // networks at batch 8 on 2 threads, 0.71-0.77x in the minutes when the two cores sat on
  // different last-level caches, 0.95-1.02x on one thread (docs/PERFORMANCE.md, sessions 29
  // and 30). Otherwise,
  // and where runs do not apply (a batch-fixing model, an output without the batch first, or
  // on several threads conv_algorithm "auto", whose timing every lane would repeat, or kernels
  // that pack weights of their own, which every lane would hold), the whole batch at once.
  static constexpr int64_t kImagesPerRunAuto = -1;
  int64_t images_per_run = kImagesPerRunAuto;
  // The whole input shape the session runs (NCHW, or [N,F]), e.g. {2, 3, 160, 224}: any batch
  // and any size of the dims the model leaves free (Model::input_dim_fixed: a YAML model fixes
  // only the channels; an ONNX model its fixed dims), each 1..2^24. The arena, the kernels and
  // "auto"'s choices are made for it. Empty = the model's declared shape, with `batch` when set.
  // A batch given both here and in `batch` must agree. Session::create fails naming the dim
  // when a fixed dim differs or the rank is wrong, and naming the layer when a layer does not
  // admit the shape (e.g. a linear layer whose in_features assume the declared image size).
  std::vector<int64_t> input_shape;
  // Run every activation and workspace out of one planned arena (the default). false gives
  // each tensor its own allocation and all convolutions one shared workspace, no reuse and no
  // in-place layers: the reference the planner is tested against.
  bool plan_memory = true;
  // Debugging the planner (planned sessions only): before each layer runs, fill every arena
  // byte that is not alive at that step with NaN, so that reading a dead tensor cannot go
  // unnoticed. Costs a pass over the arena per layer.
  bool poison_unused_memory = false;
  // CUDA only: let cuBLAS/cuDNN use TF32 tensor cores (faster, about 1e-3 relative error).
  // Off by default, so that results match the CPU backend to float32 rounding.
  bool allow_tf32 = false;
  // Debugging: fail the run at the first non-finite value (NaN or +-Inf), naming the input or
  // the layer whose output holds it. Costs a pass over every tensor (on CUDA also a copy to the
  // host per layer). Off: NaN and Inf propagate as they would in PyTorch.
  bool check_numerics = false;
  // CPU only: run the session's activations and workspaces out of memory the caller provides
  // instead of an arena the session allocates (a pool of the embedder's, memory locked or in
  // huge pages, one arena shared by sessions that never run at the same time). `arena` must be
  // aligned to Session::kArenaAlignment (64) bytes and hold at least the arena_bytes that
  // Session::plan(model, options) reports for these same options; Session::create refuses it
  // otherwise, naming the bytes needed. It needs plan_memory. The memory must outlive the
  // session; the session writes it only during a run and keeps nothing there between runs.
  // nullptr (default): the session allocates its own arena.
  void* arena = nullptr;
  size_t arena_bytes = 0;
  // CPU only: concat without copies (docs/MEMORY.md). A concat input written by a plain
  // convolution, read by nothing else and not a graph output, is placed in its channel slice
  // of the concat's output, and the convolution writes it there directly (with the output's
  // pixel stride), so the concat copies only its other inputs. The results are bitwise the
  // same either way; false gives every concat input its own storage and copy (to compare the
  // arenas: `winfer plan --no-concat-alias`). CUDA sessions and unplanned ones (plan_memory
  // false: every tensor in its own allocation, and the memory report says so) always copy.
  bool concat_alias = true;
};

struct LayerTiming {
  std::string name;
  std::string type;
  std::string kernel;  // e.g. "im2col", "depthwise"
  double milliseconds = 0;
};

// One buffer of the memory plan: an activation tensor or a convolution's workspace.
struct MemoryBuffer {
  std::string name;  // the tensor's name, or "<layer> workspace"
  bool workspace = false;
  size_t bytes = 0;
  size_t offset = 0;  // in the arena
  // Alive from the start of step first_step to the end of step last_step (step = layer index
  // in execution order). The graph input is alive from step 0, outputs until the last step.
  int first_step = 0;
  int last_step = 0;
  std::string in_place_of;  // the tensor whose storage this one takes over, or ""
  // Concat without copies (SessionOptions::concat_alias): the concat output this tensor is a
  // channel slice of, or "". Its producer writes it straight into that output (each pixel's
  // channels at slice_offset bytes into the output's pixel row), so it has no storage of its
  // own: `offset` is the output's, its first byte at offset + slice_offset, and `bytes` its own
  // size, spread over the output's rows.
  std::string slice_of;
  size_t slice_offset = 0;
};

// One algorithm considered for a convolution layer by conv_algorithm "auto".
struct ConvCandidate {
  std::string algorithm;
  double milliseconds = 0;         // best of the timed runs (or the cached time)
  bool cached = false;             // the time came from SessionOptions::autotune_cache
  size_t workspace_bytes = 0;      // scratch memory of the layer with this algorithm
  size_t packed_weight_bytes = 0;  // the layer's weights packed for this algorithm
};

// The algorithm "auto" chose for one convolution layer, and why.
struct ConvChoice {
  std::string layer;
  std::string algorithm;
  // "fastest", "only supported", or "memory_budget" (a faster one did not fit); `reason`
  // says it in words with the times and bytes involved.
  std::string rule;
  std::string reason;
  std::vector<ConvCandidate> candidates;  // every algorithm that supports the layer, registry order
};

// What a session's memory plan costs; `winfer plan` prints it per convolution algorithm.
struct MemoryReport {
  size_t weights_bytes = 0;         // the model's parameters as loaded (batch norm folded)
  size_t packed_weights_bytes = 0;  // what the kernels read: packed conv weights, biases, other layers'
  // The part of packed_weights_bytes this session allocated (packed convolution weights); the
  // rest is read from the model's own tensors.
  size_t session_weights_bytes = 0;
  size_t activations_sum_bytes = 0;          // every tensor and workspace on its own (no reuse)
  size_t activations_lower_bound_bytes = 0;  // the most bytes alive at any one step
  size_t arena_bytes = 0;                    // the planned arena (tensors and workspaces)
  size_t max_workspace_bytes = 0;            // the largest convolution workspace
  size_t alignment = 0;                      // of every offset in the arena
  int in_place_layers = 0;                   // layers whose output took over an input's storage
  // Concat without copies: bytes every concat layer reads from its inputs (per run, all of
  // them), how many of those inputs are written in place by their producers instead
  // (MemoryBuffer::slice_of), and their bytes, which no concat copies any more.
  size_t concat_bytes = 0;
  int concat_inputs_in_place = 0;
  size_t concat_bytes_saved = 0;
  std::vector<std::string> steps;  // layer name of each step
  std::vector<MemoryBuffer> buffers;
  // What the session allocates for itself, compared against SessionOptions::memory_budget:
  // the arena (activations_sum_bytes when plan_memory is false) + session_weights_bytes.
  size_t session_bytes = 0;
  size_t memory_budget = 0;  // the session's budget (0 = none)
  // How the batch runs (SessionOptions::images_per_run): images per run (the batch when it runs
  // at once) and runs side by side, one per thread, each with its part of the arena.
  int64_t images_per_run = 0;
  int lanes = 1;
  // conv_algorithm "auto": one entry per tuned convolution (every non-depthwise conv2d), in
  // execution order. Empty for a fixed algorithm.
  std::vector<ConvChoice> conv_choices;
};

// Names of the convolution algorithms SessionOptions::conv_algorithm accepts, in the
// registry's fixed order ("direct", "im2col", ...), for the CPU or for the CUDA backend
// ("cuda": empty in a build without it).
std::vector<std::string> conv_algorithm_names(const std::string& device = "cpu");

// kOutOfMemory "WHAT needs X MiB, more than the M MiB this machine has available
// (MemAvailable); use a smaller batch" when `bytes` of host memory are more than the machine has
// available now (or than is left under ulimit -v), the figure Session::create checks its own
// memory against; Ok when that is unknown. For buffers sized from what a user gave (a batch of inputs, a random input):
// checked before allocating, because the allocator may overcommit and fail only when the pages are touched (the OOM
// killer), or throw std::bad_alloc.
Status check_host_memory_for(const std::string& what, size_t bytes);

// The input shape Session::create(model, options) makes its session for: options.input_shape,
// or the model's declared shape with options.batch; checked by Model::check_input_shape (an
// error naming the dim) and against options.batch. Layers are not checked: Session::create does.
Result<Shape> session_input_shape(const Model& model, const SessionOptions& options);

class SessionImpl;

class Session {
 public:
  // What SessionOptions::arena must be aligned to (the CPU's tensor alignment).
  static constexpr size_t kArenaAlignment = 64;

  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Model> model,
                                                 const SessionOptions& options = {});
  // The memory plan of the session create(model, options) would make, without allocating its
  // arena: arena_bytes is what SessionOptions::arena must hold (options.arena itself is not
  // looked at). CPU only. Costs what create costs but the arena (kernels are compiled and their
  // weights packed, then dropped); with conv_algorithm "auto" the layers are timed, so give an
  // autotune_cache to make create choose the same algorithms (and need the same bytes).
  static Result<MemoryReport> plan(std::shared_ptr<const Model> model, const SessionOptions& options = {});
  ~Session();

  // The names of the graph's input (one today) and outputs, as in the model file; index i of
  // output_names() is output_shapes()[i] and run_all()'s i-th tensor.
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  // The index of the input or output called `name`; kNotFound naming it and listing the names
  // there are.
  Result<size_t> input_index(const std::string& name) const;
  Result<size_t> output_index(const std::string& name) const;

  const Shape& input_shape() const;   // the session's: SessionOptions::input_shape, or the model's with its batch
  const std::string& device() const;  // where it runs: "cpu" or "cuda:N"
  const std::vector<Shape>& output_shapes() const;

  // Input: the session's input_shape() (NCHW, or plain for non-image inputs), any layout.
  // Returns the first graph output (NCHW for rank 4, else plain). Allocates the returned
  // tensor on every call.
  Result<Tensor> run(const Tensor& input);
  // Every graph output; allocates them on every call.
  Result<std::vector<Tensor>> run_all(const Tensor& input);
  // Writes the graph outputs into `outputs`: one tensor per graph output with the shape
  // output_shapes()[i]; a rank-4 output is written in the tensor's layout (NCHW, or NHWC
  // without conversion). Missing or empty entries are allocated (NCHW / plain), so a vector
  // kept between calls is allocated by the first call only; after that nothing is allocated.
  Status run_into(const Tensor& input, std::vector<Tensor>* outputs);

  // Per-layer wall time of the last run (execution order). A batch run in several runs
  // (images_per_run) gives each layer's time summed over the runs, averaged over the runs that
  // went side by side: the layers still add up to about the batch's wall time.
  const std::vector<LayerTiming>& last_timings() const;
  // Bytes of activation memory the session allocated: the arena when memory is planned, else
  // every tensor plus the shared workspace (device memory for a CUDA session).
  size_t activation_bytes() const;
  // Bytes of the largest convolution workspace.
  size_t workspace_bytes() const;
  // The memory plan (computed also when plan_memory is false, for comparison).
  const MemoryReport& memory_report() const;

 private:
  explicit Session(std::unique_ptr<SessionImpl> impl);
  std::unique_ptr<SessionImpl> impl_;
};

}  // namespace winfer
