// The C API (winfer/winfer_c.h) over the C++ one. Every entry point catches everything, so no
// C++ exception crosses into C; failures set the calling thread's last error, which always
// starts with the name of the C function.
//
// Handles are tokens, not addresses: a table of live handles maps each token to its object, so
// that a destroyed, foreign or mistyped handle is refused without ever being dereferenced
// (destroying twice is harmless), and a call in flight keeps its object alive even when another
// thread destroys the handle meanwhile.
#include "winfer/winfer_c.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "winfer/winfer.h"

namespace winfer {

const char* version() { return "0.1.0"; }

}  // namespace winfer

namespace {

struct ModelObject {
  std::shared_ptr<const winfer::Model> model;
  std::vector<std::string> output_names;
};

struct SessionObject {
  std::unique_ptr<winfer::Session> session;
  std::vector<std::string> input_names, output_names;  // kept for the C strings handed out
};

// An options object of the C API: the C++ options behind a lock, so that a config shared
// between threads is never read half-set.
template <typename Options>
struct ConfigObject {
  mutable std::mutex mutex;
  Options options;

  Options copy() const {
    std::lock_guard<std::mutex> lock(mutex);
    return options;
  }
};
using LoadConfigObject = ConfigObject<winfer::LoadOptions>;
using SessionConfigObject = ConfigObject<winfer::SessionOptions>;

// ---- last error ---------------------------------------------------------------------------

thread_local std::string t_last_error;
// Set when even the message could not be allocated (out of memory while reporting an error).
thread_local const char* t_last_error_fallback = nullptr;

void set_last_error(const char* function, const std::string& detail) noexcept {
  try {
    std::string message = std::string(function) + ": " + detail;
    t_last_error.swap(message);
    t_last_error_fallback = nullptr;
  } catch (...) {
    t_last_error_fallback = "winfer: out of memory (while reporting an error)";
  }
}

winfer_status fail(const char* function, winfer_status code, const std::string& detail) {
  set_last_error(function, detail);
  return code;
}

// A C++ status, its message read from the outside in: "winfer_model_load: x.yaml:3: ...".
winfer_status fail(const char* function, const winfer::Status& status) {
  return fail(function, static_cast<winfer_status>(status.code()), status.message());
}

winfer_status null_argument(const char* function, const char* name) {
  return fail(function, WINFER_INVALID_ARGUMENT, std::string(name) + " is NULL");
}

// What an exception's type says, without its what(): the standard library's own texts
// ("basic_string::_M_create", "vector::_M_range_check: __n (which is 5) ...") name C++
// internals, not the caller's problem.
std::string exception_kind(const std::exception& e) {
  if (dynamic_cast<const std::out_of_range*>(&e)) return "std::out_of_range";
  if (dynamic_cast<const std::invalid_argument*>(&e)) return "std::invalid_argument";
  if (dynamic_cast<const std::logic_error*>(&e)) return "std::logic_error";
  if (dynamic_cast<const std::range_error*>(&e)) return "std::range_error";
  if (dynamic_cast<const std::overflow_error*>(&e)) return "std::overflow_error";
  if (dynamic_cast<const std::runtime_error*>(&e)) return "std::runtime_error";
  return "std::exception";
}

// Inside a catch block: sets the last error for the exception being handled and returns its
// status. Never throws (an extern "C" function that let it through would terminate).
winfer_status fail_current_exception(const char* function) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return fail(function, WINFER_OUT_OF_MEMORY, "out of memory");
  } catch (const std::length_error&) {
    // A size beyond what any container can hold: an allocation that cannot succeed.
    return fail(function, WINFER_OUT_OF_MEMORY, "out of memory (a size larger than can be allocated)");
  } catch (const std::system_error& e) {
    return fail(function, WINFER_INTERNAL, "system error: " + e.code().message());
  } catch (const std::exception& e) {
    return fail(function, WINFER_INTERNAL,
                "internal error (an unexpected " + exception_kind(e) + "; a bug in winfer, please report it)");
  } catch (...) {
    return fail(function, WINFER_INTERNAL,
                "internal error (an unexpected non-standard exception; a bug in winfer, please report it)");
  }
}

// Runs `body(function)`, turning any exception into a status. The body gets the C function's
// name as its argument and must use it, never __func__: inside a lambda __func__ is
// "operator()".
template <typename Body>
winfer_status guarded(const char* function, Body&& body) noexcept {
  try {
    return body(function);
  } catch (...) {
    return fail_current_exception(function);
  }
}

// The same for entry points that return a value (a count, a string): `fallback` on exception.
template <typename T, typename Body>
T guarded_value(const char* function, T fallback, Body&& body) noexcept {
  try {
    return body(function);
  } catch (...) {
    fail_current_exception(function);
    return fallback;
  }
}

// ---- handles --------------------------------------------------------------------------------

// A token is (serial << 3) | tag: odd, so never the address of an object, and tagged with its
// kind, so that a model passed as a session is told apart from a destroyed session.
constexpr uintptr_t kTagBits = 3;
constexpr uintptr_t kTagMask = (uintptr_t(1) << kTagBits) - 1;

// What each kind of handle is called in messages, and which function makes it.
struct HandleKind {
  uintptr_t tag;
  const char* argument;  // the parameter's usual name
  const char* type;      // the C type
  const char* creator;
};
constexpr HandleKind kLoadConfigKind{1, "config", "winfer_load_config", "winfer_load_config_create"};
constexpr HandleKind kModelKind{3, "model", "winfer_model", "winfer_model_load"};
constexpr HandleKind kSessionKind{5, "session", "winfer_session", "winfer_session_create"};
constexpr HandleKind kSessionConfigKind{7, "config", "winfer_session_config", "winfer_session_config_create"};
constexpr const HandleKind* kKinds[] = {&kLoadConfigKind, &kModelKind, &kSessionKind, &kSessionConfigKind};

template <typename Object>
const HandleKind& kind_of();
template <>
const HandleKind& kind_of<LoadConfigObject>() {
  return kLoadConfigKind;
}
template <>
const HandleKind& kind_of<ModelObject>() {
  return kModelKind;
}
template <>
const HandleKind& kind_of<SessionObject>() {
  return kSessionKind;
}
template <>
const HandleKind& kind_of<SessionConfigObject>() {
  return kSessionConfigKind;
}

// The live handles of one kind. Serials only grow, so a token is never reused: a stale handle
// cannot reach an object created after it was destroyed. One short critical section per call.
template <typename Object>
class HandleTable {
 public:
  explicit HandleTable(uintptr_t tag) : tag_(tag) {}

  uintptr_t add(std::shared_ptr<Object> object) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uintptr_t token = (++serial_ << kTagBits) | tag_;
    live_.emplace(token, std::move(object));
    return token;
  }
  // The object, or nullptr when `token` is not live. The caller's reference keeps it alive for
  // the length of its call.
  std::shared_ptr<Object> find(uintptr_t token) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(token);
    return it == live_.end() ? nullptr : it->second;
  }
  // Takes the handle out of the table; the object is destroyed when the returned reference and
  // those of calls in flight are dropped, outside the lock. nullptr when `token` is not live.
  std::shared_ptr<Object> remove(uintptr_t token) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(token);
    if (it == live_.end()) return nullptr;
    std::shared_ptr<Object> object = std::move(it->second);
    live_.erase(it);
    return object;
  }

 private:
  const uintptr_t tag_;
  mutable std::mutex mutex_;
  uintptr_t serial_ = 0;
  std::unordered_map<uintptr_t, std::shared_ptr<Object>> live_;
};

// Never destroyed: a handle may be used or destroyed by another thread while the process
// exits, after static destructors would have run.
template <typename Object>
HandleTable<Object>& table() {
  static auto* table = new HandleTable<Object>(kind_of<Object>().tag);
  return *table;
}

uintptr_t token_of(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

// Why `handle` (not live in the table of `kind`) is refused.
std::string not_live(const void* handle, const HandleKind& kind) {
  const uintptr_t tag = token_of(handle) & kTagMask;
  for (const HandleKind* other : kKinds) {
    if (other->tag == tag && tag != kind.tag) {
      return std::string(kind.argument) + " is a " + other->type + " handle, not a " + kind.type;
    }
  }
  return std::string(kind.argument) + " is not a live " + kind.type + " (destroyed already, or not returned by " +
         kind.creator + ")";
}

// The object behind a handle, or WINFER_INVALID_ARGUMENT naming the function.
template <typename Object>
winfer_status find_handle(const char* function, const void* handle, std::shared_ptr<Object>* object) {
  const HandleKind& kind = kind_of<Object>();
  if (handle == nullptr) return null_argument(function, kind.argument);
  *object = table<Object>().find(token_of(handle));
  if (*object) return WINFER_OK;
  return fail(function, WINFER_INVALID_ARGUMENT, not_live(handle, kind));
}

winfer_status find_model(const char* function, const winfer_model* handle, std::shared_ptr<ModelObject>* object) {
  return find_handle(function, handle, object);
}
winfer_status find_session(const char* function, const winfer_session* handle, std::shared_ptr<SessionObject>* object) {
  return find_handle(function, handle, object);
}

// winfer_*_destroy: NULL does nothing; a handle that is not live sets the last error.
template <typename Object>
void destroy_handle(const char* function, const void* handle) {
  if (handle == nullptr) return;
  guarded(function, [&](const char* fn) {
    std::shared_ptr<Object> object = table<Object>().remove(token_of(handle));
    if (!object)
      return fail(fn, WINFER_INVALID_ARGUMENT, not_live(handle, kind_of<Object>()) + "; nothing was destroyed");
    return WINFER_OK;  // `object` goes here, or when the last call in flight with it returns
  });
}

// ---- helpers --------------------------------------------------------------------------------

winfer_status write_shape(const char* function, const winfer::Shape& shape, int64_t* dims, int capacity, int* rank) {
  if (rank == nullptr) return null_argument(function, "rank");
  *rank = shape.rank();
  if (shape.rank() > capacity) {
    return fail(function, WINFER_INVALID_ARGUMENT,
                "the shape " + shape.to_string() + " has " + std::to_string(shape.rank()) + " dims, capacity is " +
                    std::to_string(capacity));
  }
  if (dims == nullptr && shape.rank() > 0) return null_argument(function, "dims");
  for (int i = 0; i < shape.rank(); ++i) dims[i] = shape[i];
  return WINFER_OK;
}

winfer::LoadOptions load_options(const winfer_load_options* options) {
  winfer::LoadOptions result;
  if (options == nullptr) return result;
  if (options->weights_path != nullptr) result.weights_path = options->weights_path;
  if (options->use_random_weights) result.random_weights_seed = options->random_seed;
  result.fuse = options->fuse != 0;
  if (options->pack_for != nullptr) result.pack_for = options->pack_for;
  return result;
}

winfer_status finish_model(const char* function, winfer::Result<std::shared_ptr<const winfer::Model>> loaded,
                           winfer_model** model) {
  if (!loaded.ok()) return fail(function, loaded.status());
  auto object = std::make_shared<ModelObject>();
  object->model = std::move(loaded).value();
  object->output_names = object->model->output_names();
  *model = reinterpret_cast<winfer_model*>(table<ModelObject>().add(std::move(object)));
  return WINFER_OK;
}

winfer::SessionOptions session_options(const winfer_session_options* options) {
  winfer::SessionOptions o;
  if (options == nullptr) return o;
  if (options->device != nullptr) o.device = options->device;
  if (options->conv_algorithm != nullptr) o.conv_algorithm = options->conv_algorithm;
  o.threads = options->threads;
  o.batch = options->batch;
  o.memory_budget = options->memory_budget;
  if (options->autotune_cache != nullptr) o.autotune_cache = options->autotune_cache;
  o.plan_memory = options->plan_memory != 0;
  return o;
}

winfer_status finish_session(const char* function, const ModelObject& model, const winfer::SessionOptions& options,
                             winfer_session** session) {
  auto created = winfer::Session::create(model.model, options);
  if (!created.ok()) return fail(function, created.status());
  auto handle = std::make_shared<SessionObject>();
  handle->session = std::move(created).value();
  handle->input_names = handle->session->input_names();
  handle->output_names = handle->session->output_names();
  *session = reinterpret_cast<winfer_session*>(table<SessionObject>().add(std::move(handle)));
  return WINFER_OK;
}

// The options of a config handle (NULL: the defaults), copied under its lock.
template <typename Object, typename Options>
winfer_status config_options(const char* function, const void* config, Options* options) {
  if (config == nullptr) return WINFER_OK;
  std::shared_ptr<Object> object;
  if (winfer_status s = find_handle(function, config, &object)) return s;
  *options = object->copy();
  return WINFER_OK;
}

// A setter: `set(options)` changes the config's options under its lock, or returns the reason
// it refuses the value (the config is then unchanged).
template <typename Object, typename Set>
winfer_status set_option(const char* function, const void* config, Set&& set) {
  return guarded(function, [&](const char* fn) {
    std::shared_ptr<Object> object;
    if (winfer_status s = find_handle(fn, config, &object)) return s;
    std::lock_guard<std::mutex> lock(object->mutex);
    const std::string refused = set(object->options);
    if (!refused.empty()) return fail(fn, WINFER_INVALID_ARGUMENT, refused);
    return WINFER_OK;
  });
}

// A flag of a config: 0 or 1, nothing else (a C int that is neither is most likely a mistake).
template <typename Object, typename Options>
winfer_status set_flag(const char* function, const void* config, const char* name, int value, bool Options::*field) {
  return set_option<Object>(function, config, [&](Options& o) -> std::string {
    if (value != 0 && value != 1) return std::string(name) + " must be 0 or 1, got " + std::to_string(value);
    o.*field = value == 1;
    return "";
  });
}

// "cpu", "auto", "cuda" or "cuda:N": the forms Session::create knows (whether device N exists is
// its business).
bool is_device_name(const std::string& device) {
  if (device == "cpu" || device == "auto" || device == "cuda") return true;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5 || device.size() > 9) return false;
  return device.find_first_not_of("0123456789", 5) == std::string::npos;
}

template <typename Object, typename Handle>
winfer_status create_config(const char* function, Handle** config) {
  return guarded(function, [&](const char* fn) {
    if (config == nullptr) return null_argument(fn, "config");
    *config = reinterpret_cast<Handle*>(table<Object>().add(std::make_shared<Object>()));
    return WINFER_OK;
  });
}

// A view of the caller's buffer as output `index` of the session; checks its size.
winfer_status bind_output(const char* function, const winfer::Session& session, size_t index, float* buffer,
                          size_t count, winfer::Tensor* out) {
  const winfer::Shape& shape = session.output_shapes()[index];
  if (buffer == nullptr) return fail(function, WINFER_INVALID_ARGUMENT, "output " + std::to_string(index) + " is NULL");
  if (count != static_cast<size_t>(shape.numel())) {
    return fail(function, WINFER_SHAPE_MISMATCH,
                "output " + std::to_string(index) + " has shape " + shape.to_string() + " (" +
                    std::to_string(shape.numel()) + " floats), the buffer holds " + std::to_string(count));
  }
  *out = winfer::Tensor::view(buffer, shape, shape.rank() == 4 ? winfer::Layout::kNCHW : winfer::Layout::kPlain);
  return WINFER_OK;
}

// Runs the session on the caller's input into `outputs` (views of the caller's buffers; empty
// entries are allocated by the session). `outputs` is the call's own: two calls on one session
// share nothing here, and Session::run_into refuses the second of two concurrent runs.
winfer_status run_with(const char* function, winfer::Session& session, const float* input, size_t input_count,
                       std::vector<winfer::Tensor>* outputs) {
  const winfer::Shape& shape = session.input_shape();
  if (input == nullptr) return null_argument(function, "input");
  if (input_count != static_cast<size_t>(shape.numel())) {
    return fail(function, WINFER_SHAPE_MISMATCH,
                "the input has shape " + shape.to_string() + " (" + std::to_string(shape.numel()) + " floats), got " +
                    std::to_string(input_count));
  }
  // The input is only read; Tensor::view takes a non-const pointer for both directions.
  const winfer::Tensor in = winfer::Tensor::view(const_cast<float*>(input), shape,
                                                 shape.rank() == 4 ? winfer::Layout::kNCHW : winfer::Layout::kPlain);
  const winfer::Status status = session.run_into(in, outputs);
  if (!status.ok()) return fail(function, status);
  return WINFER_OK;
}

// The largest model description winfer_model_load_from_memory takes: the limit Model::load
// puts on a YAML file. Checked before the text is copied, so that a wrong yaml_size cannot make
// the copy read far past the buffer.
constexpr size_t kMaxYamlBytes = size_t(winfer::kMaxModelTextBytes);

// The C form of a memory report.
void fill_report(const winfer::MemoryReport& r, winfer_memory_report* report) {
  report->weights_bytes = r.weights_bytes;
  report->packed_weights_bytes = r.packed_weights_bytes;
  report->session_weights_bytes = r.session_weights_bytes;
  report->activations_sum_bytes = r.activations_sum_bytes;
  report->activations_lower_bound_bytes = r.activations_lower_bound_bytes;
  report->arena_bytes = r.arena_bytes;
  report->max_workspace_bytes = r.max_workspace_bytes;
  report->session_bytes = r.session_bytes;
}

// Loads a model from the caller's buffers after checking their sizes.
winfer_status load_from_memory(const char* fn, const char* yaml, size_t yaml_size, const void* weights,
                               size_t weights_size, const winfer::LoadOptions& options, winfer_model** model) {
  if (yaml == nullptr) return null_argument(fn, "yaml");
  if (yaml_size > kMaxYamlBytes) {
    return fail(fn, WINFER_INVALID_ARGUMENT,
                "yaml_size is " + std::to_string(yaml_size) + " bytes, more than the limit of " +
                    std::to_string(kMaxYamlBytes) +
                    " (16 MiB) of a model description; pass large weights as safetensors bytes (weights)");
  }
  if (weights == nullptr && weights_size > 0) return null_argument(fn, "weights");
  if (weights_size > static_cast<size_t>(std::numeric_limits<std::ptrdiff_t>::max())) {
    return fail(fn, WINFER_INVALID_ARGUMENT,
                "weights_size is " + std::to_string(weights_size) +
                    " bytes, more than any buffer can hold (a negative size converted to size_t?)");
  }
  return finish_model(fn, winfer::Model::load_from_memory(std::string(yaml, yaml_size), weights, weights_size, options),
                      model);
}

// Name `index` of one of a session's name lists (kept in its SessionObject), or NULL.
const char* session_name(const char* function, const winfer_session* session, size_t index, const char* what,
                         std::vector<std::string> SessionObject::*names) {
  return guarded_value(function, static_cast<const char*>(nullptr), [&](const char* fn) -> const char* {
    std::shared_ptr<SessionObject> object;
    if (find_session(fn, session, &object) != WINFER_OK) return nullptr;
    const std::vector<std::string>& list = (*object).*names;
    if (index >= list.size()) {
      fail(fn, WINFER_INVALID_ARGUMENT,
           std::string(what) + " " + std::to_string(index) + " does not exist (the session has " +
               std::to_string(list.size()) + ")");
      return nullptr;
    }
    return list[index].c_str();
  });
}

constexpr size_t kUnbound = ~size_t(0);

// "'data', 'logits'": names for a message.
std::string quoted(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "'" : ", '") + n + "'";
  return text;
}

// Matches the caller's `given` names to the session's `names`: (*at)[i] is the index into
// `given` of names[i], or kUnbound. Unknown names are WINFER_NOT_FOUND naming the valid ones;
// a name given twice, or (when every one must be bound) one missing, WINFER_INVALID_ARGUMENT.
winfer_status match_names(const char* fn, const char* what, const std::vector<std::string>& names,
                          const char* const* given, size_t count, bool bind_all, std::vector<size_t>* at) {
  at->assign(names.size(), kUnbound);
  for (size_t k = 0; k < count; ++k) {
    if (given[k] == nullptr)
      return fail(fn, WINFER_INVALID_ARGUMENT, std::string(what) + " name " + std::to_string(k) + " is NULL");
    size_t i = 0;
    while (i < names.size() && names[i] != given[k]) ++i;
    if (i == names.size()) {
      return fail(
          fn, WINFER_NOT_FOUND,
          "no " + std::string(what) + " named '" + given[k] + "' (the session's " + what + "s: " + quoted(names) + ")");
    }
    if ((*at)[i] != kUnbound) {
      return fail(fn, WINFER_INVALID_ARGUMENT,
                  std::string(what) + " '" + names[i] + "' is bound twice (entries " + std::to_string((*at)[i]) +
                      " and " + std::to_string(k) + ")");
    }
    (*at)[i] = k;
  }
  for (size_t i = 0; bind_all && i < names.size(); ++i) {
    if ((*at)[i] == kUnbound) {
      return fail(
          fn, WINFER_INVALID_ARGUMENT,
          std::string(what) + " '" + names[i] + "' is not bound (bind every " + what + ": " + quoted(names) + ")");
    }
  }
  return WINFER_OK;
}

struct CLogCallback {
  winfer_log_callback callback;
  void* user_data;
};

void c_log_trampoline(winfer::LogLevel level, const char* message, void* user_data) {
  const auto* c = static_cast<const CLogCallback*>(user_data);
  c->callback(static_cast<winfer_log_level>(level), message, c->user_data);
}

}  // namespace

extern "C" {

const char* winfer_version(void) { return winfer::version(); }

int winfer_default_thread_count(void) { return winfer::default_thread_count(); }

const char* winfer_status_name(winfer_status status) {
  if (status == WINFER_OK) return "ok";
  if (status < WINFER_OK || status > WINFER_DEVICE_ERROR) return "unknown status";
  return winfer::error_code_name(static_cast<winfer::ErrorCode>(status));
}

const char* winfer_last_error(void) {
  return t_last_error_fallback != nullptr ? t_last_error_fallback : t_last_error.c_str();
}

void winfer_set_log_callback(winfer_log_callback callback, void* user_data) {
  static_assert(static_cast<int>(winfer::LogLevel::kOff) == WINFER_LOG_OFF, "log levels must agree");
  guarded(__func__, [&](const char*) {
    static std::mutex mutex;
    static std::unique_ptr<CLogCallback> current;
    std::lock_guard<std::mutex> lock(mutex);
    if (callback == nullptr) {
      winfer::set_log_callback(nullptr, nullptr);
      current.reset();
      return WINFER_OK;
    }
    auto next = std::make_unique<CLogCallback>(CLogCallback{callback, user_data});
    winfer::set_log_callback(&c_log_trampoline, next.get());
    current = std::move(next);  // set_log_callback returned: the old one is no longer running
    return WINFER_OK;
  });
}

void winfer_set_log_level(winfer_log_level level) {
  // A C caller may pass any int; reading it as the enum would be undefined behaviour in C++
  // (UBSan: "not a valid value for type"), so its bytes are read as the int they are.
  static_assert(sizeof(winfer_log_level) == sizeof(int), "winfer_log_level is an int-sized enum");
  int value = 0;
  std::memcpy(&value, &level, sizeof value);
  if (value < WINFER_LOG_DEBUG || value > WINFER_LOG_OFF) {
    fail(__func__, WINFER_INVALID_ARGUMENT,
         "level " + std::to_string(value) + " is not a winfer_log_level (0 .. 4); ignored");
    return;
  }
  winfer::set_log_level(static_cast<winfer::LogLevel>(value));
}

void winfer_load_options_init(winfer_load_options* options) {
  if (options == nullptr) {
    null_argument(__func__, "options");
    return;
  }
  options->weights_path = nullptr;
  options->use_random_weights = 0;
  options->random_seed = 0;
  options->fuse = 1;
  options->pack_for = nullptr;
}

winfer_status winfer_model_load(const char* yaml_path, const winfer_load_options* options, winfer_model** model) {
  return guarded(__func__, [&](const char* fn) {
    if (model == nullptr) return null_argument(fn, "model");
    *model = nullptr;
    if (yaml_path == nullptr) return null_argument(fn, "yaml_path");
    return finish_model(fn, winfer::Model::load(yaml_path, load_options(options)), model);
  });
}

winfer_status winfer_model_load_from_memory(const char* yaml, size_t yaml_size, const void* weights,
                                            size_t weights_size, const winfer_load_options* options,
                                            winfer_model** model) {
  return guarded(__func__, [&](const char* fn) {
    if (model == nullptr) return null_argument(fn, "model");
    *model = nullptr;
    return load_from_memory(fn, yaml, yaml_size, weights, weights_size, load_options(options), model);
  });
}

void winfer_model_destroy(winfer_model* model) { destroy_handle<ModelObject>(__func__, model); }

const char* winfer_model_name(const winfer_model* model) {
  return guarded_value(__func__, "", [&](const char* fn) -> const char* {
    std::shared_ptr<ModelObject> object;
    if (find_model(fn, model, &object) != WINFER_OK) return "";
    return object->model->name().c_str();  // the table holds the model until it is destroyed
  });
}

winfer_status winfer_model_input_shape(const winfer_model* model, int64_t* dims, int capacity, int* rank) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<ModelObject> object;
    if (winfer_status s = find_model(fn, model, &object)) return s;
    return write_shape(fn, object->model->input_shape(), dims, capacity, rank);
  });
}

size_t winfer_model_output_count(const winfer_model* model) {
  return guarded_value(__func__, size_t(0), [&](const char* fn) -> size_t {
    std::shared_ptr<ModelObject> object;
    if (find_model(fn, model, &object) != WINFER_OK) return 0;
    return object->output_names.size();
  });
}

const char* winfer_model_output_name(const winfer_model* model, size_t index) {
  return guarded_value(__func__, static_cast<const char*>(nullptr), [&](const char* fn) -> const char* {
    std::shared_ptr<ModelObject> object;
    if (find_model(fn, model, &object) != WINFER_OK) return nullptr;
    if (index >= object->output_names.size()) {
      fail(fn, WINFER_INVALID_ARGUMENT,
           "output " + std::to_string(index) + " does not exist (the model has " +
               std::to_string(object->output_names.size()) + ")");
      return nullptr;
    }
    return object->output_names[index].c_str();
  });
}

winfer_status winfer_model_output_shape(const winfer_model* model, size_t index, int64_t* dims, int capacity,
                                        int* rank) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<ModelObject> object;
    if (winfer_status s = find_model(fn, model, &object)) return s;
    const std::vector<winfer::Shape> shapes = object->model->output_shapes();
    if (index >= shapes.size()) {
      return fail(
          fn, WINFER_INVALID_ARGUMENT,
          "output " + std::to_string(index) + " does not exist (the model has " + std::to_string(shapes.size()) + ")");
    }
    return write_shape(fn, shapes[index], dims, capacity, rank);
  });
}

const char* winfer_model_labels_path(const winfer_model* model) {
  return guarded_value(__func__, "", [&](const char* fn) -> const char* {
    std::shared_ptr<ModelObject> object;
    if (find_model(fn, model, &object) != WINFER_OK) return "";
    return object->model->labels_path().c_str();
  });
}

void winfer_session_options_init(winfer_session_options* options) {
  if (options == nullptr) {
    null_argument(__func__, "options");
    return;
  }
  options->device = "cpu";
  options->conv_algorithm = "im2win";
  options->threads = winfer::default_thread_count();
  options->batch = 0;
  options->memory_budget = 0;
  options->autotune_cache = nullptr;
  options->plan_memory = 1;
}

winfer_status winfer_session_create(const winfer_model* model, const winfer_session_options* options,
                                    winfer_session** session) {
  return guarded(__func__, [&](const char* fn) {
    if (session == nullptr) return null_argument(fn, "session");
    *session = nullptr;
    std::shared_ptr<ModelObject> object;
    if (winfer_status s = find_model(fn, model, &object)) return s;
    return finish_session(fn, *object, session_options(options), session);
  });
}

void winfer_session_destroy(winfer_session* session) { destroy_handle<SessionObject>(__func__, session); }

winfer_status winfer_session_input_shape(const winfer_session* session, int64_t* dims, int capacity, int* rank) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<SessionObject> object;
    if (winfer_status s = find_session(fn, session, &object)) return s;
    return write_shape(fn, object->session->input_shape(), dims, capacity, rank);
  });
}

size_t winfer_session_output_count(const winfer_session* session) {
  return guarded_value(__func__, size_t(0), [&](const char* fn) -> size_t {
    std::shared_ptr<SessionObject> object;
    if (find_session(fn, session, &object) != WINFER_OK) return 0;
    return object->session->output_shapes().size();
  });
}

winfer_status winfer_session_output_shape(const winfer_session* session, size_t index, int64_t* dims, int capacity,
                                          int* rank) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<SessionObject> object;
    if (winfer_status s = find_session(fn, session, &object)) return s;
    const std::vector<winfer::Shape>& shapes = object->session->output_shapes();
    if (index >= shapes.size()) {
      return fail(fn, WINFER_INVALID_ARGUMENT,
                  "output " + std::to_string(index) + " does not exist (the session has " +
                      std::to_string(shapes.size()) + ")");
    }
    return write_shape(fn, shapes[index], dims, capacity, rank);
  });
}

winfer_status winfer_session_run(winfer_session* session, const float* input, size_t input_count, float* output,
                                 size_t output_count) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<SessionObject> object;
    if (winfer_status s = find_session(fn, session, &object)) return s;
    if (output == nullptr) return null_argument(fn, "output");
    // Only the first output is the caller's; the session allocates the others (empty entries).
    std::vector<winfer::Tensor> outputs(1);
    if (winfer_status s = bind_output(fn, *object->session, 0, output, output_count, &outputs[0])) return s;
    return run_with(fn, *object->session, input, input_count, &outputs);
  });
}

winfer_status winfer_session_run_all(winfer_session* session, const float* input, size_t input_count,
                                     float* const* outputs, const size_t* output_counts) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<SessionObject> object;
    if (winfer_status s = find_session(fn, session, &object)) return s;
    if (outputs == nullptr) return null_argument(fn, "outputs");
    if (output_counts == nullptr) return null_argument(fn, "output_counts");
    std::vector<winfer::Tensor> views(object->session->output_shapes().size());
    for (size_t i = 0; i < views.size(); ++i) {
      if (winfer_status s = bind_output(fn, *object->session, i, outputs[i], output_counts[i], &views[i])) return s;
    }
    return run_with(fn, *object->session, input, input_count, &views);
  });
}

winfer_status winfer_session_memory_report(const winfer_session* session, winfer_memory_report* report) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<SessionObject> object;
    if (winfer_status s = find_session(fn, session, &object)) return s;
    if (report == nullptr) return null_argument(fn, "report");
    fill_report(object->session->memory_report(), report);
    return WINFER_OK;
  });
}

size_t winfer_session_layer_count(const winfer_session* session) {
  return guarded_value(__func__, size_t(0), [&](const char* fn) -> size_t {
    std::shared_ptr<SessionObject> object;
    if (find_session(fn, session, &object) != WINFER_OK) return 0;
    return object->session->last_timings().size();
  });
}

winfer_status winfer_session_layer_timing(const winfer_session* session, size_t index, const char** name,
                                          const char** type, const char** kernel, double* milliseconds) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<SessionObject> object;
    if (winfer_status s = find_session(fn, session, &object)) return s;
    const std::vector<winfer::LayerTiming>& timings = object->session->last_timings();
    if (index >= timings.size()) {
      return fail(fn, WINFER_INVALID_ARGUMENT,
                  "layer " + std::to_string(index) + " does not exist (the session has " +
                      std::to_string(timings.size()) + ")");
    }
    const winfer::LayerTiming& t = timings[index];
    if (name) *name = t.name.c_str();
    if (type) *type = t.type.c_str();
    if (kernel) *kernel = t.kernel.c_str();
    if (milliseconds) *milliseconds = t.milliseconds;
    return WINFER_OK;
  });
}

size_t winfer_session_conv_choice_count(const winfer_session* session) {
  return guarded_value(__func__, size_t(0), [&](const char* fn) -> size_t {
    std::shared_ptr<SessionObject> object;
    if (find_session(fn, session, &object) != WINFER_OK) return 0;
    return object->session->memory_report().conv_choices.size();
  });
}

winfer_status winfer_session_conv_choice(const winfer_session* session, size_t index, const char** layer,
                                         const char** algorithm, const char** reason) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<SessionObject> object;
    if (winfer_status s = find_session(fn, session, &object)) return s;
    const std::vector<winfer::ConvChoice>& choices = object->session->memory_report().conv_choices;
    if (index >= choices.size()) {
      return fail(fn, WINFER_INVALID_ARGUMENT,
                  "choice " + std::to_string(index) + " does not exist (the session has " +
                      std::to_string(choices.size()) + ")");
    }
    if (layer) *layer = choices[index].layer.c_str();
    if (algorithm) *algorithm = choices[index].algorithm.c_str();
    if (reason) *reason = choices[index].reason.c_str();
    return WINFER_OK;
  });
}

// ---- configs ------------------------------------------------------------------------------

winfer_status winfer_load_config_create(winfer_load_config** config) {
  return create_config<LoadConfigObject>(__func__, config);
}

void winfer_load_config_destroy(winfer_load_config* config) { destroy_handle<LoadConfigObject>(__func__, config); }

winfer_status winfer_load_config_set_weights_path(winfer_load_config* config, const char* path) {
  return set_option<LoadConfigObject>(__func__, config, [&](winfer::LoadOptions& o) {
    o.weights_path = path != nullptr ? path : "";
    return std::string();
  });
}

winfer_status winfer_load_config_set_random_weights(winfer_load_config* config, int enable, uint64_t seed) {
  return set_option<LoadConfigObject>(__func__, config, [&](winfer::LoadOptions& o) -> std::string {
    if (enable != 0 && enable != 1) return "enable must be 0 or 1, got " + std::to_string(enable);
    o.random_weights_seed.reset();
    if (enable == 1) o.random_weights_seed = seed;
    return "";
  });
}

winfer_status winfer_load_config_set_fuse(winfer_load_config* config, int fuse) {
  return set_flag<LoadConfigObject>(__func__, config, "fuse", fuse, &winfer::LoadOptions::fuse);
}

winfer_status winfer_load_config_set_pack_for(winfer_load_config* config, const char* algorithm) {
  return set_option<LoadConfigObject>(__func__, config, [&](winfer::LoadOptions& o) -> std::string {
    if (algorithm == nullptr) return "algorithm is NULL (\"\" keeps the OIHW weights; the default is \"im2win\")";
    o.pack_for = algorithm;  // an unknown name is refused by the load, with the names there are
    return "";
  });
}

winfer_status winfer_load_config_set_confine_to(winfer_load_config* config, const char* folder) {
  return set_option<LoadConfigObject>(__func__, config, [&](winfer::LoadOptions& o) {
    o.confine_to = folder != nullptr ? folder : "";
    return std::string();
  });
}

winfer_status winfer_model_load_with_config(const char* yaml_path, const winfer_load_config* config,
                                            winfer_model** model) {
  return guarded(__func__, [&](const char* fn) {
    if (model == nullptr) return null_argument(fn, "model");
    *model = nullptr;
    if (yaml_path == nullptr) return null_argument(fn, "yaml_path");
    winfer::LoadOptions options;
    if (winfer_status s = config_options<LoadConfigObject>(fn, config, &options)) return s;
    return finish_model(fn, winfer::Model::load(yaml_path, options), model);
  });
}

winfer_status winfer_model_load_from_memory_with_config(const char* yaml, size_t yaml_size, const void* weights,
                                                        size_t weights_size, const winfer_load_config* config,
                                                        winfer_model** model) {
  return guarded(__func__, [&](const char* fn) {
    if (model == nullptr) return null_argument(fn, "model");
    *model = nullptr;
    winfer::LoadOptions options;
    if (winfer_status s = config_options<LoadConfigObject>(fn, config, &options)) return s;
    return load_from_memory(fn, yaml, yaml_size, weights, weights_size, options, model);
  });
}

winfer_status winfer_session_config_create(winfer_session_config** config) {
  return create_config<SessionConfigObject>(__func__, config);
}

void winfer_session_config_destroy(winfer_session_config* config) {
  destroy_handle<SessionConfigObject>(__func__, config);
}

winfer_status winfer_session_config_set_device(winfer_session_config* config, const char* device) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) -> std::string {
    if (device == nullptr) return "device is NULL (\"cpu\" is the default)";
    if (!is_device_name(device)) {
      return "unknown device '" + std::string(device) + "' (expected cpu, cuda, cuda:N or auto)";
    }
    o.device = device;
    return "";
  });
}

winfer_status winfer_session_config_set_conv_algorithm(winfer_session_config* config, const char* algorithm) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) -> std::string {
    if (algorithm == nullptr || *algorithm == '\0') return "algorithm is NULL or empty (\"im2win\" is the default)";
    o.conv_algorithm = algorithm;  // the device's own list is checked when the session is created
    return "";
  });
}

winfer_status winfer_session_config_set_threads(winfer_session_config* config, int threads) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) -> std::string {
    if (threads < 1) {
      return "threads must be >= 1, got " + std::to_string(threads) +
             " (the default is winfer_default_thread_count(), " + std::to_string(winfer::default_thread_count()) +
             " here)";
    }
    o.threads = threads;
    return "";
  });
}

winfer_status winfer_session_config_set_batch(winfer_session_config* config, int64_t batch) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) -> std::string {
    if (batch < 0) return "batch must be >= 1 (or 0 for the model's), got " + std::to_string(batch);
    o.batch = batch;
    return "";
  });
}

winfer_status winfer_session_config_set_images_per_run(winfer_session_config* config, int64_t images) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) -> std::string {
    static_assert(WINFER_IMAGES_PER_RUN_AUTO == winfer::SessionOptions::kImagesPerRunAuto, "the C API's value");
    if (images < 0 && images != WINFER_IMAGES_PER_RUN_AUTO)
      return "images_per_run must be >= 1 (or 0 for the whole batch in one run, WINFER_IMAGES_PER_RUN_AUTO = -1 for "
             "the engine's choice), got " +
             std::to_string(images);
    o.images_per_run = images;
    return "";
  });
}

winfer_status winfer_session_config_set_input_shape(winfer_session_config* config, const int64_t* dims, size_t rank) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) -> std::string {
    if (dims == nullptr && rank != 0) return "dims is NULL but rank is " + std::to_string(rank);
    if (rank > 8) return "rank must be <= 8 (or 0 for the model's shape), got " + std::to_string(rank);
    std::vector<int64_t> shape(dims, dims + rank);
    for (size_t d = 0; d < rank; ++d) {
      if (shape[d] < 1 || shape[d] > winfer::Model::kMaxInputDim) {
        return "input shape " + winfer::Shape(shape).to_string() + ": dim " + std::to_string(d) + " is " +
               std::to_string(shape[d]) + "; every dim must be in 1..16777216 (2^24)";
      }
    }
    o.input_shape = std::move(shape);
    return "";
  });
}

winfer_status winfer_session_config_set_memory_budget(winfer_session_config* config, size_t bytes) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) {
    o.memory_budget = bytes;
    return std::string();
  });
}

winfer_status winfer_session_config_set_autotune_cache(winfer_session_config* config, const char* path) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) {
    o.autotune_cache = path != nullptr ? path : "";
    return std::string();
  });
}

winfer_status winfer_session_config_set_plan_memory(winfer_session_config* config, int plan_memory) {
  return set_flag<SessionConfigObject>(__func__, config, "plan_memory", plan_memory,
                                       &winfer::SessionOptions::plan_memory);
}

winfer_status winfer_session_config_set_poison_unused_memory(winfer_session_config* config, int poison) {
  return set_flag<SessionConfigObject>(__func__, config, "poison", poison,
                                       &winfer::SessionOptions::poison_unused_memory);
}

winfer_status winfer_session_config_set_concat_alias(winfer_session_config* config, int alias) {
  return set_flag<SessionConfigObject>(__func__, config, "alias", alias, &winfer::SessionOptions::concat_alias);
}

winfer_status winfer_session_config_set_allow_tf32(winfer_session_config* config, int allow) {
  return set_flag<SessionConfigObject>(__func__, config, "allow", allow, &winfer::SessionOptions::allow_tf32);
}

winfer_status winfer_session_config_set_check_numerics(winfer_session_config* config, int check) {
  return set_flag<SessionConfigObject>(__func__, config, "check", check, &winfer::SessionOptions::check_numerics);
}

winfer_status winfer_session_config_set_arena(winfer_session_config* config, void* arena, size_t bytes) {
  return set_option<SessionConfigObject>(__func__, config, [&](winfer::SessionOptions& o) -> std::string {
    if (arena == nullptr && bytes != 0) return "arena is NULL but bytes is " + std::to_string(bytes);
    const uintptr_t misaligned = reinterpret_cast<uintptr_t>(arena) % WINFER_ARENA_ALIGNMENT;
    if (misaligned != 0) {
      return "arena is not aligned to WINFER_ARENA_ALIGNMENT (" + std::to_string(WINFER_ARENA_ALIGNMENT) +
             " bytes): its address modulo " + std::to_string(WINFER_ARENA_ALIGNMENT) + " is " +
             std::to_string(misaligned) + " (allocate it with aligned_alloc)";
    }
    o.arena = arena;
    o.arena_bytes = bytes;
    return "";
  });
}

winfer_status winfer_session_create_with_config(const winfer_model* model, const winfer_session_config* config,
                                                winfer_session** session) {
  return guarded(__func__, [&](const char* fn) {
    if (session == nullptr) return null_argument(fn, "session");
    *session = nullptr;
    std::shared_ptr<ModelObject> object;
    if (winfer_status s = find_model(fn, model, &object)) return s;
    winfer::SessionOptions options;
    if (winfer_status s = config_options<SessionConfigObject>(fn, config, &options)) return s;
    return finish_session(fn, *object, options, session);
  });
}

winfer_status winfer_session_plan(const winfer_model* model, const winfer_session_config* config,
                                  winfer_memory_report* report) {
  return guarded(__func__, [&](const char* fn) {
    if (report == nullptr) return null_argument(fn, "report");
    std::shared_ptr<ModelObject> object;
    if (winfer_status s = find_model(fn, model, &object)) return s;
    winfer::SessionOptions options;
    if (winfer_status s = config_options<SessionConfigObject>(fn, config, &options)) return s;
    auto plan = winfer::Session::plan(object->model, options);
    if (!plan.ok()) return fail(fn, plan.status());
    fill_report(plan.value(), report);
    return WINFER_OK;
  });
}

// ---- names ----------------------------------------------------------------------------------

size_t winfer_model_input_count(const winfer_model* model) {
  return guarded_value(__func__, size_t(0), [&](const char* fn) -> size_t {
    std::shared_ptr<ModelObject> object;
    return find_model(fn, model, &object) == WINFER_OK ? 1 : 0;
  });
}

const char* winfer_model_input_name(const winfer_model* model, size_t index) {
  return guarded_value(__func__, static_cast<const char*>(nullptr), [&](const char* fn) -> const char* {
    std::shared_ptr<ModelObject> object;
    if (find_model(fn, model, &object) != WINFER_OK) return nullptr;
    if (index >= 1) {
      fail(fn, WINFER_INVALID_ARGUMENT, "input " + std::to_string(index) + " does not exist (the model has 1)");
      return nullptr;
    }
    return object->model->input_name().c_str();
  });
}

size_t winfer_session_input_count(const winfer_session* session) {
  return guarded_value(__func__, size_t(0), [&](const char* fn) -> size_t {
    std::shared_ptr<SessionObject> object;
    if (find_session(fn, session, &object) != WINFER_OK) return 0;
    return object->input_names.size();
  });
}

const char* winfer_session_input_name(const winfer_session* session, size_t index) {
  return session_name(__func__, session, index, "input", &SessionObject::input_names);
}

const char* winfer_session_output_name(const winfer_session* session, size_t index) {
  return session_name(__func__, session, index, "output", &SessionObject::output_names);
}

winfer_status winfer_session_run_named(winfer_session* session, size_t num_inputs, const char* const* input_names,
                                       const float* const* inputs, const size_t* input_counts, size_t num_outputs,
                                       const char* const* output_names, float* const* outputs,
                                       const size_t* output_counts) {
  return guarded(__func__, [&](const char* fn) {
    std::shared_ptr<SessionObject> object;
    if (winfer_status s = find_session(fn, session, &object)) return s;
    if (num_inputs > 0 && (input_names == nullptr || inputs == nullptr || input_counts == nullptr)) {
      return fail(fn, WINFER_INVALID_ARGUMENT, "input_names, inputs and input_counts must not be NULL");
    }
    if (num_outputs > 0 && (output_names == nullptr || outputs == nullptr || output_counts == nullptr)) {
      return fail(fn, WINFER_INVALID_ARGUMENT, "output_names, outputs and output_counts must not be NULL");
    }
    std::vector<size_t> input_at;  // the binding of each session input
    if (winfer_status s = match_names(fn, "input", object->input_names, input_names, num_inputs, true, &input_at)) {
      return s;
    }
    if (num_outputs == 0) return fail(fn, WINFER_INVALID_ARGUMENT, "no output is bound: name at least one");
    std::vector<size_t> output_at;
    if (winfer_status s =
            match_names(fn, "output", object->output_names, output_names, num_outputs, false, &output_at)) {
      return s;
    }
    // Outputs not asked for stay empty: the session allocates them.
    std::vector<winfer::Tensor> views(object->output_names.size());
    for (size_t i = 0; i < views.size(); ++i) {
      const size_t k = output_at[i];
      if (k == kUnbound) continue;
      if (winfer_status s = bind_output(fn, *object->session, i, outputs[k], output_counts[k], &views[i])) return s;
    }
    const size_t k = input_at[0];  // one input today
    return run_with(fn, *object->session, inputs[k], input_counts[k], &views);
  });
}

}  // extern "C"
