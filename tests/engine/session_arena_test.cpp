// SessionOptions::arena: a session running out of memory the caller provides (Session::plan
// tells how much), bitwise the same as with an arena of its own, really in that memory, and the
// errors when the memory is too small, misaligned, or asked of a backend without it; and the
// names of a session's inputs and outputs.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/model_test_util.h"
#include "winfer/winfer.h"

namespace {

using winfer::Session;
using winfer::SessionOptions;
using winfer::Tensor;
using winfer_test::contains;
using winfer_test::repo_path;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Memory = std::unique_ptr<unsigned char, FreeDeleter>;

Memory aligned_memory(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64 + 64;  // room for a misaligned view too
  return Memory(static_cast<unsigned char*>(std::aligned_alloc(64, rounded)));
}

std::shared_ptr<const winfer::Model> tiny_model() {
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

Tensor run(Session& session, const Tensor& input) {
  auto out = session.run(input);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  return std::move(out).value();
}

std::string create_error(std::shared_ptr<const winfer::Model> model, const SessionOptions& options,
                         winfer::ErrorCode code) {
  auto session = Session::create(std::move(model), options);
  REQUIRE_FALSE(session.ok());
  CHECK(session.status().code() == code);
  return session.status().message();
}

}  // namespace

TEST_CASE("session arena: a session in the caller's memory gives bitwise the outputs of one with its own arena") {
  auto model = tiny_model();
  for (const char* algorithm : {"im2win", "indirect", "im2col", "winograd"}) {
    CAPTURE(algorithm);
    SessionOptions options;
    options.conv_algorithm = algorithm;
    options.batch = 3;
    auto plan = Session::plan(model, options);
    REQUIRE_MESSAGE(plan.ok(), plan.status().message());
    auto own = Session::create(model, options);
    REQUIRE(own.ok());
    CHECK(plan.value().arena_bytes == own.value()->memory_report().arena_bytes);

    const size_t bytes = plan.value().arena_bytes;
    Memory memory = aligned_memory(bytes);
    std::memset(memory.get(), 0x5a, bytes);
    options.arena = memory.get();
    options.arena_bytes = bytes;
    auto given = Session::create(model, options);
    REQUIRE_MESSAGE(given.ok(), given.status().message());
    CHECK(std::vector<unsigned char>(memory.get(), memory.get() + bytes) == std::vector<unsigned char>(bytes, 0x5a));
    const Tensor input = winfer_test::random_tensor(given.value()->input_shape(), 5, winfer::Layout::kNCHW);
    const Tensor expected = run(*own.value(), input);
    CHECK(winfer_test::same_bits(run(*given.value(), input), expected));
    // The run wrote the caller's memory: the input, at least, went there.
    size_t changed = 0;
    for (size_t i = 0; i < bytes; ++i) changed += memory.get()[i] != 0x5a;
    CHECK(changed >= static_cast<size_t>(input.bytes()) / 2);
    // Nothing is kept there between runs: scribbling over it changes no later output.
    std::memset(memory.get(), 0xff, bytes);
    CHECK(winfer_test::same_bits(run(*given.value(), input), expected));
  }
}

TEST_CASE("session arena: sessions that never run at the same time may share one arena") {
  auto model = tiny_model();
  SessionOptions a_options, b_options;
  a_options.conv_algorithm = "indirect";
  b_options.conv_algorithm = "im2col";
  b_options.batch = 2;
  auto a_plan = Session::plan(model, a_options), b_plan = Session::plan(model, b_options);
  REQUIRE(a_plan.ok());
  REQUIRE(b_plan.ok());
  const size_t bytes = std::max(a_plan.value().arena_bytes, b_plan.value().arena_bytes);
  Memory memory = aligned_memory(bytes);
  for (SessionOptions* o : {&a_options, &b_options}) {
    o->arena = memory.get();
    o->arena_bytes = bytes;
  }
  auto a = Session::create(model, a_options), b = Session::create(model, b_options);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const Tensor a_in = winfer_test::random_tensor(a.value()->input_shape(), 1, winfer::Layout::kNCHW);
  const Tensor b_in = winfer_test::random_tensor(b.value()->input_shape(), 2, winfer::Layout::kNCHW);
  const Tensor a_first = run(*a.value(), a_in), b_first = run(*b.value(), b_in);
  CHECK(winfer_test::same_bits(run(*a.value(), a_in), a_first));
  CHECK(winfer_test::same_bits(run(*b.value(), b_in), b_first));
  CHECK(winfer_test::same_bits(a_first, winfer_test::run_model(model, a_in, [] {
                                 SessionOptions o;
                                 o.conv_algorithm = "indirect";
                                 return o;
                               }())));
}

TEST_CASE("session arena: too small, misaligned, unplanned, or on CUDA is refused naming the bytes needed") {
  auto model = tiny_model();
  SessionOptions options;
  auto plan = Session::plan(model, options);
  REQUIRE(plan.ok());
  const size_t needed = plan.value().arena_bytes;
  Memory memory = aligned_memory(needed);
  const std::string needs = "the session needs an arena of " + std::to_string(needed) + " bytes aligned to 64";
  using winfer::ErrorCode;

  options.arena = memory.get();
  options.arena_bytes = needed - 1;
  std::string message = create_error(model, options, ErrorCode::kInvalidArgument);
  CHECK(contains(message, needs));
  CHECK(contains(message, "SessionOptions::arena_bytes is only " + std::to_string(needed - 1)));

  options.arena = memory.get() + 16;
  options.arena_bytes = needed;
  message = create_error(model, options, ErrorCode::kInvalidArgument);
  CHECK(contains(message, needs));
  CHECK(contains(message, "SessionOptions::arena is not 64-byte aligned (its address modulo 64 is 16)"));

  options.arena = nullptr;
  CHECK(contains(create_error(model, options, ErrorCode::kInvalidArgument),
                 "SessionOptions::arena_bytes is " + std::to_string(needed) + " but arena is null"));

  options.arena = memory.get();
  options.plan_memory = false;
  CHECK(contains(create_error(model, options, ErrorCode::kInvalidArgument), "SessionOptions::arena needs plan_memory"));
  options.plan_memory = true;

  for (const char* device : {"cuda", "cuda:1", "auto"}) {
    options.device = device;
    CHECK(contains(create_error(model, options, ErrorCode::kUnsupported),
                   std::string("supported on device 'cpu' only, not '") + device + "'"));
    auto cuda_plan = Session::plan(model, options);
    REQUIRE_FALSE(cuda_plan.ok());
    CHECK(cuda_plan.status().code() == ErrorCode::kUnsupported);
    CHECK(contains(cuda_plan.status().message(), "Session::plan: device '" + std::string(device) + "'"));
  }
  // The plan ignores the arena given, and still checks the other options.
  options.device = "cpu";
  options.arena_bytes = 1;
  CHECK(Session::plan(model, options).ok());
  options.threads = 0;
  CHECK(contains(Session::plan(model, options).status().message(), "threads must be >= 1, got 0"));
}

TEST_CASE("session names: inputs and outputs by name, and an unknown name lists the names there are") {
  auto model = tiny_model();
  auto session = Session::create(model);
  REQUIRE(session.ok());
  const Session& s = *session.value();
  CHECK(s.input_names() == std::vector<std::string>{model->input_name()});
  CHECK(s.output_names() == model->output_names());
  REQUIRE(s.output_names().size() == s.output_shapes().size());
  auto index = s.output_index(model->output_names()[0]);
  REQUIRE(index.ok());
  CHECK(index.value() == 0);
  CHECK(s.input_index(model->input_name()).value() == 0);
  auto unknown = s.input_index("nope");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == winfer::ErrorCode::kNotFound);
  CHECK(contains(unknown.status().message(),
                 "no input named 'nope' (the model's inputs: '" + model->input_name() + "')"));
  CHECK(contains(s.output_index("nope").status().message(), "no output named 'nope' (the model's outputs: '"));
}
