// Whole models against PyTorch's outputs (golden files written by models/tools/export_torch.py),
// for every convolution algorithm, with and without fusion, at several batch sizes.
#include "engine/model_test_util.h"
#include "kernels/cpu/conv_algorithm.h"

using namespace winfer_test;

namespace {

std::vector<std::string> user_algorithms() {
  std::vector<std::string> names;
  for (const winfer::ConvAlgorithm* a : winfer::conv_algorithms()) {
    if (std::string(a->name()) != "depthwise") names.push_back(a->name());
  }
  return names;
}

void check_against_golden(const std::string& stem, float tolerance) {
  auto model = winfer::Model::load(repo_path(stem + ".yaml"));
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  auto input = winfer::read_npy(repo_path(stem + ".input.npy"));
  auto expected = winfer::read_npy(repo_path(stem + ".output.npy"));
  REQUIRE(input.ok());
  REQUIRE(expected.ok());
  for (const std::string& algorithm : user_algorithms()) {
    for (int threads : {1, 2}) {
      winfer::SessionOptions options;
      options.conv_algorithm = algorithm;
      options.threads = threads;
      const winfer::Tensor got = run_model(model.value(), input.value(), options);
      INFO(stem << " conv=" << algorithm << " threads=" << threads);
      CHECK(max_abs_diff(got, expected.value()) <= tolerance);
    }
  }
}

}  // namespace

TEST_CASE("model: tiny_net equals PyTorch for every algorithm and thread count") {
  check_against_golden("models/examples/tiny_net", 1e-5f);
}

TEST_CASE("model: tiny_inline (inline weights) equals PyTorch") {
  check_against_golden("models/examples/tiny_inline", 1e-5f);
}

TEST_CASE("model: fusion (batch-norm folding, fused activations) does not change the result") {
  winfer::LoadOptions unfused;
  unfused.fuse = false;
  auto a = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  auto b = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"), unfused);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.value()->layers().size() < b.value()->layers().size());
  CHECK(a.value()->total_params() == b.value()->total_params());
  CHECK(a.value()->total_flops() == b.value()->total_flops());
  const winfer::Tensor input = random_tensor(winfer::Shape{3, 3, 32, 32}, 7, winfer::Layout::kNCHW);
  CHECK(max_abs_diff(run_model(a.value(), input), run_model(b.value(), input)) <= 1e-5f);
}

TEST_CASE("model: each image of a batch gives the same answer as alone") {
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  const winfer::Tensor batch = random_tensor(winfer::Shape{3, 3, 32, 32}, 11, winfer::Layout::kNCHW);
  const winfer::Tensor all = run_model(model.value(), batch);
  const int64_t image = 3 * 32 * 32, classes = all.shape()[1];
  for (int64_t n = 0; n < 3; ++n) {
    winfer::Tensor one = winfer::Tensor::allocate(winfer::Shape{1, 3, 32, 32}, winfer::Layout::kNCHW);
    std::copy(batch.data() + n * image, batch.data() + (n + 1) * image, one.data());
    const winfer::Tensor single = run_model(model.value(), one);
    for (int64_t c = 0; c < classes; ++c) CHECK(std::fabs(single.data()[c] - all.data()[n * classes + c]) <= 1e-6f);
  }
}

TEST_CASE("model: random weights are deterministic per seed and finite through a deep stack") {
  std::string yaml = model_header(3, 16, 16) + "layers:\n";
  std::string previous = "input";
  int64_t channels = 3;
  for (int i = 0; i < 16; ++i) {  // 16 conv+bn+relu: scales must keep activations finite
    const std::string n = "b" + std::to_string(i);
    yaml += "  - {name: " + n + ".conv, op: conv2d, in_channels: " + std::to_string(channels) +
            ", out_channels: 16, kernel_size: 3, padding: 1, bias: false}\n";
    yaml += "  - {name: " + n + ".bn, op: batchnorm2d, num_features: 16}\n";
    yaml += "  - {name: " + n + ".relu, op: relu}\n";
    channels = 16;
  }
  TempDir dir;
  winfer::LoadOptions seed1, seed2;
  seed1.random_weights_seed = 1;
  seed2.random_weights_seed = 2;
  auto a = load_text(dir, yaml, seed1);
  auto b = load_text(dir, yaml, seed1);
  auto c = load_text(dir, yaml, seed2);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  CHECK(a.value()->weights_source() == "random(seed=1)");
  const winfer::Tensor input = random_tensor(winfer::Shape{1, 3, 16, 16}, 5, winfer::Layout::kNCHW);
  const winfer::Tensor ya = run_model(a.value(), input), yb = run_model(b.value(), input),
                       yc = run_model(c.value(), input);
  CHECK(max_abs_diff(ya, yb) == 0.0f);
  CHECK(max_abs_diff(ya, yc) > 0.0f);
  double sum = 0;
  for (int64_t i = 0; i < ya.numel(); ++i) {
    REQUIRE(std::isfinite(ya.data()[i]));
    sum += std::fabs(ya.data()[i]);
  }
  const double mean = sum / double(ya.numel());
  CHECK(mean > 1e-3);
  CHECK(mean < 1e3);
}

TEST_CASE("model: structure-only load (no weights) gives shapes and FLOPs but cannot run") {
  TempDir dir;
  winfer::LoadOptions options;
  options.allow_missing_weights = true;
  auto model = load_text(
      dir, model_header() + "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3}\n",
      options);
  REQUIRE(model.ok());
  CHECK(model.value()->structure_only());
  CHECK(model.value()->output_shapes()[0] == winfer::Shape{1, 4, 6, 6});
  CHECK(model.value()->total_flops() == 2 * 4 * 6 * 6 * 3 * 9);
  CHECK(model.value()->total_params() == 4 * 3 * 9 + 4);
  CHECK_FALSE(winfer::Session::create(model.value()).ok());
}

TEST_CASE("model: layers may be listed before the layers they read (sorted topologically)") {
  TempDir dir;
  auto model =
      load_text(dir, model_header() +
                         "layers:\n  - {name: sum, op: add, inputs: [a, b]}\n  - {name: a, op: relu, input: input}\n"
                         "  - {name: b, op: relu6, input: input}\noutputs: [sum]\n");
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  const winfer::Tensor input = random_tensor(winfer::Shape{1, 3, 8, 8}, 9, winfer::Layout::kNCHW);
  const winfer::Tensor out = run_model(model.value(), input);
  for (int64_t i = 0; i < input.numel(); ++i) {
    const float x = input.data()[i];
    CHECK(out.data()[i] == doctest::Approx(std::max(x, 0.f) + std::min(std::max(x, 0.f), 6.f)));
  }
}
