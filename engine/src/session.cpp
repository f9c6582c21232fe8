// winfer::Session: picks the backend from SessionOptions::device and forwards to it
// (cpu_session.cpp, cuda/cuda_session.cpp). What both backends share lives here: option
// checks, device names, and the host side of inputs and outputs.
#include "winfer/session.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "engine/src/graph.h"
#include "engine/src/device_backend.h"
#include "engine/src/session_impl.h"
#include "engine/src/split_batch_session.h"
#include "kernels/cpu/cpu_threads.h"
#include "winfer/log.h"

namespace winfer {
namespace {

// "cuda" -> 0, "cuda:3" -> 3; -1 when `device` is not of that form.
int parse_cuda_index(const std::string& device) {
  if (device == "cuda") return 0;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5 || device.size() > 9) return -1;
  int index = 0;
  for (size_t i = 5; i < device.size(); ++i) {
    if (device[i] < '0' || device[i] > '9') return -1;
    index = index * 10 + (device[i] - '0');
  }
  return index;
}

std::atomic<void (*)()> g_run_hook{nullptr};

// Marks a session running for the length of one run_into; clears the mark on every way out.
class RunningMark {
 public:
  explicit RunningMark(std::atomic<bool>* running)
      : running_(running), acquired_(!running->exchange(true, std::memory_order_acquire)) {}
  ~RunningMark() {
    if (acquired_) running_->store(false, std::memory_order_release);
  }
  RunningMark(const RunningMark&) = delete;
  RunningMark& operator=(const RunningMark&) = delete;
  bool acquired() const { return acquired_; }

 private:
  std::atomic<bool>* running_;
  bool acquired_;
};

}  // namespace

void set_session_run_hook_for_testing(void (*hook)()) { g_run_hook.store(hook, std::memory_order_release); }

Status SessionImpl::check_input(const Tensor& input) const {
  const Shape& expected = shapes[model->graph().input];
  if (input.shape() != expected) {
    return shape_mismatch("input '" + model->input_name() + "' has shape " + input.shape().to_string() + ", expected " +
                          expected.to_string() + " (NCHW)");
  }
  if (input.empty()) return invalid_argument("input '" + model->input_name() + "' has no data");
  return Status::Ok();
}

Status SessionImpl::prepare_outputs(std::vector<Tensor>* outputs) const {
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

Status check_finite(const float* data, int64_t count, const std::string& what) {
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(data[i])) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad == 0) return Status::Ok();
  const char* kind = std::isnan(data[first]) ? "NaN" : (data[first] > 0 ? "+Inf" : "-Inf");
  return invalid_argument("check_numerics: " + what + " has " + std::to_string(bad) + " non-finite value(s) of " +
                          std::to_string(count) + " (first: " + kind + " at index " + std::to_string(first) + ")");
}

size_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

HostMemoryRoom host_memory_room() {
  auto in_mib = [](size_t b) { return std::to_string((b + (size_t(1) << 20) - 1) >> 20) + " MiB"; };
  HostMemoryRoom room;
  if (const size_t available = available_host_memory()) {
    room = {true, available, "the " + in_mib(available) + " this machine has available (MemAvailable)", ""};
  }
  // Under ulimit -v every mapping counts, touched or not (code, thread stacks, OpenBLAS's
  // buffers): an allocation past the limit fails however much memory is free.
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return room;
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  if (!(statm >> pages)) return room;
  const size_t used = pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t cap = static_cast<size_t>(limit.rlim_cur);
  const size_t left = cap > used ? cap - used : 0;
  if (room.known && room.bytes <= left) return room;
  return {true, left,
          "the " + in_mib(left) + " left under the address-space limit (ulimit -v) of " + in_mib(cap) + " (" +
              in_mib(used) + " already mapped)",
          " or raise ulimit -v"};
}

namespace {
std::string mib(size_t bytes) { return std::to_string((bytes + (size_t(1) << 20) - 1) >> 20) + " MiB"; }
}  // namespace

Status check_host_memory(const Model& model, const MemoryReport& report, size_t needed, int64_t batch) {
  const HostMemoryRoom room = host_memory_room();
  if (!room.known || needed <= room.bytes) return Status::Ok();
  return out_of_memory(model.path() + ": a session with batch " + std::to_string(batch) + " needs " + mib(needed) +
                       " (activation arena " + mib(report.arena_bytes) + ", packed weights " +
                       mib(report.session_weights_bytes) + "), more than " + room.what + "; use a smaller batch" +
                       room.hint);
}

Status check_host_memory_for(const std::string& what, size_t bytes) {
  const HostMemoryRoom room = host_memory_room();
  if (!room.known || bytes <= room.bytes) return Status::Ok();
  return out_of_memory(what + " needs " + mib(bytes) + ", more than " + room.what + "; use a smaller batch" +
                       room.hint);
}

namespace {

// SessionOptions::arena as far as it can be checked without the plan (its size and alignment
// are checked by the CPU session, which knows the bytes needed).
Status check_arena_options(const SessionOptions& options) {
  if (options.arena == nullptr && options.arena_bytes == 0) return Status::Ok();
  if (options.arena == nullptr) {
    return invalid_argument("SessionOptions::arena_bytes is " + std::to_string(options.arena_bytes) +
                            " but arena is null: give both, or neither for an arena of the session's own");
  }
  if (options.device != "cpu") {
    return unsupported("SessionOptions::arena (memory the caller provides) is supported on device 'cpu' only, not '" +
                       options.device + "'");
  }
  if (!options.plan_memory) {
    return invalid_argument(
        "SessionOptions::arena needs plan_memory: a session without a memory plan allocates every tensor on its own");
  }
  return Status::Ok();
}

}  // namespace

namespace {

// WINFER_NUM_THREADS, when set to a whole number >= 1: the default instead of the affinity count
// (for a test suite that runs processes side by side, or a process that shares its CPUs). Any
// other value is not guessed at: it is named in a warning (once) and the affinity count is used.
int threads_from_environment() {
  const char* text = std::getenv("WINFER_NUM_THREADS");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno == 0 && *end == '\0' && value >= 1 && value <= (1 << 20)) return static_cast<int>(value);
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    log_message(LogLevel::kWarning, std::string("WINFER_NUM_THREADS='") + text +
                                        "' is not a whole number from 1 to 1048576: ignored, the default thread "
                                        "count is the CPUs this process may run on");
  }
  return 0;
}

}  // namespace

int default_thread_count() {
  if (const int from_environment = threads_from_environment(); from_environment > 0) return from_environment;
  return cpu::affinity_cpu_count();
}

Status check_common_options(const SessionOptions& options) {
  if (options.threads < 1) {
    return invalid_argument("threads must be >= 1, got " + std::to_string(options.threads) +
                            " (left unset it is the CPUs this process may run on, " +
                            std::to_string(default_thread_count()) + " here)");
  }
  if (options.batch < 0) return invalid_argument("batch must be >= 1, got " + std::to_string(options.batch));
  WINFER_RETURN_IF_ERROR(check_images_per_run(options));
  return check_arena_options(options);
}

std::vector<std::string> conv_algorithm_names(const std::string& device) {
  if (device == "cpu") return cpu_conv_algorithm_names();
  if (parse_cuda_index(device) >= 0) return cuda_backend().conv_algorithm_names();
  return {};
}

Session::Session(std::unique_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model, const SessionOptions& options) {
  if (!model) return invalid_argument("Session::create: model is null");
  if (model->structure_only()) {
    return invalid_argument(model->path() + ": the model was loaded without weights (structure only)");
  }
  WINFER_RETURN_IF_ERROR(check_common_options(options));
  const Result<Shape> whole = session_input_shape(*model, options);  // before any device is touched
  if (!whole.ok()) return whole.status();
  Result<std::unique_ptr<SessionImpl>> impl = invalid_argument("");
  if (options.device == "cpu") {
    impl = create_split_batch_session(model, options, whole.value());  // null: the whole batch at once
    if (impl.ok() && impl.value() == nullptr) impl = create_cpu_session(std::move(model), options);
  } else if (options.device == "auto") {
    // conv_algorithm "auto" (per-layer timing) exists on the CPU only, so it keeps "auto" there.
    if (cuda_backend().availability().count > 0 && options.conv_algorithm != "auto") {
      impl = cuda_backend().create_session(std::move(model), options, 0);
    } else {  // the CPU, as device "cpu" runs: the default runs of a few images apply
      SessionOptions on_cpu = options;
      on_cpu.device = "cpu";
      impl = create_split_batch_session(model, on_cpu, whole.value());
      if (impl.ok() && impl.value() == nullptr) impl = create_cpu_session(std::move(model), options);
    }
  } else if (const int index = parse_cuda_index(options.device); index >= 0) {
    impl = cuda_backend().create_session(std::move(model), options, index);
  } else {
    return invalid_argument("unknown device '" + options.device + "' (expected cpu, cuda, cuda:N or auto)");
  }
  if (!impl.ok()) return impl.status();
  return std::unique_ptr<Session>(new Session(std::move(impl).value()));
}

const Shape& Session::input_shape() const { return impl_->shapes[impl_->model->graph().input]; }
const std::string& Session::device() const { return impl_->device; }
const std::vector<Shape>& Session::output_shapes() const { return impl_->output_shapes; }
const std::vector<LayerTiming>& Session::last_timings() const { return impl_->timings; }
size_t Session::activation_bytes() const { return impl_->activation_bytes(); }
size_t Session::workspace_bytes() const { return impl_->report.max_workspace_bytes; }
const MemoryReport& Session::memory_report() const { return impl_->report; }

Status Session::run_into(const Tensor& input, std::vector<Tensor>* outputs) {
  if (outputs == nullptr) return invalid_argument("Session::run_into: outputs is null");
  // A flag, not a lock: a second caller is refused at once rather than queued, because running
  // one session from two threads is a bug of the caller's (one session per thread) that a
  // queue would hide. The exchange costs a few nanoseconds; the acquire/release pair also
  // orders one thread's run before the next thread's when a session is handed over.
  const RunningMark mark(&impl_->running);
  if (!mark.acquired()) {
    return invalid_argument(
        "Session::run: this session is already running on another thread; a session runs one inference at a "
        "time: use one session per thread");
  }
  if (void (*hook)() = g_run_hook.load(std::memory_order_acquire)) hook();
  return impl_->run_into(input, outputs);
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
