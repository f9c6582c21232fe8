/* winfer's C API: opaque handles, create/destroy pairs, status codes, and the message of the
 * last error on the calling thread (winfer_last_error()). For C programs and for bindings from
 * other languages (ctypes, cffi, JNI, ...). Links against the same library as the C++ API.
 *
 *   winfer_model* model = NULL;
 *   if (winfer_model_load("tiny_net.yaml", NULL, &model) != WINFER_OK) {
 *     fprintf(stderr, "%s\n", winfer_last_error());
 *     return 1;
 *   }
 *   winfer_session_config* config = NULL;
 *   winfer_session_config_create(&config);       // the defaults
 *   winfer_session_config_set_conv_algorithm(config, "auto");
 *   winfer_session* session = NULL;
 *   winfer_session_create_with_config(model, config, &session);
 *   winfer_session_config_destroy(config);       // the session keeps its own copy
 *   winfer_session_run(session, input, input_count, output, output_count);  // NCHW floats
 *   winfer_session_destroy(session);
 *   winfer_model_destroy(model);                // sessions keep what they need of the model
 *
 * Growing without breaking binaries: options live in opaque config objects set through typed
 * setters (winfer_load_config, winfer_session_config), so a later version adds setters, never
 * fields. The structs winfer_load_options and winfer_session_options, and the functions taking
 * them, are kept as they were (deprecated: they cannot grow; new options are in the configs).
 *
 * Errors: a function that fails returns a winfer_status other than WINFER_OK and sets the
 * calling thread's winfer_last_error(), whose message starts with the function's name
 * ("winfer_session_run: output is NULL", "winfer_model_load: model file 'x.yaml' does not
 * exist"). Functions that return a count or a string return 0, "" or NULL on a bad handle or
 * index and set winfer_last_error() too; void functions given a bad argument do nothing and set
 * it. No C++ exception crosses this API, and no message shows C++ internals: running out of
 * memory is WINFER_OUT_OF_MEMORY "<function>: out of memory", anything unexpected
 * WINFER_INTERNAL "<function>: internal error (...)".
 *
 * Handles: a winfer_model*, winfer_session*, winfer_load_config* or winfer_session_config* is
 * an opaque token, not an address. The library
 * keeps a table of the live ones and checks every handle it is given against it (one short
 * lock per call), so that a destroyed or foreign handle is never dereferenced:
 *  - A NULL, destroyed, or never-returned handle, or a model passed as a session, is refused
 *    with WINFER_INVALID_ARGUMENT ("winfer_session_run: session is not a live winfer_session
 *    (destroyed already, or not returned by winfer_session_create)").
 *  - Destroying a handle twice is harmless: the second winfer_*_destroy does nothing and sets
 *    winfer_last_error(). Destroying NULL does nothing. Tokens are never reused, so a stale
 *    handle cannot reach (or destroy) an object created after it.
 *  - Destroying a handle while another thread is inside a call with it is safe: the object is
 *    freed when that call returns. Strings returned from the handle are then invalid.
 *
 * Threads: a winfer_model may be used by any number of threads and sessions at once; a
 * winfer_session by one thread at a time. A run started on a session while another is in
 * progress (from another thread) is refused with WINFER_INVALID_ARGUMENT ("winfer_session_run:
 * Session::run: this session is already running on another thread; ...") and the run in
 * progress goes on undisturbed; create one session per thread. Reading a session's layer times
 * while it runs on another thread is not detected: don't. winfer_last_error() is per thread.
 * Strings returned by the library stay valid until the handle they came from is destroyed
 * (winfer_last_error(): until the thread's next failing call). */
#ifndef WINFER_WINFER_C_H_
#define WINFER_WINFER_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The C++ winfer::ErrorCode values. */
typedef enum winfer_status {
  WINFER_OK = 0,
  WINFER_INVALID_ARGUMENT = 1,
  WINFER_NOT_FOUND = 2,
  WINFER_IO_ERROR = 3,
  WINFER_PARSE_ERROR = 4,
  WINFER_SHAPE_MISMATCH = 5,
  WINFER_UNSUPPORTED = 6,
  WINFER_INTERNAL = 7,
  WINFER_OUT_OF_MEMORY = 8,
  WINFER_DEVICE_ERROR = 9
} winfer_status;

typedef enum winfer_log_level {
  WINFER_LOG_DEBUG = 0,
  WINFER_LOG_INFO = 1,
  WINFER_LOG_WARNING = 2,
  WINFER_LOG_ERROR = 3,
  WINFER_LOG_OFF = 4
} winfer_log_level;

typedef struct winfer_model winfer_model;
typedef struct winfer_session winfer_session;
typedef struct winfer_load_config winfer_load_config;
typedef struct winfer_session_config winfer_session_config;

/* The library's version, "MAJOR.MINOR.PATCH". */
const char* winfer_version(void);
/* The threads a session runs with unless told otherwise: the CPUs this process may run on
 * (sched_getaffinity: taskset, cpusets and a container's CPU list count), at least 1. A
 * session config starts with it and winfer_session_options_init sets it. */
int winfer_default_thread_count(void);
/* "ok", "invalid argument", ... */
const char* winfer_status_name(winfer_status status);
/* The message of the calling thread's last failed call ("" when none failed yet). */
const char* winfer_last_error(void);

/* Log lines (one line each, no newline) go to `callback`, or to stderr when it is NULL (the
 * default); lines below `level` are dropped (default WINFER_LOG_WARNING). The callback may be
 * called from any thread using the library. */
typedef void (*winfer_log_callback)(winfer_log_level level, const char* message, void* user_data);
void winfer_set_log_callback(winfer_log_callback callback, void* user_data);
void winfer_set_log_level(winfer_log_level level); /* a value outside the enum: ignored (last error) */

/* ---- load configs: how a model is loaded ------------------------------------------------ */

/* A load config starts with the defaults of winfer_load_options_init; each setter changes one
 * option and fails (WINFER_INVALID_ARGUMENT, the config unchanged) on a value it can tell is
 * bad. A config may be used by several threads (each call takes its lock) and for any number
 * of loads; a model does not keep it. */
winfer_status winfer_load_config_create(winfer_load_config** config);
void winfer_load_config_destroy(winfer_load_config* config); /* NULL: nothing; twice: nothing */
/* Overrides the YAML's weights file; NULL or "": the YAML's own. */
winfer_status winfer_load_config_set_weights_path(winfer_load_config* config, const char* path);
/* enable 1: deterministic random weights from `seed` instead of reading any; 0: read them. */
winfer_status winfer_load_config_set_random_weights(winfer_load_config* config, int enable, uint64_t seed);
/* 1 (default): fold batch norm and fuse activations; 0: keep every layer. */
winfer_status winfer_load_config_set_fuse(winfer_load_config* config, int fuse);
/* The algorithm the convolution weights are packed for at load (see winfer_load_options'
 * pack_for): a name, or "" to keep OIHW. NULL is refused (the default is "im2win"). */
winfer_status winfer_load_config_set_pack_for(winfer_load_config* config, const char* algorithm);
/* Every file the model names (weights:, labels:) must lie inside `folder` (winfer::LoadOptions::
 * confine_to); NULL or "": no confinement (the default). */
winfer_status winfer_load_config_set_confine_to(winfer_load_config* config, const char* folder);

/* As winfer_model_load / winfer_model_load_from_memory, with a config (NULL: the defaults). */
winfer_status winfer_model_load_with_config(const char* yaml_path, const winfer_load_config* config,
                                            winfer_model** model);
winfer_status winfer_model_load_from_memory_with_config(const char* yaml, size_t yaml_size, const void* weights,
                                                        size_t weights_size, const winfer_load_config* config,
                                                        winfer_model** model);

/* ---- models ---------------------------------------------------------------------------- */

/* Deprecated (it cannot grow without breaking binaries): use winfer_load_config. Kept working. */
typedef struct winfer_load_options {
  const char* weights_path; /* overrides the YAML's weights file; NULL: none */
  int use_random_weights;   /* non-zero: deterministic random weights from random_seed */
  uint64_t random_seed;
  int fuse; /* fold batch norm and fuse activations (default 1) */
  /* The CPU convolution algorithm whose layout the weights are packed in at load, once, for
   * every session that uses it (winfer::LoadOptions::pack_for): NULL for the default
   * ("im2win"), "" to keep the OIHW weights, or the conv_algorithm your sessions will use
   * ("im2col", "direct", "indirect", "winograd"). Sessions with another algorithm pack their
   * own copy. */
  const char* pack_for;
} winfer_load_options;

void winfer_load_options_init(winfer_load_options* options);

/* `options` may be NULL (defaults). On success *model is set; destroy it with
 * winfer_model_destroy. */
winfer_status winfer_model_load(const char* yaml_path, const winfer_load_options* options, winfer_model** model);
/* From memory: YAML text of `yaml_size` bytes (at most 64 MiB, as a YAML file) and
 * safetensors bytes (NULL/0 for none); both are copied, so both sizes must be the buffers' own. */
winfer_status winfer_model_load_from_memory(const char* yaml, size_t yaml_size, const void* weights,
                                            size_t weights_size, const winfer_load_options* options,
                                            winfer_model** model);
void winfer_model_destroy(winfer_model* model); /* NULL: nothing; twice: nothing (see Handles) */

const char* winfer_model_name(const winfer_model* model);
/* The input's dims (NCHW, the declared batch): writes up to `capacity` dims to `dims` and the
 * rank to *rank; fails with WINFER_INVALID_ARGUMENT when capacity is too small. */
winfer_status winfer_model_input_shape(const winfer_model* model, int64_t* dims, int capacity, int* rank);
/* The model's inputs (one today) and their names, as in the model file. */
size_t winfer_model_input_count(const winfer_model* model);
const char* winfer_model_input_name(const winfer_model* model, size_t index); /* NULL when out of range */
size_t winfer_model_output_count(const winfer_model* model);
const char* winfer_model_output_name(const winfer_model* model, size_t index); /* NULL when out of range */
winfer_status winfer_model_output_shape(const winfer_model* model, size_t index, int64_t* dims, int capacity,
                                        int* rank);
/* The labels file the model names (resolved path), or "" when none. */
const char* winfer_model_labels_path(const winfer_model* model);

/* ---- session configs: how a session runs ----------------------------------------------- */

/* The alignment winfer_session_config_set_arena requires (bytes). */
#define WINFER_ARENA_ALIGNMENT 64

/* A session config starts with the defaults of winfer_session_options_init; as load configs:
 * setters fail with WINFER_INVALID_ARGUMENT on a value they can tell is bad (the config then
 * unchanged), a config is safe to share between threads, and a session keeps a copy. Flags
 * (int) are 0 or 1. What depends on the model or the machine (an algorithm's name, a CUDA
 * device's presence) is checked by winfer_session_create_with_config. */
winfer_status winfer_session_config_create(winfer_session_config** config);
void winfer_session_config_destroy(winfer_session_config* config); /* NULL: nothing; twice: nothing */
winfer_status winfer_session_config_set_device(winfer_session_config* config,
                                               const char* device); /* "cpu", "cuda", "cuda:N", "auto" */
winfer_status winfer_session_config_set_conv_algorithm(winfer_session_config* config, const char* algorithm);
/* Threads per run, >= 1 (1: everything on the calling thread). Default: winfer_default_thread_count().
 * 0 or negative is refused (it does not mean "the default"). */
winfer_status winfer_session_config_set_threads(winfer_session_config* config, int threads);
winfer_status winfer_session_config_set_batch(winfer_session_config* config, int64_t batch); /* 0: the model's */
/* CPU only: run the batch this many images at a time through an arena for that many; 0: the
 * whole batch in one run; WINFER_IMAGES_PER_RUN_AUTO (the default): the engine chooses (on
 * several threads, runs side by side, one per thread; winfer::SessionOptions::images_per_run). */
#define WINFER_IMAGES_PER_RUN_AUTO (-1)
winfer_status winfer_session_config_set_images_per_run(winfer_session_config* config, int64_t images);
/* The whole input shape, `rank` dims (e.g. {2, 3, 160, 224}): any batch and any size of the dims
 * the model leaves free (a YAML model fixes only the channels; winfer::SessionOptions::input_shape).
 * NULL and 0: the model's declared shape (with the batch of _set_batch, which must otherwise
 * agree with dims[0]). Each dim 1..2^24, rank 1..8; the model's rank and fixed dims, and whether
 * its layers admit the shape, are checked by winfer_session_create_with_config and
 * winfer_session_plan (the message names the dim or the layer). The config keeps a copy. */
winfer_status winfer_session_config_set_input_shape(winfer_session_config* config, const int64_t* dims, size_t rank);
winfer_status winfer_session_config_set_memory_budget(winfer_session_config* config, size_t bytes); /* 0: none */
winfer_status winfer_session_config_set_autotune_cache(winfer_session_config* config,
                                                       const char* path); /* NULL: none */
winfer_status winfer_session_config_set_plan_memory(winfer_session_config* config, int plan_memory);
/* Debugging: fill dead arena bytes with NaN before each layer (winfer::SessionOptions). */
winfer_status winfer_session_config_set_poison_unused_memory(winfer_session_config* config, int poison);
/* CUDA: allow TF32 tensor cores (about 1e-3 relative error). */
winfer_status winfer_session_config_set_allow_tf32(winfer_session_config* config, int allow);
/* Fail a run at the first NaN or Inf, naming the input or layer that holds it. */
winfer_status winfer_session_config_set_check_numerics(winfer_session_config* config, int check);
/* CPU: concat without copies (default 1): producers write straight into their channel slice of a
 * concat's output; 0 copies every concat input (winfer::SessionOptions::concat_alias). */
winfer_status winfer_session_config_set_concat_alias(winfer_session_config* config, int alias);
/* CPU only: the session's activations and workspaces live in `arena` (`bytes` bytes, aligned to
 * WINFER_ARENA_ALIGNMENT) instead of memory it allocates. Ask winfer_session_plan for the
 * bytes needed first; the memory must outlive the session, which writes it only while it runs
 * and keeps nothing there between runs (so sessions that never run at the same time may share
 * one arena). NULL and 0: the session's own arena (the default). */
winfer_status winfer_session_config_set_arena(winfer_session_config* config, void* arena, size_t bytes);

/* `config` may be NULL (defaults). The session holds its own reference to the model. */
winfer_status winfer_session_create_with_config(const winfer_model* model, const winfer_session_config* config,
                                                winfer_session** session);

/* ---- sessions -------------------------------------------------------------------------- */

/* Deprecated (it cannot grow without breaking binaries): use winfer_session_config. Kept working. */
typedef struct winfer_session_options {
  const char* device;         /* "cpu" (default), "cuda", "cuda:N", "auto" */
  const char* conv_algorithm; /* "im2win" (default), "indirect", "im2col", "direct", "auto" */
  int threads;                /* >= 1; _init: winfer_default_thread_count() (it used to be 1) */
  int64_t batch;              /* 0: the model's declared batch */
  size_t memory_budget;       /* bytes; 0: none (see winfer::SessionOptions::memory_budget) */
  const char* autotune_cache; /* "auto" only: cache file, or NULL */
  int plan_memory;            /* default 1 */
} winfer_session_options;

void winfer_session_options_init(winfer_session_options* options);

/* `options` may be NULL (defaults). The session holds its own reference to the model. */
winfer_status winfer_session_create(const winfer_model* model, const winfer_session_options* options,
                                    winfer_session** session);
void winfer_session_destroy(winfer_session* session); /* NULL: nothing; twice: nothing (see Handles) */

winfer_status winfer_session_input_shape(const winfer_session* session, int64_t* dims, int capacity, int* rank);
/* Inputs and outputs by index, and their names (as in the model file; NULL when out of range). */
size_t winfer_session_input_count(const winfer_session* session);
const char* winfer_session_input_name(const winfer_session* session, size_t index);
size_t winfer_session_output_count(const winfer_session* session);
const char* winfer_session_output_name(const winfer_session* session, size_t index);
winfer_status winfer_session_output_shape(const winfer_session* session, size_t index, int64_t* dims, int capacity,
                                          int* rank);

/* Runs on `input` (the session's input shape, NCHW floats, `input_count` elements) and writes
 * the first output (NCHW, or [N, classes]) to `output`, which must hold exactly its
 * `output_count` elements. */
winfer_status winfer_session_run(winfer_session* session, const float* input, size_t input_count, float* output,
                                 size_t output_count);
/* Every output: outputs[i] holds output_counts[i] floats, for i < winfer_session_output_count(). */
winfer_status winfer_session_run_all(winfer_session* session, const float* input, size_t input_count,
                                     float* const* outputs, const size_t* output_counts);

/* Inputs and outputs bound by name: input_names[i] gets inputs[i], input_counts[i] floats (NCHW,
 * the input's shape), for i < num_inputs; every input of the session must be bound, once. The
 * outputs named in output_names (any of them, at least one, each once) are written to
 * outputs[i], which hold exactly output_counts[i] floats. An unknown name is WINFER_NOT_FOUND
 * naming it and the names there are; a missing or repeated binding WINFER_INVALID_ARGUMENT. */
winfer_status winfer_session_run_named(winfer_session* session, size_t num_inputs, const char* const* input_names,
                                       const float* const* inputs, const size_t* input_counts, size_t num_outputs,
                                       const char* const* output_names, float* const* outputs,
                                       const size_t* output_counts);

typedef struct winfer_memory_report {
  size_t weights_bytes;
  size_t packed_weights_bytes;
  size_t session_weights_bytes;
  size_t activations_sum_bytes;
  size_t activations_lower_bound_bytes;
  size_t arena_bytes;
  size_t max_workspace_bytes;
  size_t session_bytes; /* what memory_budget counts */
} winfer_memory_report;

winfer_status winfer_session_memory_report(const winfer_session* session, winfer_memory_report* report);

/* The memory plan of the session winfer_session_create_with_config(model, config) would make,
 * without making it: report->arena_bytes is what winfer_session_config_set_arena needs. CPU
 * only. Costs about what creating the session costs (with conv_algorithm "auto" the layers are
 * timed: set an autotune cache so that the session then chooses the same and fits). */
winfer_status winfer_session_plan(const winfer_model* model, const winfer_session_config* config,
                                  winfer_memory_report* report);

/* Per-layer times of the last run, in execution order. */
size_t winfer_session_layer_count(const winfer_session* session);
/* Fills the layer's name, type, kernel (e.g. "im2col") and milliseconds; any pointer may be NULL. */
winfer_status winfer_session_layer_timing(const winfer_session* session, size_t index, const char** name,
                                          const char** type, const char** kernel, double* milliseconds);

/* conv_algorithm "auto": the algorithm chosen for each tuned convolution and why. */
size_t winfer_session_conv_choice_count(const winfer_session* session);
winfer_status winfer_session_conv_choice(const winfer_session* session, size_t index, const char** layer,
                                         const char** algorithm, const char** reason);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WINFER_WINFER_C_H_ */
