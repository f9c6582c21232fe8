// What every backend's session implements behind winfer::Session (engine/include/winfer/session.h):
// the CPU backend (cpu_session.cpp) and the CUDA backend (cuda/cuda_session.cpp). Both share the
// graph's shapes, the memory plan (session_plan.h) and the handling of host inputs and outputs.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "winfer/model.h"
#include "winfer/session.h"
#include "winfer/tensor.h"

namespace winfer {

class SessionImpl {
 public:
  virtual ~SessionImpl() = default;

  std::shared_ptr<const Model> model;
  SessionOptions options;
  std::string device;         // resolved: "cpu" or "cuda:N"
  std::vector<Shape> shapes;  // per graph tensor
  std::vector<Shape> output_shapes;
  std::vector<LayerTiming> timings;
  MemoryReport report;
  // Set by Session::run_into for the length of a run: a second run started on the session
  // meanwhile (from another thread: the header forbids it) is refused instead of sharing the
  // arena and corrupting both.
  std::atomic<bool> running{false};
  // Engine-internal (calibration, engine/src/quantize.cpp), CPU sessions only: when set, called
  // after each layer runs with its node index and output tensors (NHWC for rank 4; sessions
  // made with concat_alias off, so that no output is a slice of another tensor).
  std::function<void(size_t node, const std::vector<Tensor*>& outputs)> layer_observer;

  virtual size_t activation_bytes() const = 0;
  virtual Status run_into(const Tensor& input, std::vector<Tensor>* outputs) = 0;

  // The input has the session's input shape and data; errors name the model's input.
  Status check_input(const Tensor& input) const;
  // Missing or empty outputs are allocated (NCHW / plain); the others must have the output's shape.
  Status prepare_outputs(std::vector<Tensor>* outputs) const;
};

// Tests only (tests/engine/concurrency_test.cpp): `hook` is called by every Session::run_into
// while the session is marked running, just before the run itself, so that a test can hold a
// run in progress (or throw from inside it) deterministically. nullptr, the default: none. Costs
// one atomic load per run.
void set_session_run_hook_for_testing(void (*hook)());

// kInvalidArgument naming `what` when data[0..count) holds NaN or +-Inf (check_numerics).
Status check_finite(const float* data, int64_t count, const std::string& what);

// Host memory the kernel says is available for new allocations without swapping (MemAvailable
// of /proc/meminfo), in bytes; 0 when unknown.
size_t available_host_memory();
// Where a new host allocation must fit: the smaller of MemAvailable and, under an address-space
// limit (RLIMIT_AS, ulimit -v), what is left of it (the limit less VmSize). `what` names it for
// messages ("the 310 MiB left under the address-space limit (ulimit -v) of 977 MiB (667 MiB
// already mapped)"); `hint` is " or raise ulimit -v" for the limit, else empty. known: false
// without /proc and without a limit.
struct HostMemoryRoom {
  bool known = false;
  size_t bytes = 0;
  std::string what;
  std::string hint;
};
HostMemoryRoom host_memory_room();
// kOutOfMemory, before anything is allocated, when a session would need more than is available
// (host_memory_room).
Status check_host_memory(const Model& model, const MemoryReport& report, size_t needed, int64_t batch);

// Options checked for every backend; `device` is the resolved device.
Status check_common_options(const SessionOptions& options);
// The shape of every graph tensor (*shapes, per tensor) for the session's input shape
// (session_input_shape, input_shape.cpp); a layer that does not admit a shape other than the
// declared one is named with both shapes. Every backend's session computes its shapes here.
Status infer_session_shapes(const Model& model, const SessionOptions& options, std::vector<Shape>* shapes);

Result<std::unique_ptr<SessionImpl>> create_cpu_session(std::shared_ptr<const Model> model,
                                                        const SessionOptions& options);
// The memory report of the CPU session create_cpu_session would make, without allocating its
// arena (Session::plan).
Result<MemoryReport> plan_cpu_session(std::shared_ptr<const Model> model, const SessionOptions& options);
// The names conv_algorithm_names() returns for the CPU (other devices: DeviceBackend).
std::vector<std::string> cpu_conv_algorithm_names();

}  // namespace winfer
