// The C API (winfer/winfer_c.h): handles, status codes, winfer_last_error(), and results equal
// to the C++ API's; and Model::load_from_memory, which the C API also exposes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "engine/src/session_impl.h"
#include "winfer/winfer.h"
#include "winfer/winfer_c.h"

namespace {

using winfer_test::contains;
using winfer_test::repo_path;

struct CModel {
  winfer_model* handle = nullptr;
  ~CModel() { winfer_model_destroy(handle); }
};
struct CSession {
  winfer_session* handle = nullptr;
  ~CSession() { winfer_session_destroy(handle); }
};

// The calling thread's last error starts with "<function>: ", holds `fragment`, and shows no C++
// internals (a lambda's __func__ is "operator()"; libstdc++'s own texts name its members).
void check_named(const char* function, const char* fragment) {
  const std::string message = winfer_last_error();
  INFO(function << " -> " << message);
  CHECK(message.rfind(std::string(function) + ": ", 0) == 0);
  CHECK(contains(message, fragment));
  CHECK_FALSE(contains(message, "operator()"));
  CHECK_FALSE(contains(message, "_M_"));
  CHECK_FALSE(contains(message, "basic_string"));
}

void check_status(winfer_status got, winfer_status expected, const char* function, const char* fragment) {
  CHECK(got == expected);
  check_named(function, fragment);
}

// The element counts of a session's input and first output, read through the C API.
struct IoCounts {
  size_t input = 1, output = 1;
};
IoCounts io_counts(winfer_session* session) {
  int64_t dims[8];
  int rank = 0;
  IoCounts counts;
  REQUIRE(winfer_session_input_shape(session, dims, 8, &rank) == WINFER_OK);
  for (int i = 0; i < rank; ++i) counts.input *= static_cast<size_t>(dims[i]);
  REQUIRE(winfer_session_output_shape(session, 0, dims, 8, &rank) == WINFER_OK);
  for (int i = 0; i < rank; ++i) counts.output *= static_cast<size_t>(dims[i]);
  return counts;
}

}  // namespace

TEST_CASE("c api: errors come back as status codes with winfer_last_error()") {
  CModel model;
  CHECK(winfer_model_load("/nonexistent/model.yaml", nullptr, &model.handle) == WINFER_NOT_FOUND);
  CHECK(model.handle == nullptr);
  CHECK(contains(winfer_last_error(), "/nonexistent/model.yaml"));
  CHECK(std::string(winfer_status_name(WINFER_NOT_FOUND)) == "not found");
  CHECK(winfer_model_load(nullptr, nullptr, &model.handle) == WINFER_INVALID_ARGUMENT);
  CHECK(contains(winfer_last_error(), "yaml_path is NULL"));
  const std::string bad = "format: winfer/1\ninput: {shape: [1, 2]\n";
  CHECK(winfer_model_load_from_memory(bad.data(), bad.size(), nullptr, 0, nullptr, &model.handle) == WINFER_PARSE_ERROR);
  CHECK(contains(winfer_last_error(), "<memory>"));

  REQUIRE(winfer_model_load(repo_path("models/examples/tiny_net.yaml").c_str(), nullptr, &model.handle) == WINFER_OK);
  CSession session;
  winfer_session_options options;
  winfer_session_options_init(&options);
  options.conv_algorithm = "no-such-algorithm";
  CHECK(winfer_session_create(model.handle, &options, &session.handle) == WINFER_INVALID_ARGUMENT);
  CHECK(contains(winfer_last_error(), "no-such-algorithm"));
  options.conv_algorithm = "im2col";
  options.threads = 0;
  CHECK(winfer_session_create(model.handle, &options, &session.handle) == WINFER_INVALID_ARGUMENT);
  options.threads = 1;
  REQUIRE(winfer_session_create(model.handle, &options, &session.handle) == WINFER_OK);
  float x[4] = {0, 0, 0, 0};
  CHECK(winfer_session_run(session.handle, x, 4, x, 4) == WINFER_SHAPE_MISMATCH);
  CHECK(contains(winfer_last_error(), "has shape"));
  int64_t dims[1];
  int rank = 0;
  CHECK(winfer_session_input_shape(session.handle, dims, 1, &rank) == WINFER_INVALID_ARGUMENT);
  CHECK(rank == 4);
}

TEST_CASE("c api: a run gives the C++ API's output bit for bit, and reports memory and timings") {
  const std::string path = repo_path("models/examples/tiny_net.yaml");
  CModel model;
  REQUIRE(winfer_model_load(path.c_str(), nullptr, &model.handle) == WINFER_OK);
  CHECK(std::string(winfer_model_name(model.handle)).size() > 0);
  REQUIRE(winfer_model_output_count(model.handle) == 1);
  CHECK(winfer_model_output_name(model.handle, 1) == nullptr);

  CSession session;
  winfer_session_options options;
  winfer_session_options_init(&options);
  options.conv_algorithm = "im2col";
  REQUIRE(winfer_session_create(model.handle, &options, &session.handle) == WINFER_OK);
  int64_t dims[8];
  int rank = 0;
  REQUIRE(winfer_session_input_shape(session.handle, dims, 8, &rank) == WINFER_OK);
  REQUIRE(rank == 4);
  const winfer::Shape in_shape{dims[0], dims[1], dims[2], dims[3]};
  REQUIRE(winfer_session_output_shape(session.handle, 0, dims, 8, &rank) == WINFER_OK);
  std::vector<int64_t> out_dims(dims, dims + rank);
  const winfer::Shape out_shape(out_dims);

  const winfer::Tensor input = winfer_test::random_tensor(in_shape, 3, winfer::Layout::kNCHW);
  std::vector<float> output(static_cast<size_t>(out_shape.numel()));
  REQUIRE(winfer_session_run(session.handle, input.data(), static_cast<size_t>(input.numel()), output.data(),
                             output.size()) == WINFER_OK);

  auto cpp_model = winfer::Model::load(path);
  REQUIRE(cpp_model.ok());
  winfer::SessionOptions cpp_options;
  cpp_options.conv_algorithm = "im2col";
  const winfer::Tensor expected = winfer_test::run_model(cpp_model.value(), input, cpp_options);
  REQUIRE(expected.numel() == static_cast<int64_t>(output.size()));
  CHECK(std::memcmp(expected.data(), output.data(), expected.bytes()) == 0);

  // run_all: the same into a caller's buffer list.
  std::vector<float> again(output.size(), -1.f);
  float* outputs[] = {again.data()};
  const size_t counts[] = {again.size()};
  REQUIRE(winfer_session_run_all(session.handle, input.data(), static_cast<size_t>(input.numel()), outputs, counts) ==
          WINFER_OK);
  CHECK(again == output);
  const size_t wrong[] = {again.size() + 1};
  CHECK(winfer_session_run_all(session.handle, input.data(), static_cast<size_t>(input.numel()), outputs, wrong) ==
        WINFER_SHAPE_MISMATCH);

  winfer_memory_report report;
  REQUIRE(winfer_session_memory_report(session.handle, &report) == WINFER_OK);
  CHECK(report.arena_bytes > 0);
  CHECK(report.session_bytes == report.arena_bytes + report.session_weights_bytes);
  const size_t layers = winfer_session_layer_count(session.handle);
  REQUIRE(layers > 0);
  const char* name = nullptr;
  const char* kernel = nullptr;
  double ms = -1;
  REQUIRE(winfer_session_layer_timing(session.handle, 0, &name, nullptr, &kernel, &ms) == WINFER_OK);
  CHECK(std::string(name).size() > 0);
  CHECK(ms >= 0);
  CHECK(winfer_session_layer_timing(session.handle, layers, &name, nullptr, nullptr, nullptr) == WINFER_INVALID_ARGUMENT);
  CHECK(winfer_session_conv_choice_count(session.handle) == 0);  // a fixed algorithm
}

TEST_CASE("c api: pack_for packs the weights once for the sessions' algorithm, or names a wrong one") {
  const std::string path = repo_path("models/examples/tiny_net.yaml");
  auto session_weights = [&](const char* pack_for, const char* conv) {
    winfer_load_options load;
    winfer_load_options_init(&load);
    CHECK(load.pack_for == nullptr);  // the default: im2win
    load.pack_for = pack_for;
    CModel model;
    REQUIRE(winfer_model_load(path.c_str(), &load, &model.handle) == WINFER_OK);
    winfer_session_options options;
    winfer_session_options_init(&options);
    options.conv_algorithm = conv;
    CSession session;
    REQUIRE(winfer_session_create(model.handle, &options, &session.handle) == WINFER_OK);
    winfer_memory_report report;
    REQUIRE(winfer_session_memory_report(session.handle, &report) == WINFER_OK);
    return report.session_weights_bytes;
  };
  // Packed for the session's algorithm: the session shares the model's weights.
  CHECK(session_weights("im2col", "im2col") == 0);
  CHECK(session_weights(nullptr, "im2win") == 0);
  // Packed for another one (or kept OIHW): the session packs its own copy.
  CHECK(session_weights(nullptr, "im2col") > 0);
  CHECK(session_weights("", "im2win") > 0);

  winfer_load_options load;
  winfer_load_options_init(&load);
  load.pack_for = "no_such_algorithm";
  winfer_model* model = nullptr;
  CHECK(winfer_model_load(path.c_str(), &load, &model) == WINFER_INVALID_ARGUMENT);
  CHECK(model == nullptr);
  CHECK(std::string(winfer_last_error()).find("no_such_algorithm") != std::string::npos);
}

TEST_CASE("c api: models load from memory and auto reports its choices") {
  const std::string yaml = winfer_test::read_bytes(repo_path("models/examples/tiny_net.yaml"));
  const std::string weights = winfer_test::read_bytes(repo_path("models/examples/tiny_net.safetensors"));
  CModel model;
  REQUIRE_MESSAGE(winfer_model_load_from_memory(yaml.data(), yaml.size(), weights.data(), weights.size(), nullptr,
                                                &model.handle) == WINFER_OK,
                  winfer_last_error());
  // Truncated weights are refused with the parser's message.
  CModel broken;
  CHECK(winfer_model_load_from_memory(yaml.data(), yaml.size(), weights.data(), weights.size() / 2, nullptr,
                                      &broken.handle) == WINFER_PARSE_ERROR);
  CHECK(contains(winfer_last_error(), "weights"));

  CSession session;
  winfer_session_options options;
  winfer_session_options_init(&options);
  options.conv_algorithm = "auto";
  REQUIRE_MESSAGE(winfer_session_create(model.handle, &options, &session.handle) == WINFER_OK, winfer_last_error());
  winfer_model_destroy(model.handle);  // the session keeps the model alive
  model.handle = nullptr;
  const size_t choices = winfer_session_conv_choice_count(session.handle);
  CHECK(choices > 0);
  const char* layer = nullptr;
  const char* algorithm = nullptr;
  const char* reason = nullptr;
  REQUIRE(winfer_session_conv_choice(session.handle, 0, &layer, &algorithm, &reason) == WINFER_OK);
  CHECK(std::string(reason).size() > 0);
  const IoCounts counts = io_counts(session.handle);
  std::vector<float> x(counts.input, 0.5f), y(counts.output);
  CHECK(winfer_session_run(session.handle, x.data(), x.size(), y.data(), y.size()) == WINFER_OK);
}

TEST_CASE("c api: the log callback receives the library's messages at or above the level") {
  struct Seen {
    std::vector<std::string> lines;
  } seen;
  winfer_set_log_callback(
      [](winfer_log_level level, const char* message, void* user) {
        static_cast<Seen*>(user)->lines.push_back(std::string(level == WINFER_LOG_INFO ? "info: " : "other: ") + message);
      },
      &seen);
  winfer_set_log_level(WINFER_LOG_INFO);
  CModel model;
  REQUIRE(winfer_model_load(repo_path("models/examples/tiny_net.yaml").c_str(), nullptr, &model.handle) == WINFER_OK);
  CSession session;
  winfer_session_options options;
  winfer_session_options_init(&options);
  options.conv_algorithm = "auto";
  REQUIRE(winfer_session_create(model.handle, &options, &session.handle) == WINFER_OK);
  const size_t at_info = seen.lines.size();
  winfer_set_log_level(WINFER_LOG_WARNING);
  CSession quiet;
  REQUIRE(winfer_session_create(model.handle, &options, &quiet.handle) == WINFER_OK);
  winfer_set_log_callback(nullptr, nullptr);
  CHECK(at_info == winfer_session_conv_choice_count(session.handle));  // one info line per choice
  CHECK(seen.lines.size() == at_info);                                 // none at warning level
  REQUIRE(at_info > 0);
  CHECK(contains(seen.lines[0], "info: conv auto: "));
}

TEST_CASE("model from memory: the same model as from files, and the caller's buffers may go away") {
  const std::string path = repo_path("models/examples/tiny_net.yaml");
  auto from_file = winfer::Model::load(path);
  REQUIRE(from_file.ok());
  std::shared_ptr<const winfer::Model> from_memory;
  {
    std::string yaml = winfer_test::read_bytes(path);
    std::string weights = winfer_test::read_bytes(repo_path("models/examples/tiny_net.safetensors"));
    auto loaded = winfer::Model::load_from_memory(yaml, weights.data(), weights.size(), {}, "tiny_net (memory)");
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
    from_memory = loaded.value();
    std::fill(weights.begin(), weights.end(), '\0');  // the model keeps its own copy
  }
  CHECK(from_memory->weights_source() == "memory");
  CHECK(from_memory->path() == "tiny_net (memory)");
  CHECK(from_memory->input_shape() == from_file.value()->input_shape());
  const winfer::Tensor input = winfer_test::random_tensor(from_file.value()->input_shape(), 11, winfer::Layout::kNCHW);
  CHECK(winfer_test::same_bits(winfer_test::run_model(from_memory, input), winfer_test::run_model(from_file.value(), input)));
  // Errors name the buffer.
  auto bad = winfer::Model::load_from_memory("format: winfer/1\n", nullptr, 0, {}, "my buffer");
  REQUIRE_FALSE(bad.ok());
  CHECK(contains(bad.status().message(), "my buffer"));
}

TEST_CASE("c api: every function names itself in its argument errors") {
  const std::string path = repo_path("models/examples/tiny_net.yaml");
  const winfer_status kInvalid = WINFER_INVALID_ARGUMENT;
  CModel model;
  REQUIRE(winfer_model_load(path.c_str(), nullptr, &model.handle) == WINFER_OK);
  CSession session;
  REQUIRE(winfer_session_create(model.handle, nullptr, &session.handle) == WINFER_OK);
  winfer_model* dead_model = nullptr;
  REQUIRE(winfer_model_load(path.c_str(), nullptr, &dead_model) == WINFER_OK);
  winfer_model_destroy(dead_model);
  winfer_session* dead_session = nullptr;
  REQUIRE(winfer_session_create(model.handle, nullptr, &dead_session) == WINFER_OK);
  winfer_session_destroy(dead_session);
  int64_t dims[8];
  int rank = 0;
  float x[64] = {};
  winfer_model* m = nullptr;
  winfer_session* s = nullptr;

  // Models.
  check_status(winfer_model_load(nullptr, nullptr, &m), kInvalid, "winfer_model_load", "yaml_path is NULL");
  check_status(winfer_model_load(path.c_str(), nullptr, nullptr), kInvalid, "winfer_model_load", "model is NULL");
  check_status(winfer_model_load("/nonexistent/model.yaml", nullptr, &m), WINFER_NOT_FOUND, "winfer_model_load",
               "/nonexistent/model.yaml");
  check_status(winfer_model_load_from_memory(nullptr, 0, nullptr, 0, nullptr, &m), kInvalid,
               "winfer_model_load_from_memory", "yaml is NULL");
  check_status(winfer_model_load_from_memory("a", 1, nullptr, 8, nullptr, &m), kInvalid,
               "winfer_model_load_from_memory", "weights is NULL");
  check_status(winfer_model_load_from_memory("a", 1, nullptr, 0, nullptr, nullptr), kInvalid,
               "winfer_model_load_from_memory", "model is NULL");
  winfer_model_destroy(dead_model);
  check_named("winfer_model_destroy", "model is not a live winfer_model");
  CHECK(std::string(winfer_model_name(nullptr)).empty());
  check_named("winfer_model_name", "model is NULL");
  CHECK(std::string(winfer_model_name(dead_model)).empty());
  check_named("winfer_model_name", "not a live winfer_model");
  check_status(winfer_model_input_shape(dead_model, dims, 8, &rank), kInvalid, "winfer_model_input_shape",
               "not a live winfer_model");
  check_status(winfer_model_input_shape(model.handle, dims, 8, nullptr), kInvalid, "winfer_model_input_shape",
               "rank is NULL");
  check_status(winfer_model_input_shape(model.handle, nullptr, 8, &rank), kInvalid, "winfer_model_input_shape",
               "dims is NULL");
  check_status(winfer_model_input_shape(model.handle, dims, 1, &rank), kInvalid, "winfer_model_input_shape",
               "capacity is 1");
  CHECK(winfer_model_output_count(dead_model) == 0);
  check_named("winfer_model_output_count", "not a live winfer_model");
  CHECK(winfer_model_output_name(model.handle, 5) == nullptr);
  check_named("winfer_model_output_name", "output 5 does not exist");
  check_status(winfer_model_output_shape(model.handle, 5, dims, 8, &rank), kInvalid, "winfer_model_output_shape",
               "output 5 does not exist");
  CHECK(std::string(winfer_model_labels_path(dead_model)).empty());
  check_named("winfer_model_labels_path", "not a live winfer_model");
  winfer_load_options_init(nullptr);
  check_named("winfer_load_options_init", "options is NULL");
  winfer_session_options_init(nullptr);
  check_named("winfer_session_options_init", "options is NULL");
  winfer_set_log_level(static_cast<winfer_log_level>(99));
  check_named("winfer_set_log_level", "level 99 is not a winfer_log_level");

  // Sessions, and handles of the wrong kind (never dereferenced, so never a crash).
  check_status(winfer_session_create(nullptr, nullptr, &s), kInvalid, "winfer_session_create", "model is NULL");
  check_status(winfer_session_create(model.handle, nullptr, nullptr), kInvalid, "winfer_session_create",
               "session is NULL");
  check_status(winfer_session_create(dead_model, nullptr, &s), kInvalid, "winfer_session_create",
               "model is not a live winfer_model (destroyed already, or not returned by winfer_model_load)");
  check_status(winfer_session_create(reinterpret_cast<winfer_model*>(session.handle), nullptr, &s), kInvalid,
               "winfer_session_create", "model is a winfer_session handle, not a winfer_model");
  check_status(winfer_session_create(reinterpret_cast<winfer_model*>(x), nullptr, &s), kInvalid,
               "winfer_session_create", "model is not a live winfer_model");
  winfer_session_options options;
  winfer_session_options_init(&options);
  options.threads = 0;
  check_status(winfer_session_create(model.handle, &options, &s), kInvalid, "winfer_session_create",
               "threads must be >= 1, got 0");
  CHECK(s == nullptr);
  winfer_session_destroy(dead_session);
  check_named("winfer_session_destroy", "session is not a live winfer_session");
  winfer_session_destroy(reinterpret_cast<winfer_session*>(model.handle));
  check_named("winfer_session_destroy", "session is a winfer_model handle, not a winfer_session");
  CHECK(winfer_model_output_count(model.handle) == 1);  // still alive
  check_status(winfer_session_input_shape(nullptr, dims, 8, &rank), kInvalid, "winfer_session_input_shape",
               "session is NULL");
  CHECK(winfer_session_output_count(dead_session) == 0);
  check_named("winfer_session_output_count", "session is not a live winfer_session");
  check_status(winfer_session_output_shape(session.handle, 3, dims, 8, &rank), kInvalid,
               "winfer_session_output_shape", "output 3 does not exist");
  const IoCounts io = io_counts(session.handle);
  const size_t in_count = io.input, out_count = io.output;
  std::vector<float> in(in_count), out(out_count);
  check_status(winfer_session_run(dead_session, in.data(), in_count, out.data(), out_count), kInvalid,
               "winfer_session_run", "session is not a live winfer_session");
  check_status(winfer_session_run(session.handle, nullptr, in_count, out.data(), out_count), kInvalid,
               "winfer_session_run", "input is NULL");
  check_status(winfer_session_run(session.handle, in.data(), in_count, nullptr, out_count), kInvalid,
               "winfer_session_run", "output is NULL");
  check_status(winfer_session_run(session.handle, in.data(), in_count + 1, out.data(), out_count),
               WINFER_SHAPE_MISMATCH, "winfer_session_run", "the input has shape");
  check_status(winfer_session_run(session.handle, in.data(), in_count, out.data(), out_count + 1),
               WINFER_SHAPE_MISMATCH, "winfer_session_run", "output 0 has shape");
  float* outputs[] = {out.data()};
  float* null_outputs[] = {nullptr};
  const size_t counts[] = {out_count};
  check_status(winfer_session_run_all(nullptr, in.data(), in_count, outputs, counts), kInvalid,
               "winfer_session_run_all", "session is NULL");
  check_status(winfer_session_run_all(session.handle, in.data(), in_count, nullptr, counts), kInvalid,
               "winfer_session_run_all", "outputs is NULL");
  check_status(winfer_session_run_all(session.handle, in.data(), in_count, outputs, nullptr), kInvalid,
               "winfer_session_run_all", "output_counts is NULL");
  check_status(winfer_session_run_all(session.handle, in.data(), in_count, null_outputs, counts), kInvalid,
               "winfer_session_run_all", "output 0 is NULL");
  check_status(winfer_session_run_all(session.handle, nullptr, in_count, outputs, counts), kInvalid,
               "winfer_session_run_all", "input is NULL");
  winfer_memory_report report;
  check_status(winfer_session_memory_report(session.handle, nullptr), kInvalid, "winfer_session_memory_report",
               "report is NULL");
  check_status(winfer_session_memory_report(dead_session, &report), kInvalid, "winfer_session_memory_report",
               "not a live winfer_session");
  CHECK(winfer_session_layer_count(dead_session) == 0);
  check_named("winfer_session_layer_count", "not a live winfer_session");
  check_status(winfer_session_layer_timing(session.handle, 999, nullptr, nullptr, nullptr, nullptr), kInvalid,
               "winfer_session_layer_timing", "layer 999 does not exist");
  CHECK(winfer_session_conv_choice_count(dead_session) == 0);
  check_named("winfer_session_conv_choice_count", "not a live winfer_session");
  check_status(winfer_session_conv_choice(session.handle, 0, nullptr, nullptr, nullptr), kInvalid,
               "winfer_session_conv_choice", "choice 0 does not exist");

  // After all that, the live handles work.
  CHECK(winfer_session_run(session.handle, in.data(), in_count, out.data(), out_count) == WINFER_OK);
}

TEST_CASE("c api: destroying twice is harmless, and a destroyed handle is refused, never reused") {
  const std::string path = repo_path("models/examples/tiny_net.yaml");
  winfer_model* model = nullptr;
  REQUIRE(winfer_model_load(path.c_str(), nullptr, &model) == WINFER_OK);
  winfer_session* session = nullptr;
  REQUIRE(winfer_session_create(model, nullptr, &session) == WINFER_OK);
  winfer_model_destroy(model);
  winfer_model_destroy(model);  // twice: nothing (AddressSanitizer would see a double free)
  check_named("winfer_model_destroy", "nothing was destroyed");
  winfer_session_destroy(session);
  winfer_session_destroy(session);
  check_named("winfer_session_destroy", "nothing was destroyed");
  winfer_session_destroy(nullptr);  // NULL: nothing, as free(NULL)
  winfer_model_destroy(nullptr);

  int64_t dims[8];
  int rank = 0;
  check_status(winfer_session_input_shape(session, dims, 8, &rank), WINFER_INVALID_ARGUMENT,
               "winfer_session_input_shape", "session is not a live winfer_session");
  winfer_session* other = nullptr;
  check_status(winfer_session_create(model, nullptr, &other), WINFER_INVALID_ARGUMENT, "winfer_session_create",
               "model is not a live winfer_model");

  // New handles are new tokens: the stale ones reach nothing, and destroying them again leaves
  // the new objects alone.
  winfer_model* again = nullptr;
  REQUIRE(winfer_model_load(path.c_str(), nullptr, &again) == WINFER_OK);
  CHECK(again != model);
  REQUIRE(winfer_session_create(again, nullptr, &other) == WINFER_OK);
  CHECK(other != session);
  winfer_model_destroy(model);
  winfer_session_destroy(session);
  CHECK(winfer_session_input_shape(other, dims, 8, &rank) == WINFER_OK);
  CHECK(winfer_model_output_count(again) == 1);
  winfer_session_destroy(other);
  winfer_model_destroy(again);
}

TEST_CASE("c api: sizes no buffer can have are refused before the copy, with the number") {
  const char yaml[] = "format: winfer/1\n";
  winfer_model* model = nullptr;
  // Once: std::string(yaml, SIZE_MAX) threw std::length_error, "basic_string::_M_create".
  check_status(winfer_model_load_from_memory(yaml, SIZE_MAX, nullptr, 0, nullptr, &model), WINFER_INVALID_ARGUMENT,
               "winfer_model_load_from_memory", "yaml_size is 18446744073709551615 bytes, more than the limit of 16777216");
  check_status(winfer_model_load_from_memory(yaml, (size_t(64) << 20) + 1, nullptr, 0, nullptr, &model),
               WINFER_INVALID_ARGUMENT, "winfer_model_load_from_memory", "yaml_size is 67108865 bytes");
  check_status(winfer_model_load_from_memory(yaml, sizeof yaml - 1, yaml, SIZE_MAX, nullptr, &model),
               WINFER_INVALID_ARGUMENT, "winfer_model_load_from_memory",
               "weights_size is 18446744073709551615 bytes, more than any buffer can hold");
  check_status(winfer_model_load_from_memory(yaml, sizeof yaml - 1, yaml, size_t(-8), nullptr, &model),
               WINFER_INVALID_ARGUMENT, "winfer_model_load_from_memory", "weights_size is");
  CHECK(model == nullptr);
}

namespace {

// What the run hook throws (set_session_run_hook_for_testing): an exception from deep inside a
// run, as the standard library would throw it.
int g_throw_kind = 0;

void throw_from_run() {
  switch (g_throw_kind) {
    case 0: throw std::length_error("basic_string::_M_create");
    case 1: throw std::bad_alloc();
    case 2: throw std::out_of_range("vector::_M_range_check: __n (which is 5) >= this->size() (which is 3)");
    default: throw 42;
  }
}

}  // namespace

TEST_CASE("c api: an exception inside a call is a clear message without C++ internals, and the session runs on") {
  CModel model;
  REQUIRE(winfer_model_load(repo_path("models/examples/tiny_net.yaml").c_str(), nullptr, &model.handle) == WINFER_OK);
  CSession session;
  REQUIRE(winfer_session_create(model.handle, nullptr, &session.handle) == WINFER_OK);
  const IoCounts counts = io_counts(session.handle);
  const size_t in_count = counts.input, out_count = counts.output;
  std::vector<float> in(in_count, 0.25f), out(out_count);

  struct Unhook {
    ~Unhook() { winfer::set_session_run_hook_for_testing(nullptr); }
  } unhook;
  winfer::set_session_run_hook_for_testing(&throw_from_run);
  const struct {
    winfer_status status;
    const char* message;
  } expected[] = {
      {WINFER_OUT_OF_MEMORY, "winfer_session_run: out of memory (a size larger than can be allocated)"},
      {WINFER_OUT_OF_MEMORY, "winfer_session_run: out of memory"},
      {WINFER_INTERNAL,
       "winfer_session_run: internal error (an unexpected std::out_of_range; a bug in winfer, please report it)"},
      {WINFER_INTERNAL,
       "winfer_session_run: internal error (an unexpected non-standard exception; a bug in winfer, please report it)"},
  };
  for (int kind = 0; kind < 4; ++kind) {
    g_throw_kind = kind;
    CHECK(winfer_session_run(session.handle, in.data(), in_count, out.data(), out_count) == expected[kind].status);
    CHECK(std::string(winfer_last_error()) == expected[kind].message);
  }
  winfer::set_session_run_hook_for_testing(nullptr);
  // The exception left the session free: it runs again.
  CHECK(winfer_session_run(session.handle, in.data(), in_count, out.data(), out_count) == WINFER_OK);
}
