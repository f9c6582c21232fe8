// The C API (winfer/winfer_c.h) over the C++ one. Every entry point catches everything, so no
// C++ exception crosses into C; failures set the calling thread's last error.
#include "winfer/winfer_c.h"

#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "winfer/winfer.h"

struct winfer_model {
  std::shared_ptr<const winfer::Model> model;
  std::vector<std::string> output_names;
};

struct winfer_session {
  std::unique_ptr<winfer::Session> session;
  std::vector<winfer::Tensor> outputs;  // views of the caller's buffers, rebuilt per run
};

namespace winfer {

const char* version() { return "0.1.0"; }

}  // namespace winfer

namespace {

thread_local std::string t_last_error;

winfer_status fail(const winfer::Status& status) {
  t_last_error = status.message();
  return static_cast<winfer_status>(status.code());
}

winfer_status fail(winfer_status code, const std::string& message) {
  t_last_error = message;
  return code;
}

// Runs `body` (returning winfer_status), turning any exception into a status.
template <typename Body>
winfer_status guarded(const char* function, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(WINFER_OUT_OF_MEMORY, std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    return fail(WINFER_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(WINFER_INTERNAL, std::string(function) + ": unknown exception");
  }
}

winfer_status null_argument(const char* function, const char* name) {
  return fail(WINFER_INVALID_ARGUMENT, std::string(function) + ": " + name + " is NULL");
}

winfer_status write_shape(const char* function, const winfer::Shape& shape, int64_t* dims, int capacity, int* rank) {
  if (rank == nullptr) return null_argument(function, "rank");
  *rank = shape.rank();
  if (shape.rank() > capacity) {
    return fail(WINFER_INVALID_ARGUMENT, std::string(function) + ": the shape " + shape.to_string() + " has " +
                                             std::to_string(shape.rank()) + " dims, capacity is " +
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

winfer_status finish_model(winfer::Result<std::shared_ptr<const winfer::Model>> loaded, winfer_model** model) {
  if (!loaded.ok()) return fail(loaded.status());
  auto handle = std::make_unique<winfer_model>();
  handle->model = std::move(loaded).value();
  handle->output_names = handle->model->output_names();
  *model = handle.release();
  return WINFER_OK;
}

// Views of the caller's buffers as the session's output tensors; checks their sizes.
winfer_status bind_outputs(const char* function, winfer_session* s, float* const* outputs, const size_t* counts) {
  const std::vector<winfer::Shape>& shapes = s->session->output_shapes();
  s->outputs.resize(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (outputs[i] == nullptr) return fail(WINFER_INVALID_ARGUMENT, std::string(function) + ": output " + std::to_string(i) + " is NULL");
    if (counts[i] != static_cast<size_t>(shapes[i].numel())) {
      return fail(WINFER_SHAPE_MISMATCH, std::string(function) + ": output " + std::to_string(i) + " has shape " +
                                             shapes[i].to_string() + " (" + std::to_string(shapes[i].numel()) +
                                             " floats), the buffer holds " + std::to_string(counts[i]));
    }
    s->outputs[i] = winfer::Tensor::view(outputs[i], shapes[i],
                                         shapes[i].rank() == 4 ? winfer::Layout::kNCHW : winfer::Layout::kPlain);
  }
  return WINFER_OK;
}

winfer_status run_with(const char* function, winfer_session* s, const float* input, size_t input_count) {
  const winfer::Shape& shape = s->session->input_shape();
  if (input == nullptr) return null_argument(function, "input");
  if (input_count != static_cast<size_t>(shape.numel())) {
    return fail(WINFER_SHAPE_MISMATCH, std::string(function) + ": the input has shape " + shape.to_string() + " (" +
                                           std::to_string(shape.numel()) + " floats), got " +
                                           std::to_string(input_count));
  }
  // The input is only read; Tensor::view takes a non-const pointer for both directions.
  const winfer::Tensor in = winfer::Tensor::view(const_cast<float*>(input), shape,
                                                 shape.rank() == 4 ? winfer::Layout::kNCHW : winfer::Layout::kPlain);
  const winfer::Status status = s->session->run_into(in, &s->outputs);
  if (!status.ok()) return fail(status);
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

const char* winfer_status_name(winfer_status status) {
  if (status == WINFER_OK) return "ok";
  if (status < WINFER_OK || status > WINFER_DEVICE_ERROR) return "unknown status";
  return winfer::error_code_name(static_cast<winfer::ErrorCode>(status));
}

const char* winfer_last_error(void) { return t_last_error.c_str(); }

void winfer_set_log_callback(winfer_log_callback callback, void* user_data) {
  static_assert(static_cast<int>(winfer::LogLevel::kOff) == WINFER_LOG_OFF, "log levels must agree");
  static std::mutex mutex;
  static std::unique_ptr<CLogCallback> current;
  std::lock_guard<std::mutex> lock(mutex);
  if (callback == nullptr) {
    winfer::set_log_callback(nullptr, nullptr);
    current.reset();
    return;
  }
  auto next = std::make_unique<CLogCallback>(CLogCallback{callback, user_data});
  winfer::set_log_callback(&c_log_trampoline, next.get());
  current = std::move(next);  // set_log_callback returned: the old one is no longer running
}

void winfer_set_log_level(winfer_log_level level) { winfer::set_log_level(static_cast<winfer::LogLevel>(level)); }

void winfer_load_options_init(winfer_load_options* options) {
  if (options == nullptr) return;
  options->weights_path = nullptr;
  options->use_random_weights = 0;
  options->random_seed = 0;
  options->fuse = 1;
  options->pack_for = nullptr;
}

winfer_status winfer_model_load(const char* yaml_path, const winfer_load_options* options, winfer_model** model) {
  return guarded(__func__, [&] {
    if (yaml_path == nullptr) return null_argument(__func__, "yaml_path");
    if (model == nullptr) return null_argument(__func__, "model");
    *model = nullptr;
    return finish_model(winfer::Model::load(yaml_path, load_options(options)), model);
  });
}

winfer_status winfer_model_load_from_memory(const char* yaml, size_t yaml_size, const void* weights,
                                            size_t weights_size, const winfer_load_options* options,
                                            winfer_model** model) {
  return guarded(__func__, [&] {
    if (yaml == nullptr) return null_argument(__func__, "yaml");
    if (model == nullptr) return null_argument(__func__, "model");
    if (weights == nullptr && weights_size > 0) return null_argument(__func__, "weights");
    *model = nullptr;
    return finish_model(winfer::Model::load_from_memory(std::string(yaml, yaml_size), weights, weights_size,
                                                        load_options(options)),
                        model);
  });
}

void winfer_model_destroy(winfer_model* model) { delete model; }

const char* winfer_model_name(const winfer_model* model) { return model ? model->model->name().c_str() : ""; }

winfer_status winfer_model_input_shape(const winfer_model* model, int64_t* dims, int capacity, int* rank) {
  if (model == nullptr) return null_argument(__func__, "model");
  return write_shape(__func__, model->model->input_shape(), dims, capacity, rank);
}

size_t winfer_model_output_count(const winfer_model* model) { return model ? model->output_names.size() : 0; }

const char* winfer_model_output_name(const winfer_model* model, size_t index) {
  if (model == nullptr || index >= model->output_names.size()) return nullptr;
  return model->output_names[index].c_str();
}

winfer_status winfer_model_output_shape(const winfer_model* model, size_t index, int64_t* dims, int capacity,
                                        int* rank) {
  return guarded(__func__, [&] {
    if (model == nullptr) return null_argument(__func__, "model");
    const std::vector<winfer::Shape> shapes = model->model->output_shapes();
    if (index >= shapes.size()) {
      return fail(WINFER_INVALID_ARGUMENT, std::string(__func__) + ": output " + std::to_string(index) +
                                               " does not exist (the model has " + std::to_string(shapes.size()) + ")");
    }
    return write_shape(__func__, shapes[index], dims, capacity, rank);
  });
}

const char* winfer_model_labels_path(const winfer_model* model) {
  return model ? model->model->labels_path().c_str() : "";
}

void winfer_session_options_init(winfer_session_options* options) {
  if (options == nullptr) return;
  options->device = "cpu";
  options->conv_algorithm = "im2win";
  options->threads = 1;
  options->batch = 0;
  options->memory_budget = 0;
  options->autotune_cache = nullptr;
  options->plan_memory = 1;
}

winfer_status winfer_session_create(const winfer_model* model, const winfer_session_options* options,
                                    winfer_session** session) {
  return guarded(__func__, [&] {
    if (model == nullptr) return null_argument(__func__, "model");
    if (session == nullptr) return null_argument(__func__, "session");
    *session = nullptr;
    winfer::SessionOptions o;
    if (options != nullptr) {
      if (options->device != nullptr) o.device = options->device;
      if (options->conv_algorithm != nullptr) o.conv_algorithm = options->conv_algorithm;
      o.threads = options->threads;
      o.batch = options->batch;
      o.memory_budget = options->memory_budget;
      if (options->autotune_cache != nullptr) o.autotune_cache = options->autotune_cache;
      o.plan_memory = options->plan_memory != 0;
    }
    auto created = winfer::Session::create(model->model, o);
    if (!created.ok()) return fail(created.status());
    auto handle = std::make_unique<winfer_session>();
    handle->session = std::move(created).value();
    *session = handle.release();
    return WINFER_OK;
  });
}

void winfer_session_destroy(winfer_session* session) { delete session; }

winfer_status winfer_session_input_shape(const winfer_session* session, int64_t* dims, int capacity, int* rank) {
  if (session == nullptr) return null_argument(__func__, "session");
  return write_shape(__func__, session->session->input_shape(), dims, capacity, rank);
}

size_t winfer_session_output_count(const winfer_session* session) {
  return session ? session->session->output_shapes().size() : 0;
}

winfer_status winfer_session_output_shape(const winfer_session* session, size_t index, int64_t* dims, int capacity,
                                          int* rank) {
  if (session == nullptr) return null_argument(__func__, "session");
  const std::vector<winfer::Shape>& shapes = session->session->output_shapes();
  if (index >= shapes.size()) {
    return fail(WINFER_INVALID_ARGUMENT, std::string(__func__) + ": output " + std::to_string(index) +
                                             " does not exist (the session has " + std::to_string(shapes.size()) + ")");
  }
  return write_shape(__func__, shapes[index], dims, capacity, rank);
}

winfer_status winfer_session_run(winfer_session* session, const float* input, size_t input_count, float* output,
                                 size_t output_count) {
  return guarded(__func__, [&] {
    if (session == nullptr) return null_argument(__func__, "session");
    const size_t outputs = session->session->output_shapes().size();
    // Only the first output is wanted; the others go to buffers of the session's own.
    std::vector<std::vector<float>> others(outputs);
    std::vector<float*> pointers(outputs);
    std::vector<size_t> counts(outputs);
    for (size_t i = 0; i < outputs; ++i) {
      counts[i] = static_cast<size_t>(session->session->output_shapes()[i].numel());
      if (i > 0) {
        others[i].resize(counts[i]);
        pointers[i] = others[i].data();
      }
    }
    pointers[0] = output;
    counts[0] = output == nullptr ? 0 : output_count;
    if (output == nullptr) return null_argument(__func__, "output");
    winfer_status s = bind_outputs(__func__, session, pointers.data(), counts.data());
    if (s != WINFER_OK) return s;
    return run_with(__func__, session, input, input_count);
  });
}

winfer_status winfer_session_run_all(winfer_session* session, const float* input, size_t input_count,
                                     float* const* outputs, const size_t* output_counts) {
  return guarded(__func__, [&] {
    if (session == nullptr) return null_argument(__func__, "session");
    if (outputs == nullptr) return null_argument(__func__, "outputs");
    if (output_counts == nullptr) return null_argument(__func__, "output_counts");
    winfer_status s = bind_outputs(__func__, session, outputs, output_counts);
    if (s != WINFER_OK) return s;
    return run_with(__func__, session, input, input_count);
  });
}

winfer_status winfer_session_memory_report(const winfer_session* session, winfer_memory_report* report) {
  if (session == nullptr) return null_argument(__func__, "session");
  if (report == nullptr) return null_argument(__func__, "report");
  const winfer::MemoryReport& r = session->session->memory_report();
  report->weights_bytes = r.weights_bytes;
  report->packed_weights_bytes = r.packed_weights_bytes;
  report->session_weights_bytes = r.session_weights_bytes;
  report->activations_sum_bytes = r.activations_sum_bytes;
  report->activations_lower_bound_bytes = r.activations_lower_bound_bytes;
  report->arena_bytes = r.arena_bytes;
  report->max_workspace_bytes = r.max_workspace_bytes;
  report->session_bytes = r.session_bytes;
  return WINFER_OK;
}

size_t winfer_session_layer_count(const winfer_session* session) {
  return session ? session->session->last_timings().size() : 0;
}

winfer_status winfer_session_layer_timing(const winfer_session* session, size_t index, const char** name,
                                          const char** type, const char** kernel, double* milliseconds) {
  if (session == nullptr) return null_argument(__func__, "session");
  const std::vector<winfer::LayerTiming>& timings = session->session->last_timings();
  if (index >= timings.size()) {
    return fail(WINFER_INVALID_ARGUMENT, std::string(__func__) + ": layer " + std::to_string(index) +
                                             " does not exist (the session has " + std::to_string(timings.size()) + ")");
  }
  const winfer::LayerTiming& t = timings[index];
  if (name) *name = t.name.c_str();
  if (type) *type = t.type.c_str();
  if (kernel) *kernel = t.kernel.c_str();
  if (milliseconds) *milliseconds = t.milliseconds;
  return WINFER_OK;
}

size_t winfer_session_conv_choice_count(const winfer_session* session) {
  return session ? session->session->memory_report().conv_choices.size() : 0;
}

winfer_status winfer_session_conv_choice(const winfer_session* session, size_t index, const char** layer,
                                         const char** algorithm, const char** reason) {
  if (session == nullptr) return null_argument(__func__, "session");
  const std::vector<winfer::ConvChoice>& choices = session->session->memory_report().conv_choices;
  if (index >= choices.size()) {
    return fail(WINFER_INVALID_ARGUMENT, std::string(__func__) + ": choice " + std::to_string(index) +
                                             " does not exist (the session has " + std::to_string(choices.size()) + ")");
  }
  if (layer) *layer = choices[index].layer.c_str();
  if (algorithm) *algorithm = choices[index].algorithm.c_str();
  if (reason) *reason = choices[index].reason.c_str();
  return WINFER_OK;
}

}  // extern "C"
