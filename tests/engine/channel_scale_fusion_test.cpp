// The rule channel_scale_conv (engine/src/rewrites/channel_scale_conv.cpp): squeeze-and-
// excitation's product mul(x, s) read only by a convolution becomes that convolution's input
// scale, conv(x * s), folded into a copy of its packed weights per image (im2win, indirect) or
// applied to a copy of the input (the other algorithms; a session whose input is smaller than
// the declared one). Cases: the rewrite and its kernel descriptions; the conditions that block
// it; fused against unfused for every algorithm, 1 and 2 threads, batch 1 and 3, with unused
// arena memory poisoned: a 1x1 projection, one with a residual (inputs x, scale, residual), a 3x3
// one with padding and a grouped one (the fold's row -> channel map), and the copy path.
#include "engine/fusion_test_util.h"

using namespace winfer_test;

namespace {

constexpr uint64_t kSeed = 17;

std::string conv(const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t groups = 1,
                 const std::string& input = "") {
  return same_conv(name, in, out, kernel, groups, input);
}
std::string layer(const std::string& name, const std::string& op, const std::string& extra = "") {
  return "  - {name: " + name + ", op: " + op + (extra.empty() ? "" : ", " + extra) + "}\n";
}

// stem 6 -> 24 (+ silu) on 23x19 images, squeeze-and-excitation (pool, 24 -> 6 + silu, 6 -> 24 +
// sigmoid, mul), then `project` (24 -> `out` channels, `kernel` x `kernel`, `groups`) + batch
// norm, plus the stem's output when `residual` (out = 24).
std::string se_net(int64_t out = 8, int64_t kernel = 1, int64_t groups = 1, bool residual = false) {
  std::string yaml = model_header(6, 23, 19) + "layers:\n" + conv("stem", 6, 24, 3) + layer("stem.act", "silu") +
                     layer("se.pool", "adaptive_avgpool2d", "output_size: 1") + conv("se.fc1", 24, 6, 1) +
                     layer("se.act", "silu") + conv("se.fc2", 6, 24, 1) + layer("se.gate", "sigmoid") +
                     layer("se.mul", "mul", "inputs: [stem.act, se.gate]") + conv("project", 24, out, kernel, groups) +
                     layer("project.bn", "batchnorm2d", "num_features: " + std::to_string(out));
  if (residual) yaml += layer("sum", "add", "inputs: [project.bn, stem.act]");
  return yaml;
}

std::shared_ptr<const winfer::Model> load(const std::string& yaml, bool fuse = true) {
  return winfer_test::load_ok(yaml, fuse, kSeed);
}

const winfer::LayerInfo& layer_info(const std::vector<winfer::LayerInfo>& layers, const std::string& name) {
  const winfer::LayerInfo* l = find_layer(layers, name);
  REQUIRE_MESSAGE(l != nullptr, "no layer " << name);
  return *l;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The kernel description of layer `name` when a session of `algorithm` runs `input`.
std::string description(std::shared_ptr<const winfer::Model> model, const winfer::Shape& input,
                        const std::string& algorithm, const std::string& name) {
  winfer::SessionOptions options;
  options.conv_algorithm = algorithm;
  options.input_shape = input.dims();
  auto session = winfer::Session::create(std::move(model), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  REQUIRE(session.value()->run(random_tensor(input, 3, winfer::Layout::kNCHW)).ok());
  for (const winfer::LayerTiming& t : session.value()->last_timings()) {
    if (t.name == name) return t.kernel;
  }
  return std::string();
}

// Fused and unfused agree for every algorithm, 1 and 2 threads, at batch 1 and 3 (and at the
// given image size, the session's input_shape), with unused arena memory poisoned.
void check_equal(const std::string& yaml, int64_t h = 23, int64_t w = 19, bool expect_fused = true) {
  const auto fused = load(yaml), unfused = load(yaml, false);
  CHECK(count_type(*fused, "mul") == (expect_fused ? 0 : 1));
  CHECK(fused->total_params() == unfused->total_params());
  CHECK(fused->total_flops() == unfused->total_flops());
  for (int64_t batch : {1, 3}) {
    const winfer::Shape shape{batch, 6, h, w};
    const winfer::Tensor input = random_tensor(shape, 23, winfer::Layout::kNCHW);
    for (const std::string& algorithm : user_algorithms()) {
      for (int threads : {1, 2}) {
        INFO("batch " << batch << ", " << h << "x" << w << ", conv=" << algorithm << ", threads " << threads);
        winfer::SessionOptions options;
        options.conv_algorithm = algorithm;
        options.threads = threads;
        options.input_shape = shape.dims();
        options.poison_unused_memory = true;
        CHECK(relative_diff(run_model(fused, input, options), run_model(unfused, input, options)) <= 1e-5f);
      }
    }
  }
}

}  // namespace

TEST_CASE("rewrite channel_scale_conv: the squeeze-and-excitation product becomes the next convolution's input scale") {
  const auto fused = load(se_net()), unfused = load(se_net(), false);
  CHECK(count_type(*fused, "mul") == 0);
  CHECK(count_type(*unfused, "mul") == 1);
  const auto layers = fused->layers();
  CHECK(contains(layer_info(layers, "project").fused, "se.mul"));
  CHECK(contains(layer_info(layers, "project").fused, "project.bn"));
  CHECK(fused->total_params() == unfused->total_params());
  const winfer::Shape input{1, 6, 23, 19};
  // 24 x 8 weights against 23 x 19 x 24 inputs: folded by the panel algorithms.
  for (const char* algorithm : {"im2win", "indirect"}) {
    INFO(algorithm);
    const std::string text = description(fused, input, algorithm, "project");
    CHECK(text.find("fused mul") != std::string::npos);
    CHECK(text.find("channel scale in the weights") != std::string::npos);
  }
  CHECK(description(fused, input, "im2col", "project").find("channel scale on a copy of the input") !=
        std::string::npos);
  // A smaller image than the declared one: the input (5 x 4 x 24) is smaller than 8 times the
  // weights, so even im2win scales a copy of it.
  CHECK(description(fused, winfer::Shape{1, 6, 5, 4}, "im2win", "project").find("on a copy of the input") !=
        std::string::npos);
}

TEST_CASE("rewrite channel_scale_conv: fused equals unfused, weights folded or input copied") {
  SUBCASE("1x1 projection") { check_equal(se_net()); }
  SUBCASE("with a residual: inputs x, scale, residual") {
    const std::string yaml = se_net(24, 1, 1, true);
    const auto fused = load(yaml);
    CHECK(count_type(*fused, "mul") == 0);
    CHECK(count_type(*fused, "add") == 0);
    check_equal(yaml);
  }
  SUBCASE("3x3 projection with padding: every tap's rows scaled by their channel") { check_equal(se_net(4, 3)); }
  SUBCASE("grouped projection (2 groups of 12 -> 16)") { check_equal(se_net(32, 1, 2)); }
  SUBCASE("an image smaller than declared: the copy path") { check_equal(se_net(), 5, 4); }
}

TEST_CASE("rewrite channel_scale_conv: what it leaves alone") {
  SUBCASE("a product of two same-shape tensors") {
    const std::string yaml = model_header(6, 23, 19) + "layers:\n" + conv("a", 6, 24, 3) +
                             conv("b", 6, 24, 3, 1, "input") + layer("prod", "mul", "inputs: [a, b]") +
                             conv("project", 24, 8, 1);
    check_equal(yaml, 23, 19, /*expect_fused=*/false);
  }
  SUBCASE("a product another layer reads too") {
    const std::string yaml = se_net() + layer("other", "relu", "input: se.mul");
    CHECK(count_type(*load(yaml), "mul") == 1);
  }
  SUBCASE("weights too large for the input: 24 -> 200 channels on 23 x 19") {
    CHECK(count_type(*load(se_net(200)), "mul") == 1);
  }
  SUBCASE("a 1x1 scale not from a global pooling") {
    // A 1x1 average pooling of a 1x1-pooled tensor's convolution still counts; a strided
    // convolution of the input down to 1x1 does not (its size follows the input's).
    const std::string yaml = model_header(6, 23, 19) + "layers:\n" + conv("stem", 6, 24, 3) +
                             "  - {name: squash, op: conv2d, in_channels: 6, out_channels: 24, kernel_size: [23, 19], "
                             "bias: true, input: input}\n" +
                             layer("prod", "mul", "inputs: [stem, squash]") + conv("project", 24, 8, 1);
    CHECK(count_type(*load(yaml), "mul") == 1);
  }
}
