// NaN and Inf in the input: they propagate as in PyTorch, and check_numerics (winfer run
// --check-numerics) stops at the first one, naming the input or the layer that produced it.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/classify_test_util.h"
#include "engine/model_test_util.h"

using namespace winfer_test;

namespace {

winfer::Tensor tiny_input(uint64_t seed) {
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  winfer::Tensor t = winfer::Tensor::allocate(model.value()->input_shape(), winfer::Layout::kNCHW);
  uint64_t state = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t.data()[i] = static_cast<float>(static_cast<double>(state >> 40) / double(1ull << 24) * 2.0 - 1.0);
  }
  return t;
}

TEST_CASE("numerics: NaN and Inf in the input propagate to the output without check_numerics") {
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    winfer::Tensor input = tiny_input(1);
    input.data()[7] = bad;
    const winfer::Tensor out = run_model(model.value(), input);
    CHECK(std::any_of(out.data(), out.data() + out.numel(), [](float v) { return !std::isfinite(v); }));
  }
}

TEST_CASE("numerics: check_numerics names the input, or the first layer that overflows") {
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  winfer::SessionOptions options;
  options.check_numerics = true;
  auto session = winfer::Session::create(model.value(), options);
  REQUIRE(session.ok());

  winfer::Tensor input = tiny_input(2);
  input.data()[3] = -std::numeric_limits<float>::infinity();
  auto failed = session.value()->run(input);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == winfer::ErrorCode::kInvalidArgument);
  CHECK(
      contains(failed.status().message(), "input 'input' has 1 non-finite value(s) of 3072 (first: -Inf at index 3)"));

  winfer::Tensor huge = tiny_input(2);
  for (int64_t i = 0; i < huge.numel(); ++i) huge.data()[i] *= 3e38f;
  failed = session.value()->run(huge);
  REQUIRE_FALSE(failed.ok());
  CHECK(contains(failed.status().message(), "layer 'stem' (conv2d)"));
  CHECK(contains(failed.status().message(), "non-finite value(s)"));

  // A finite input still runs, with the same result as without the check.
  const winfer::Tensor good = tiny_input(3);
  auto checked = session.value()->run(good);
  REQUIRE(checked.ok());
  const winfer::Tensor plain = run_model(model.value(), good);
  CHECK(max_abs_diff(checked.value(), plain) == 0.0f);
}

TEST_CASE("numerics: winfer run --check-numerics exits 1 naming the layer") {
  TempDir dir;
  // The golden input times 9e37 (still finite) overflows in the first convolution.
  auto input = winfer::read_npy(repo_path("models/examples/tiny_net.input.npy"));
  REQUIRE(input.ok());
  for (int64_t i = 0; i < input.value().numel(); ++i) input.value().data()[i] *= 9e37f;
  REQUIRE(winfer::write_npy(dir.file("huge.npy"), input.value()).ok());
  const std::string base =
      "run " + repo_path("models/examples/tiny_net.yaml") + " --repeat 0 --input " + dir.file("huge.npy");
  CommandResult r = run_cli(base + " --check-numerics");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "check_numerics:"));
  CHECK(contains(r.stderr_text, "layer 'stem'"));
  r = run_cli(base);
  CHECK(r.exit_code == 0);
}

}  // namespace
