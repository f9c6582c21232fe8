// Sessions at any batch and image size (SessionOptions::input_shape, issue 22): the model's free
// dims (Model::input_dim_fixed), the one check of a requested shape (Model::check_input_shape)
// on every path (Session::create, Session::plan, the C API), the plan made for the shape, and
// outputs equal to the same network computed another way.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "winfer/winfer_c.h"

using namespace winfer;
using namespace winfer_test;

namespace {

std::shared_ptr<const Model> load_zoo(const std::string& yaml, uint64_t seed = 7) {
  LoadOptions options;
  options.random_weights_seed = seed;
  auto model = Model::load_from_memory(yaml, nullptr, 0, options, "resnet18.yaml");
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

// The zoo's resnet18 as written, or declaring another input shape (the same weights: random
// weights are a function of the seed and the parameter's name and shape).
std::string resnet18_yaml(const std::string& shape = "") {
  std::string yaml = read_bytes(repo_path("models/zoo/resnet18.yaml"));
  if (shape.empty()) return yaml;
  const std::string declared = "shape: [1, 3, 224, 224]";
  const size_t at = yaml.find(declared);
  REQUIRE(at != std::string::npos);
  yaml.replace(at, declared.size(), "shape: " + shape);
  return yaml;
}

Tensor random_input(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::allocate(shape);
  uint32_t state = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data()[i] = float(state >> 8) / float(1u << 24) * 2.0f - 1.0f;
  }
  return t;
}

// Image i of a batch as a batch of one.
Tensor image(const Tensor& batch, int64_t i) {
  const Shape& s = batch.shape();
  Tensor one = Tensor::allocate(Shape{1, s[1], s[2], s[3]});
  const int64_t count = one.numel();
  std::memcpy(one.data(), batch.data() + i * count, size_t(count) * sizeof(float));
  return one;
}

bool bitwise_equal(const float* a, const float* b, int64_t count) {
  return std::memcmp(a, b, size_t(count) * sizeof(float)) == 0;
}

void expect_error(const Status& status, ErrorCode code, const std::vector<std::string>& fragments) {
  REQUIRE_FALSE(status.ok());
  INFO("message: " << status.message());
  CHECK(status.code() == code);
  for (const std::string& f : fragments) CHECK(contains(status.message(), f));
}

// input -> flatten -> linear: the linear layer's in_features fix the image size.
const char* const kFlattenLinear =
    "format: winfer/1\n"
    "input: {name: input, shape: [1, 2, 4, 4]}\n"
    "layers:\n"
    "  - {name: flatten, op: flatten}\n"
    "  - {name: fc, op: linear, in_features: 32, out_features: 3}\n";

// A plain [N, F] input.
const char* const kFeatures =
    "format: winfer/1\n"
    "input: {name: input, shape: [1, 6]}\n"
    "layers:\n"
    "  - {name: fc, op: linear, in_features: 6, out_features: 2}\n";

std::shared_ptr<const Model> load_small(const char* yaml) {
  LoadOptions options;
  options.random_weights_seed = 3;
  auto model = Model::load_from_memory(yaml, nullptr, 0, options, "small.yaml");
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

}  // namespace

TEST_CASE("session input shape: a zoo ResNet at 2x3x160x224 equals each image alone and the model declared so") {
  const std::shared_ptr<const Model> model = load_zoo(resnet18_yaml());
  const Tensor input = random_input(Shape{2, 3, 160, 224}, 11);

  SessionOptions options;
  options.input_shape = {2, 3, 160, 224};
  auto session = Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  CHECK(session.value()->input_shape() == Shape{2, 3, 160, 224});
  REQUIRE(session.value()->output_shapes().size() == 1);
  CHECK(session.value()->output_shapes()[0] == Shape{2, 1000});
  auto output = session.value()->run(input);
  REQUIRE_MESSAGE(output.ok(), output.status().message());

  // The same network declared at 160x224 in its file, batch 2: the same shapes and kernels, so
  // bit for bit the same.
  const std::shared_ptr<const Model> declared = load_zoo(resnet18_yaml("[1, 3, 160, 224]"));
  const Tensor reference = run_model(declared, input);
  CHECK(bitwise_equal(output.value().data(), reference.data(), reference.numel()));

  // Each image alone, at batch 1 (input_shape {1,3,160,224}); im2win runs an image at a time.
  SessionOptions single = options;
  single.input_shape = {1, 3, 160, 224};
  auto alone = Session::create(model, single);
  REQUIRE_MESSAGE(alone.ok(), alone.status().message());
  for (int64_t i = 0; i < 2; ++i) {
    CAPTURE(i);
    auto one = alone.value()->run(image(input, i));
    REQUIRE_MESSAGE(one.ok(), one.status().message());
    CHECK(bitwise_equal(output.value().data() + i * 1000, one.value().data(), 1000));
  }

  // The declared shape's session refuses this input, naming both shapes.
  auto at_declared = Session::create(model);
  REQUIRE(at_declared.ok());
  expect_error(at_declared.value()->run(input).status(), ErrorCode::kShapeMismatch,
               {"has shape [2,3,160,224]", "expected [1,3,224,224]"});
}

TEST_CASE("session input shape: the memory plan is made for the requested shape") {
  const std::shared_ptr<const Model> model = load_zoo(resnet18_yaml());
  SessionOptions options;
  options.input_shape = {2, 3, 160, 224};
  options.images_per_run = 0;  // the whole batch's buffers, on any thread count
  auto planned = Session::plan(model, options);
  REQUIRE_MESSAGE(planned.ok(), planned.status().message());
  auto declared = Session::plan(model);
  REQUIRE(declared.ok());
  CHECK(planned.value().arena_bytes != declared.value().arena_bytes);
  CHECK(planned.value().activations_sum_bytes != declared.value().activations_sum_bytes);

  // The planned input buffer is the requested shape's.
  bool found = false;
  for (const MemoryBuffer& b : planned.value().buffers) {
    if (b.name == model->input_name()) {
      CHECK(b.bytes >= size_t(2 * 3 * 160 * 224) * sizeof(float));
      CHECK(b.bytes < size_t(2 * 3 * 160 * 224) * sizeof(float) + 64);
      found = true;
    }
  }
  CHECK(found);

  // The session made for it has the plan Session::plan reported.
  auto session = Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  CHECK(session.value()->memory_report().arena_bytes == planned.value().arena_bytes);
  CHECK(session.value()->activation_bytes() == planned.value().arena_bytes);

  // batch alone and input_shape with the model's H and W make the same session.
  SessionOptions by_batch;
  by_batch.batch = 2;
  SessionOptions by_shape;
  by_shape.input_shape = {2, 3, 224, 224};
  auto a = Session::plan(model, by_batch), b = Session::plan(model, by_shape);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.value().arena_bytes == b.value().arena_bytes);
  // ... and both together, when they agree.
  by_shape.batch = 2;
  CHECK(Session::plan(model, by_shape).ok());
}

TEST_CASE("session input shape: which dims a model lets a session choose") {
  const std::shared_ptr<const Model> image_model = load_small(kFlattenLinear);
  CHECK(image_model->input_dim_fixed() == std::vector<bool>{false, true, false, false});
  const std::shared_ptr<const Model> features = load_small(kFeatures);
  CHECK(features->input_dim_fixed() == std::vector<bool>{false, true});

  CHECK(image_model->check_input_shape(Shape{5, 2, 9, 3}).ok());
  CHECK(features->check_input_shape(Shape{7, 6}).ok());
  expect_error(features->check_input_shape(Shape{7, 5}), ErrorCode::kShapeMismatch,
               {"small.yaml: input shape [7,5]: dim 1 (features) is fixed at 6 by the model"});

  // [N, F] at another batch runs.
  SessionOptions options;
  options.input_shape = {4, 6};
  auto session = Session::create(features, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  CHECK(session.value()->output_shapes()[0] == Shape{4, 2});
  CHECK(session.value()->run(random_input(Shape{4, 6}, 1)).ok());
}

TEST_CASE("session input shape: a fixed dim, a wrong rank, bad dims and a disagreeing batch are refused, naming them") {
  const std::shared_ptr<const Model> model = load_zoo(resnet18_yaml());
  struct Case {
    std::vector<int64_t> shape;
    int64_t batch;
    ErrorCode code;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {{2, 4, 160, 224},
       0,
       ErrorCode::kShapeMismatch,
       {"resnet18.yaml: input shape [2,4,160,224]: dim 1 (channels) is fixed at 3 by the model",
        "declared [1,3,224,224]"}},
      {{2, 3, 160},
       0,
       ErrorCode::kShapeMismatch,
       {"input shape [2,3,160]: rank 3, but the model's input 'input' has rank 4"}},
      {{2, 3, 160, 224, 1}, 0, ErrorCode::kShapeMismatch, {"rank 5"}},
      {{2, 3, 0, 224}, 0, ErrorCode::kInvalidArgument, {"dim 2 (height) is 0; every dim must be in 1..16777216"}},
      {{0, 3, 16, 16}, 0, ErrorCode::kInvalidArgument, {"dim 0 (batch) is 0"}},
      {{1, 3, 16, -5}, 0, ErrorCode::kInvalidArgument, {"dim 3 (width) is -5"}},
      {{1, 3, 16, (int64_t(1) << 24) + 1}, 0, ErrorCode::kInvalidArgument, {"dim 3 (width) is 16777217"}},
      {{2, 3, 160, 224},
       4,
       ErrorCode::kInvalidArgument,
       {"SessionOptions::batch 4 disagrees with SessionOptions::input_shape [2,3,160,224] (batch 2)"}},
  };
  for (const Case& c : cases) {
    CAPTURE(Shape(c.shape).to_string());
    SessionOptions options;
    options.input_shape = c.shape;
    options.batch = c.batch;
    // Every path gives the same message: create (CPU and CUDA, checked before a device is
    // touched), plan, and session_input_shape itself.
    expect_error(Session::create(model, options).status(), c.code, c.fragments);
    expect_error(Session::plan(model, options).status(), c.code, c.fragments);
    expect_error(session_input_shape(*model, options).status(), c.code, c.fragments);
    options.device = "cuda";
    expect_error(Session::create(model, options).status(), c.code, c.fragments);
  }
  // A batch alone beyond 2^24.
  SessionOptions huge;
  huge.batch = (int64_t(1) << 24) + 1;
  expect_error(Session::create(model, huge).status(), ErrorCode::kInvalidArgument, {"dim 0 (batch) is 16777217"});
}

TEST_CASE("session input shape: a layer that does not admit the size is named, with the requested shape") {
  const std::shared_ptr<const Model> model = load_small(kFlattenLinear);
  SessionOptions options;
  options.input_shape = {1, 2, 5, 4};
  for (const bool plan : {false, true}) {
    CAPTURE(plan);
    const Status status = plan ? Session::plan(model, options).status() : Session::create(model, options).status();
    expect_error(
        status, ErrorCode::kShapeMismatch,
        {"small.yaml", "layer 'fc' (linear)", "in_features", "at input shape [1,2,5,4]; the model declares [1,2,4,4]"});
  }
  // Its batch is free.
  options.input_shape = {3, 2, 4, 4};
  CHECK(Session::create(model, options).ok());
}

TEST_CASE("session input shape: the C API's winfer_session_config_set_input_shape") {
  const std::string path = repo_path("models/examples/tiny_net.yaml");
  winfer_model* model = nullptr;
  REQUIRE(winfer_model_load(path.c_str(), nullptr, &model) == WINFER_OK);
  winfer_session_config* config = nullptr;
  REQUIRE(winfer_session_config_create(&config) == WINFER_OK);

  const int64_t dims[4] = {2, 3, 40, 48};
  REQUIRE(winfer_session_config_set_input_shape(config, dims, 4) == WINFER_OK);
  winfer_session* session = nullptr;
  REQUIRE_MESSAGE(winfer_session_create_with_config(model, config, &session) == WINFER_OK, winfer_last_error());
  int64_t got[8];
  int rank = 0;
  REQUIRE(winfer_session_input_shape(session, got, 8, &rank) == WINFER_OK);
  CHECK(rank == 4);
  CHECK(std::vector<int64_t>(got, got + rank) == std::vector<int64_t>{2, 3, 40, 48});

  // Its output equals the C++ session's at the same shape.
  auto cpp_model = Model::load(path);
  REQUIRE(cpp_model.ok());
  SessionOptions options;
  options.input_shape = {2, 3, 40, 48};
  const Tensor input = random_input(Shape{2, 3, 40, 48}, 5);
  const Tensor want = run_model(cpp_model.value(), input, options);
  std::vector<float> output(size_t(want.numel()));
  REQUIRE(winfer_session_run(session, input.data(), size_t(input.numel()), output.data(), output.size()) == WINFER_OK);
  CHECK(bitwise_equal(output.data(), want.data(), want.numel()));
  winfer_session_destroy(session);

  // The plan is made for it too.
  winfer_memory_report at_shape{}, at_declared{};
  REQUIRE(winfer_session_plan(model, config, &at_shape) == WINFER_OK);
  REQUIRE(winfer_session_config_set_input_shape(config, nullptr, 0) == WINFER_OK);  // back to the model's
  REQUIRE(winfer_session_plan(model, config, &at_declared) == WINFER_OK);
  CHECK(at_shape.arena_bytes > at_declared.arena_bytes);

  // What the setter can tell alone: the config stays unchanged.
  const int64_t zero[4] = {2, 3, 0, 48};
  CHECK(winfer_session_config_set_input_shape(config, zero, 4) == WINFER_INVALID_ARGUMENT);
  CHECK(contains(winfer_last_error(), "winfer_session_config_set_input_shape: input shape [2,3,0,48]: dim 2 is 0"));
  CHECK(winfer_session_config_set_input_shape(config, nullptr, 4) == WINFER_INVALID_ARGUMENT);
  CHECK(contains(winfer_last_error(), "winfer_session_config_set_input_shape: dims is NULL but rank is 4"));
  const int64_t many[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK(winfer_session_config_set_input_shape(config, many, 9) == WINFER_INVALID_ARGUMENT);
  CHECK(contains(winfer_last_error(), "rank must be <= 8"));
  CHECK(winfer_session_config_set_input_shape(nullptr, dims, 4) != WINFER_OK);

  // What needs the model: create and plan, naming themselves and the dim.
  const int64_t channels[4] = {2, 4, 40, 48};
  REQUIRE(winfer_session_config_set_input_shape(config, channels, 4) == WINFER_OK);
  session = nullptr;
  CHECK(winfer_session_create_with_config(model, config, &session) == WINFER_SHAPE_MISMATCH);
  CHECK(session == nullptr);
  CHECK(contains(winfer_last_error(), "winfer_session_create_with_config: "));
  CHECK(contains(winfer_last_error(), "dim 1 (channels) is fixed at 3 by the model"));
  CHECK(winfer_session_plan(model, config, &at_shape) == WINFER_SHAPE_MISMATCH);
  CHECK(contains(winfer_last_error(), "winfer_session_plan: "));
  const int64_t three[3] = {2, 3, 40};
  REQUIRE(winfer_session_config_set_input_shape(config, three, 3) == WINFER_OK);
  CHECK(winfer_session_create_with_config(model, config, &session) == WINFER_SHAPE_MISMATCH);
  CHECK(contains(winfer_last_error(), "rank 3, but the model's input 'input' has rank 4"));
  REQUIRE(winfer_session_config_set_input_shape(config, dims, 4) == WINFER_OK);
  REQUIRE(winfer_session_config_set_batch(config, 3) == WINFER_OK);
  CHECK(winfer_session_create_with_config(model, config, &session) == WINFER_INVALID_ARGUMENT);
  CHECK(contains(winfer_last_error(), "SessionOptions::batch 3 disagrees"));

  winfer_session_config_destroy(config);
  winfer_model_destroy(model);
}
