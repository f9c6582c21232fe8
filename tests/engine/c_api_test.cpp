// The C API (winfer/winfer_c.h): handles, status codes, winfer_last_error(), and results equal
// to the C++ API's; and Model::load_from_memory, which the C API also exposes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
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
  int64_t dims[8];
  int rank = 0;
  REQUIRE(winfer_session_input_shape(session.handle, dims, 8, &rank) == WINFER_OK);
  size_t in = 1;
  for (int i = 0; i < rank; ++i) in *= static_cast<size_t>(dims[i]);
  REQUIRE(winfer_session_output_shape(session.handle, 0, dims, 8, &rank) == WINFER_OK);
  size_t out = 1;
  for (int i = 0; i < rank; ++i) out *= static_cast<size_t>(dims[i]);
  std::vector<float> x(in, 0.5f), y(out);
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
