// The C API (winfer/winfer_c.h): handles, status codes, winfer_last_error(), and results equal
// to the C++ API's; and Model::load_from_memory, which the C API also exposes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
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
  CHECK(winfer_model_load_from_memory(bad.data(), bad.size(), nullptr, 0, nullptr, &model.handle) ==
        WINFER_PARSE_ERROR);
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
  CHECK(winfer_session_layer_timing(session.handle, layers, &name, nullptr, nullptr, nullptr) ==
        WINFER_INVALID_ARGUMENT);
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
        static_cast<Seen*>(user)->lines.push_back(std::string(level == WINFER_LOG_INFO ? "info: " : "other: ") +
                                                  message);
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
  CHECK(winfer_test::same_bits(winfer_test::run_model(from_memory, input),
                               winfer_test::run_model(from_file.value(), input)));
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
  check_status(winfer_session_output_shape(session.handle, 3, dims, 8, &rank), kInvalid, "winfer_session_output_shape",
               "output 3 does not exist");
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
               "winfer_model_load_from_memory",
               "yaml_size is 18446744073709551615 bytes, more than the limit of 16777216");
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

namespace {

struct CLoadConfig {
  winfer_load_config* handle = nullptr;
  CLoadConfig() { REQUIRE(winfer_load_config_create(&handle) == WINFER_OK); }
  ~CLoadConfig() { winfer_load_config_destroy(handle); }
};
struct CSessionConfig {
  winfer_session_config* handle = nullptr;
  CSessionConfig() { REQUIRE(winfer_session_config_create(&handle) == WINFER_OK); }
  ~CSessionConfig() { winfer_session_config_destroy(handle); }
};

// Runs the session's first output on `input` through winfer_session_run.
std::vector<float> c_run(winfer_session* session, const std::vector<float>& input) {
  std::vector<float> output(io_counts(session).output);
  REQUIRE_MESSAGE(winfer_session_run(session, input.data(), input.size(), output.data(), output.size()) == WINFER_OK,
                  winfer_last_error());
  return output;
}

// Two outputs, no weights: relu and a pooling of it, on [1, 2, 4, 6].
const char kTwoOutputs[] =
    "format: winfer/1\ninput: {name: image, shape: [1, 2, 4, 6]}\noutputs: [pool, act]\nlayers:\n"
    "  - {name: act, op: relu}\n  - {name: pool, op: maxpool2d, kernel_size: 2}\n";

}  // namespace

TEST_CASE("c api: config objects set every option with checks, and make the sessions the structs make") {
  const std::string path = repo_path("models/examples/tiny_net.yaml");
  CLoadConfig load;
  REQUIRE(winfer_load_config_set_pack_for(load.handle, "im2col") == WINFER_OK);
  REQUIRE(winfer_load_config_set_fuse(load.handle, 1) == WINFER_OK);
  REQUIRE(winfer_load_config_set_weights_path(load.handle, nullptr) == WINFER_OK);
  REQUIRE(winfer_load_config_set_confine_to(load.handle, nullptr) == WINFER_OK);
  CModel model;
  REQUIRE_MESSAGE(winfer_model_load_with_config(path.c_str(), load.handle, &model.handle) == WINFER_OK,
                  winfer_last_error());
  CSessionConfig config;
  REQUIRE(winfer_session_config_set_conv_algorithm(config.handle, "im2col") == WINFER_OK);
  REQUIRE(winfer_session_config_set_threads(config.handle, 2) == WINFER_OK);
  REQUIRE(winfer_session_config_set_batch(config.handle, 2) == WINFER_OK);
  REQUIRE(winfer_session_config_set_device(config.handle, "cpu") == WINFER_OK);
  REQUIRE(winfer_session_config_set_poison_unused_memory(config.handle, 1) == WINFER_OK);
  REQUIRE(winfer_session_config_set_check_numerics(config.handle, 1) == WINFER_OK);
  CSession session;
  REQUIRE_MESSAGE(winfer_session_create_with_config(model.handle, config.handle, &session.handle) == WINFER_OK,
                  winfer_last_error());
  winfer_memory_report report;
  REQUIRE(winfer_session_memory_report(session.handle, &report) == WINFER_OK);
  CHECK(report.session_weights_bytes == 0);  // pack_for reached the load: the session shares the weights

  // The same session through the deprecated structs: bitwise the same output.
  winfer_session_options options;
  winfer_session_options_init(&options);
  options.conv_algorithm = "im2col";
  options.threads = 2;
  options.batch = 2;
  CSession from_struct;
  REQUIRE(winfer_session_create(model.handle, &options, &from_struct.handle) == WINFER_OK);
  std::vector<float> input(io_counts(session.handle).input);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i % 17) * 0.125f - 1.f;
  CHECK(c_run(session.handle, input) == c_run(from_struct.handle, input));

  // A session keeps its own copy: changing or destroying the config afterwards changes nothing.
  REQUIRE(winfer_session_config_set_batch(config.handle, 1) == WINFER_OK);
  winfer_session_config_destroy(config.handle);
  config.handle = nullptr;
  CHECK(io_counts(session.handle).input == input.size());
  // NULL configs are the defaults.
  CModel plain;
  REQUIRE(winfer_model_load_with_config(path.c_str(), nullptr, &plain.handle) == WINFER_OK);
  CSession defaults;
  REQUIRE(winfer_session_create_with_config(plain.handle, nullptr, &defaults.handle) == WINFER_OK);
  CHECK(io_counts(defaults.handle).input * 2 == input.size());
}

TEST_CASE("c api: config setters refuse bad values naming the setter, and configs are checked handles") {
  CLoadConfig load;
  CSessionConfig config;
  const winfer_status kInvalid = WINFER_INVALID_ARGUMENT;
  check_status(winfer_session_config_set_threads(config.handle, 0), kInvalid, "winfer_session_config_set_threads",
               "threads must be >= 1, got 0");
  check_status(winfer_session_config_set_batch(config.handle, -2), kInvalid, "winfer_session_config_set_batch",
               "batch must be >= 1 (or 0 for the model's), got -2");
  check_status(winfer_session_config_set_device(config.handle, "gpu"), kInvalid, "winfer_session_config_set_device",
               "unknown device 'gpu' (expected cpu, cuda, cuda:N or auto)");
  check_status(winfer_session_config_set_device(config.handle, "cuda:x"), kInvalid, "winfer_session_config_set_device",
               "unknown device 'cuda:x'");
  check_status(winfer_session_config_set_device(config.handle, nullptr), kInvalid, "winfer_session_config_set_device",
               "device is NULL");
  check_status(winfer_session_config_set_conv_algorithm(config.handle, ""), kInvalid,
               "winfer_session_config_set_conv_algorithm", "algorithm is NULL or empty");
  check_status(winfer_session_config_set_plan_memory(config.handle, 2), kInvalid,
               "winfer_session_config_set_plan_memory", "plan_memory must be 0 or 1, got 2");
  check_status(winfer_session_config_set_allow_tf32(config.handle, -1), kInvalid,
               "winfer_session_config_set_allow_tf32", "allow must be 0 or 1, got -1");
  alignas(64) static unsigned char memory[256];
  check_status(winfer_session_config_set_arena(config.handle, memory + 8, 128), kInvalid,
               "winfer_session_config_set_arena",
               "arena is not aligned to WINFER_ARENA_ALIGNMENT (64 bytes): its address modulo 64 is 8");
  check_status(winfer_session_config_set_arena(config.handle, nullptr, 128), kInvalid,
               "winfer_session_config_set_arena", "arena is NULL but bytes is 128");
  check_status(winfer_load_config_set_fuse(load.handle, 5), kInvalid, "winfer_load_config_set_fuse",
               "fuse must be 0 or 1, got 5");
  check_status(winfer_load_config_set_random_weights(load.handle, 3, 1), kInvalid,
               "winfer_load_config_set_random_weights", "enable must be 0 or 1, got 3");
  check_status(winfer_load_config_set_pack_for(load.handle, nullptr), kInvalid, "winfer_load_config_set_pack_for",
               "algorithm is NULL");
  check_status(winfer_load_config_create(nullptr), kInvalid, "winfer_load_config_create", "config is NULL");
  check_status(winfer_session_config_create(nullptr), kInvalid, "winfer_session_config_create", "config is NULL");

  // A refused value left the config as it was: the defaults still make a session.
  CModel model;
  REQUIRE(winfer_load_config_set_pack_for(load.handle, "no_such_algorithm") == WINFER_OK);
  check_status(
      winfer_model_load_with_config(repo_path("models/examples/tiny_net.yaml").c_str(), load.handle, &model.handle),
      kInvalid, "winfer_model_load_with_config", "no_such_algorithm");
  REQUIRE(winfer_load_config_set_pack_for(load.handle, "im2win") == WINFER_OK);
  REQUIRE(winfer_model_load_with_config(repo_path("models/examples/tiny_net.yaml").c_str(), load.handle,
                                        &model.handle) == WINFER_OK);
  CSession session;
  REQUIRE_MESSAGE(winfer_session_create_with_config(model.handle, config.handle, &session.handle) == WINFER_OK,
                  winfer_last_error());
  // What only the session can check is checked there.
  REQUIRE(winfer_session_config_set_conv_algorithm(config.handle, "no-such") == WINFER_OK);
  winfer_session* s = nullptr;
  check_status(winfer_session_create_with_config(model.handle, config.handle, &s), kInvalid,
               "winfer_session_create_with_config", "unknown convolution algorithm 'no-such'");

  // Handles of the wrong kind, destroyed ones, twice destroyed.
  check_status(
      winfer_session_create_with_config(model.handle, reinterpret_cast<winfer_session_config*>(load.handle), &s),
      kInvalid, "winfer_session_create_with_config",
      "config is a winfer_load_config handle, not a winfer_session_config");
  check_status(winfer_session_config_set_threads(reinterpret_cast<winfer_session_config*>(model.handle), 1), kInvalid,
               "winfer_session_config_set_threads", "config is a winfer_model handle, not a winfer_session_config");
  winfer_load_config* dead = nullptr;
  REQUIRE(winfer_load_config_create(&dead) == WINFER_OK);
  winfer_load_config_destroy(dead);
  winfer_load_config_destroy(dead);
  check_named("winfer_load_config_destroy", "config is not a live winfer_load_config");
  check_status(
      winfer_load_config_set_fuse(dead, 1), kInvalid, "winfer_load_config_set_fuse",
      "config is not a live winfer_load_config (destroyed already, or not returned by winfer_load_config_create)");
  check_status(winfer_model_load_with_config("x.yaml", dead, &model.handle), kInvalid, "winfer_model_load_with_config",
               "config is not a live winfer_load_config");
  winfer_session_config_destroy(nullptr);
  winfer_load_config_destroy(nullptr);
}

TEST_CASE("c api: inputs and outputs have names, and a run binds them by name") {
  CModel model;
  REQUIRE_MESSAGE(winfer_model_load_from_memory_with_config(kTwoOutputs, sizeof kTwoOutputs - 1, nullptr, 0, nullptr,
                                                            &model.handle) == WINFER_OK,
                  winfer_last_error());
  CHECK(winfer_model_input_count(model.handle) == 1);
  CHECK(std::string(winfer_model_input_name(model.handle, 0)) == "image");
  CHECK(winfer_model_input_name(model.handle, 1) == nullptr);
  check_named("winfer_model_input_name", "input 1 does not exist (the model has 1)");
  CSession session;
  REQUIRE(winfer_session_create_with_config(model.handle, nullptr, &session.handle) == WINFER_OK);
  REQUIRE(winfer_session_input_count(session.handle) == 1);
  CHECK(std::string(winfer_session_input_name(session.handle, 0)) == "image");
  REQUIRE(winfer_session_output_count(session.handle) == 2);
  CHECK(std::string(winfer_session_output_name(session.handle, 0)) == "pool");
  CHECK(std::string(winfer_session_output_name(session.handle, 1)) == "act");
  CHECK(winfer_session_output_name(session.handle, 2) == nullptr);
  check_named("winfer_session_output_name", "output 2 does not exist (the session has 2)");

  std::vector<float> input(48);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i % 7) - 3.f;
  // Both outputs in the order the caller likes, then only one of them.
  std::vector<float> act(48, -9.f), pool(12, -9.f), all_act(48), all_pool(12);
  float* all[] = {all_pool.data(), all_act.data()};
  const size_t all_counts[] = {12, 48};
  REQUIRE(winfer_session_run_all(session.handle, input.data(), input.size(), all, all_counts) == WINFER_OK);
  const char* in_names[] = {"image"};
  const float* inputs[] = {input.data()};
  const size_t in_counts[] = {input.size()};
  const char* out_names[] = {"act", "pool"};
  float* outputs[] = {act.data(), pool.data()};
  const size_t out_counts[] = {48, 12};
  REQUIRE_MESSAGE(winfer_session_run_named(session.handle, 1, in_names, inputs, in_counts, 2, out_names, outputs,
                                           out_counts) == WINFER_OK,
                  winfer_last_error());
  CHECK(act == all_act);
  CHECK(pool == all_pool);
  std::fill(pool.begin(), pool.end(), 0.f);
  REQUIRE(winfer_session_run_named(session.handle, 1, in_names, inputs, in_counts, 1, out_names + 1, outputs + 1,
                                   out_counts + 1) == WINFER_OK);
  CHECK(pool == all_pool);

  // Errors name the function, the name, and the names there are.
  const char* fn = "winfer_session_run_named";
  const char* wrong_in[] = {"input"};
  check_status(
      winfer_session_run_named(session.handle, 1, wrong_in, inputs, in_counts, 1, out_names, outputs, out_counts),
      WINFER_NOT_FOUND, fn, "no input named 'input' (the session's inputs: 'image')");
  const char* wrong_out[] = {"fc"};
  check_status(
      winfer_session_run_named(session.handle, 1, in_names, inputs, in_counts, 1, wrong_out, outputs, out_counts),
      WINFER_NOT_FOUND, fn, "no output named 'fc' (the session's outputs: 'pool', 'act')");
  const char* twice[] = {"act", "act"};
  check_status(winfer_session_run_named(session.handle, 1, in_names, inputs, in_counts, 2, twice, outputs, out_counts),
               WINFER_INVALID_ARGUMENT, fn, "output 'act' is bound twice (entries 0 and 1)");
  check_status(
      winfer_session_run_named(session.handle, 0, nullptr, nullptr, nullptr, 1, out_names, outputs, out_counts),
      WINFER_INVALID_ARGUMENT, fn, "input 'image' is not bound (bind every input: 'image')");
  check_status(winfer_session_run_named(session.handle, 1, in_names, inputs, in_counts, 0, nullptr, nullptr, nullptr),
               WINFER_INVALID_ARGUMENT, fn, "no output is bound");
  check_status(
      winfer_session_run_named(session.handle, 1, in_names, nullptr, in_counts, 1, out_names, outputs, out_counts),
      WINFER_INVALID_ARGUMENT, fn, "input_names, inputs and input_counts must not be NULL");
  const size_t short_counts[] = {47};
  check_status(
      winfer_session_run_named(session.handle, 1, in_names, inputs, in_counts, 1, out_names, outputs, short_counts),
      WINFER_SHAPE_MISMATCH, fn, "has shape [1,2,4,6] (48 floats), the buffer holds 47");
  const size_t short_input[] = {47};
  check_status(
      winfer_session_run_named(session.handle, 1, in_names, inputs, short_input, 1, out_names, outputs, out_counts),
      WINFER_SHAPE_MISMATCH, fn, "the input has shape [1,2,4,6] (48 floats), got 47");
  const char* null_name[] = {nullptr};
  check_status(
      winfer_session_run_named(session.handle, 1, null_name, inputs, in_counts, 1, out_names, outputs, out_counts),
      WINFER_INVALID_ARGUMENT, fn, "input name 0 is NULL");
  // winfer_session_run keeps working: the first output.
  std::vector<float> first(12);
  REQUIRE(winfer_session_run(session.handle, input.data(), input.size(), first.data(), first.size()) == WINFER_OK);
  CHECK(first == all_pool);
}

TEST_CASE("c api: a session runs in an arena the caller gives, of the size winfer_session_plan tells") {
  CModel model;
  REQUIRE(winfer_model_load(repo_path("models/examples/tiny_net.yaml").c_str(), nullptr, &model.handle) == WINFER_OK);
  CSessionConfig config;
  REQUIRE(winfer_session_config_set_batch(config.handle, 2) == WINFER_OK);
  // The whole batch in one run on any thread count (on 2 threads the default runs 1 image per
  // lane, whose message names the lanes' arenas: checked below).
  REQUIRE(winfer_session_config_set_images_per_run(config.handle, 0) == WINFER_OK);
  winfer_memory_report plan;
  REQUIRE_MESSAGE(winfer_session_plan(model.handle, config.handle, &plan) == WINFER_OK, winfer_last_error());
  REQUIRE(plan.arena_bytes > 0);
  CSession own;
  REQUIRE(winfer_session_create_with_config(model.handle, config.handle, &own.handle) == WINFER_OK);

  const size_t bytes =
      (plan.arena_bytes + WINFER_ARENA_ALIGNMENT - 1) / WINFER_ARENA_ALIGNMENT * WINFER_ARENA_ALIGNMENT;
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> arena(
      static_cast<unsigned char*>(std::aligned_alloc(WINFER_ARENA_ALIGNMENT, bytes)));
  std::memset(arena.get(), 0x33, bytes);
  REQUIRE(winfer_session_config_set_arena(config.handle, arena.get(), plan.arena_bytes - 4) == WINFER_OK);
  winfer_session* s = nullptr;
  check_status(winfer_session_create_with_config(model.handle, config.handle, &s), WINFER_INVALID_ARGUMENT,
               "winfer_session_create_with_config",
               ("the session needs an arena of " + std::to_string(plan.arena_bytes) + " bytes").c_str());
  REQUIRE(winfer_session_config_set_arena(config.handle, arena.get(), bytes) == WINFER_OK);
  CSession given;
  REQUIRE_MESSAGE(winfer_session_create_with_config(model.handle, config.handle, &given.handle) == WINFER_OK,
                  winfer_last_error());
  std::vector<float> input(io_counts(given.handle).input);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i % 11) * 0.25f - 1.f;
  CHECK(c_run(given.handle, input) == c_run(own.handle, input));
  size_t changed = 0;
  for (size_t i = 0; i < bytes; ++i) changed += arena.get()[i] != 0x33;
  CHECK(changed > 0);

  // Runs side by side (2 lanes of 1 image): the plan is both lanes' arenas, and a smaller arena
  // is refused naming them.
  REQUIRE(winfer_session_config_set_threads(config.handle, 2) == WINFER_OK);
  REQUIRE(winfer_session_config_set_images_per_run(config.handle, 1) == WINFER_OK);
  winfer_memory_report lanes_plan;
  REQUIRE_MESSAGE(winfer_session_plan(model.handle, config.handle, &lanes_plan) == WINFER_OK, winfer_last_error());
  const size_t lanes_bytes =
      (lanes_plan.arena_bytes + WINFER_ARENA_ALIGNMENT - 1) / WINFER_ARENA_ALIGNMENT * WINFER_ARENA_ALIGNMENT;
  std::unique_ptr<unsigned char, Free> lanes_arena(
      static_cast<unsigned char*>(std::aligned_alloc(WINFER_ARENA_ALIGNMENT, lanes_bytes)));
  REQUIRE(winfer_session_config_set_arena(config.handle, lanes_arena.get(), lanes_plan.arena_bytes - 4) == WINFER_OK);
  check_status(winfer_session_create_with_config(model.handle, config.handle, &s), WINFER_INVALID_ARGUMENT,
               "winfer_session_create_with_config",
               ("but the session needs " + std::to_string(lanes_plan.arena_bytes) + " (2 lanes of").c_str());

  // CUDA has no caller arena, and no plan.
  REQUIRE(winfer_session_config_set_device(config.handle, "cuda") == WINFER_OK);
  check_status(winfer_session_create_with_config(model.handle, config.handle, &s), WINFER_UNSUPPORTED,
               "winfer_session_create_with_config", "supported on device 'cpu' only, not 'cuda'");
  check_status(winfer_session_plan(model.handle, config.handle, &plan), WINFER_UNSUPPORTED, "winfer_session_plan",
               "CPU only");
  check_status(winfer_session_plan(model.handle, config.handle, nullptr), WINFER_INVALID_ARGUMENT,
               "winfer_session_plan", "report is NULL");
}
