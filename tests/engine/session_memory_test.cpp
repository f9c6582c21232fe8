// A session larger than the machine's available memory is refused before anything is
// allocated, with the numbers; the process goes on and smaller sessions still work.
#include "engine/model_test_util.h"
#include "engine/src/session_impl.h"

using namespace winfer_test;

TEST_CASE("session memory: a batch larger than available memory is refused with the numbers, before allocating") {
  const size_t available = winfer::available_host_memory();
  REQUIRE(available > 0);  // Linux: /proc/meminfo has MemAvailable
  winfer::LoadOptions random;
  random.random_weights_seed = 1;
  auto model = winfer::Model::load(repo_path("models/zoo/resnet18.yaml"), random);
  REQUIRE(model.ok());
  winfer::SessionOptions options;
  auto one = winfer::Session::create(model.value(), options);
  REQUIRE(one.ok());
  const size_t per_image = one.value()->memory_report().arena_bytes;
  // Twice what is available: the arena alone cannot fit (weights and workspaces do not grow with the batch).
  options.batch = static_cast<int64_t>(2 * available / per_image + 1);
  auto huge = winfer::Session::create(model.value(), options);
  REQUIRE_FALSE(huge.ok());
  const std::string& message = huge.status().message();
  INFO(message);
  CHECK(huge.status().code() == winfer::ErrorCode::kOutOfMemory);
  CHECK(contains(message, "resnet18.yaml: a session with batch " + std::to_string(options.batch) + " needs "));
  CHECK(contains(message, "MiB this machine has available (MemAvailable); use a smaller batch"));
  // Nothing was allocated and nothing broke: a small session still runs.
  options.batch = 2;
  auto small = winfer::Session::create(model.value(), options);
  REQUIRE(small.ok());
  winfer::Tensor input = winfer::Tensor::allocate(small.value()->input_shape(), winfer::Layout::kNCHW);
  for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] = static_cast<float>(i % 17) / 17.f;
  CHECK(small.value()->run(input).ok());
}
