// Fusion of a ResNet shortcut into a convolution (engine/src/rewrites/conv_add.cpp):
// add(conv(x), r) [+ relu] becomes one conv2d node with inputs (x, r)
// computing act(conv(x) + bias + r). The fused graph must compute what the unfused one does, for
// every algorithm; the add disappears only where that is safe.
#include "engine/fusion_test_util.h"

using namespace winfer_test;

namespace {

std::string conv(const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t stride,
                 const std::string& input = "") {
  return "  - {name: " + name + ", op: conv2d, in_channels: " + std::to_string(in) +
         ", out_channels: " + std::to_string(out) + ", kernel_size: " + std::to_string(kernel) +
         ", stride: " + std::to_string(stride) + ", padding: " + std::to_string(kernel / 2) + ", bias: false" +
         (input.empty() ? "" : ", input: " + input) + "}\n";
}
std::string bn(const std::string& name, int64_t features) {
  return "  - {name: " + name + ", op: batchnorm2d, num_features: " + std::to_string(features) + "}\n";
}

// A stem, a basic block with an identity shortcut (the add lists the shortcut second), and a
// downsampling block whose shortcut convolution comes after the main branch in the file (the
// add lists it first): 5x7 images, odd sizes.
std::string residual_net() {
  return model_header(3, 5, 7) + "outputs: [b2.relu]\nlayers:\n" + conv("stem", 3, 8, 3, 1) + bn("stem.bn", 8) +
         "  - {name: stem.relu, op: relu}\n" +  //
         conv("b1.conv1", 8, 8, 3, 1) + bn("b1.bn1", 8) + "  - {name: b1.relu1, op: relu}\n" +
         conv("b1.conv2", 8, 8, 3, 1) + bn("b1.bn2", 8) +
         "  - {name: b1.add, op: add, inputs: [b1.bn2, stem.relu]}\n"
         "  - {name: b1.relu, op: relu}\n" +
         conv("b2.conv1", 8, 16, 3, 2) + bn("b2.bn1", 16) + "  - {name: b2.relu1, op: relu}\n" +
         conv("b2.conv2", 16, 16, 3, 1) + bn("b2.bn2", 16) + conv("b2.down", 8, 16, 1, 2, "b1.relu") +
         bn("b2.down.bn", 16) +
         "  - {name: b2.add, op: add, inputs: [b2.down.bn, b2.bn2]}\n"
         "  - {name: b2.relu, op: relu}\n";
}

constexpr uint64_t kSeed = 5;

std::shared_ptr<const winfer::Model> load_ok(const std::string& yaml, bool fuse) {
  return winfer_test::load_ok(yaml, fuse, kSeed);
}

const winfer::LayerInfo& layer_named(const std::vector<winfer::LayerInfo>& layers, const std::string& name) {
  const winfer::LayerInfo* layer = find_layer(layers, name);
  REQUIRE_MESSAGE(layer != nullptr, "no layer " << name);
  return *layer;
}

// The adds are gone from the fused graph, and it computes what the unfused one does.
void check_fused_equals_unfused(const std::string& yaml, const winfer::Shape& input,
                                const std::vector<std::string>& algorithms) {
  CHECK(count_type(*load_ok(yaml, true), "add") == 0);
  CHECK(count_type(*load_ok(yaml, false), "add") > 0);
  winfer_test::check_fused_equals_unfused(yaml, input, algorithms, kSeed);
}

}  // namespace

TEST_CASE("residual fusion: conv+bn+add+relu becomes one conv2d node reading the shortcut") {
  const auto model = load_ok(residual_net(), true);
  const auto layers = model->layers();
  CHECK(count_type(*model, "add") == 0);
  CHECK(count_type(*model, "relu") == 0);
  CHECK(count_type(*model, "batchnorm2d") == 0);
  // Identity shortcut: the main branch's conv2 absorbs the add; its second input is the stem.
  const winfer::LayerInfo& b1 = layer_named(layers, "b1.conv2");
  CHECK(b1.inputs == std::vector<std::string>{"b1.relu1", "stem.relu"});
  CHECK(b1.fused == std::vector<std::string>{"b1.bn2", "b1.add", "b1.relu"});
  CHECK(b1.outputs == std::vector<std::string>{"b1.relu"});
  // Downsampling block: the shortcut conv runs last, so it absorbs the add; conv2 does not.
  const winfer::LayerInfo& down = layer_named(layers, "b2.down");
  CHECK(down.inputs == std::vector<std::string>{"b1.relu", "b2.bn2"});
  CHECK(down.fused == std::vector<std::string>{"b2.down.bn", "b2.add", "b2.relu"});
  CHECK(layer_named(layers, "b2.conv2").fused == std::vector<std::string>{"b2.bn2"});

  // The per-layer timings (winfer bench --per-layer, --profile) name the fused epilogue.
  CHECK(kernel_description(model, winfer::Shape{1, 3, 5, 7}, "b1.conv2") == "im2win (fused add+relu)");
}

TEST_CASE("residual fusion: fused and unfused agree for every algorithm, batch 1 and 2") {
  for (int64_t batch : {1, 2}) {
    INFO("batch " << batch);
    check_fused_equals_unfused(residual_net(), winfer::Shape{batch, 3, 5, 7}, user_algorithms());
  }
}

TEST_CASE("residual fusion: the residual stays alive until the fused conv and is not overwritten before it") {
  const auto model = load_ok(residual_net(), true);
  winfer::SessionOptions direct;  // adds the residual in a pass after the convolution: never in place
  direct.conv_algorithm = "direct";
  auto session = winfer::Session::create(model, direct);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  const winfer::MemoryReport& report = session.value()->memory_report();
  const auto layers = model->layers();
  int step = -1;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].name == "b1.conv2") step = static_cast<int>(i);
  }
  REQUIRE(step >= 0);
  for (const winfer::MemoryBuffer& b : report.buffers) {
    if (b.name == "stem.relu") CHECK(b.last_step >= step);
    if (b.name == "b1.relu") CHECK(b.in_place_of != "stem.relu");  // the output never takes over the residual
  }
}

TEST_CASE(
    "residual fusion: not when the conv already has an activation, its output is read elsewhere or is an output") {
  // conv+relu then add: relu(conv) + r is not relu-free; the add stays.
  const std::string activated = model_header(4, 5, 5) + "layers:\n" + conv("a", 4, 4, 3, 1) +
                                "  - {name: a.relu, op: relu}\n"
                                "  - {name: sum, op: add, inputs: [a.relu, input]}\n";
  CHECK(count_type(*load_ok(activated, true), "add") == 1);
  // The conv's output also feeds another layer.
  const std::string shared = model_header(4, 5, 5) + "outputs: [sum, other]\nlayers:\n" + conv("a", 4, 4, 3, 1) +
                             "  - {name: sum, op: add, inputs: [a, input]}\n"
                             "  - {name: other, op: relu, input: a}\n";
  CHECK(count_type(*load_ok(shared, true), "add") == 1);
  // The conv's output is a graph output.
  const std::string output = model_header(4, 5, 5) + "outputs: [sum, a]\nlayers:\n" + conv("a", 4, 4, 3, 1) +
                             "  - {name: sum, op: add, inputs: [a, input]}\n";
  CHECK(count_type(*load_ok(output, true), "add") == 1);
  // add(x, x): both operands are the conv's.
  const std::string twice =
      model_header(4, 5, 5) + "layers:\n" + conv("a", 4, 4, 3, 1) + "  - {name: sum, op: add, inputs: [a, a]}\n";
  CHECK(count_type(*load_ok(twice, true), "add") == 1);
  // A batch norm after a fused add cannot be folded into the weights (it would scale the residual).
  const std::string bn_after = model_header(4, 5, 5) + "layers:\n" + conv("a", 4, 4, 3, 1) +
                               "  - {name: sum, op: add, inputs: [a, input]}\n" + bn("after", 4);
  const auto with_bn = load_ok(bn_after, true);
  CHECK(count_type(*with_bn, "add") == 0);
  CHECK(count_type(*with_bn, "batchnorm2d") == 1);
  const winfer::Tensor input = random_tensor(winfer::Shape{1, 4, 5, 5}, 9, winfer::Layout::kNCHW);
  CHECK(relative_diff(run_model(with_bn, input), run_model(load_ok(bn_after, false), input)) <= 1e-5f);
  // The add's input from the graph input (producer -1) is fine, and fuse = false keeps the add.
  const std::string from_input = model_header(4, 5, 5) + "layers:\n" + conv("a", 4, 4, 3, 1) +
                                 "  - {name: sum, op: add, inputs: [input, a]}\n  - {name: r, op: relu6}\n";
  CHECK(count_type(*load_ok(from_input, true), "add") == 0);
  CHECK(count_type(*load_ok(from_input, false), "add") == 1);
  CHECK(relative_diff(run_model(load_ok(from_input, true), input), run_model(load_ok(from_input, false), input)) <=
        1e-5f);
}

namespace {

// A zoo model at a smaller input: fused vs unfused.
void check_zoo(const std::string& name, int64_t side, const std::vector<std::string>& algorithms) {
  check_fused_equals_unfused(zoo_yaml_at(name, side), winfer::Shape{1, 3, side, side}, algorithms);
}

}  // namespace

TEST_CASE("residual fusion: zoo resnet18 and resnet50 fused equal unfused") {
  check_zoo("resnet18", 64, {"im2win", "indirect", "im2col"});
  check_zoo("resnet50", 64, {"im2win"});
}

// A residual that is also the convolution's own input, add(conv(y), y): the output may take over
// the residual's storage only where no other input of the node is that same tensor (im2win and
// indirect write the output while they still read the input). indirect gave errors up to 1.2
// here when the plan let the output overwrite y.
TEST_CASE("residual fusion: add(conv(y), y) keeps y intact for every algorithm") {
  const std::string yaml = model_header(3, 5, 7) + "outputs: [add]\nlayers:\n" + conv("stem", 3, 8, 3, 1) +
                           conv("conv", 8, 8, 3, 1, "stem") + "  - {name: add, op: add, inputs: [conv, stem]}\n";
  const std::vector<winfer::LayerInfo> layers = load_ok(yaml, true)->layers();
  const winfer::LayerInfo& layer = layer_named(layers, "conv");
  REQUIRE(layer.inputs.size() == 2);
  CHECK(layer.inputs[0] == layer.inputs[1]);  // the conv reads stem twice: input and residual
  check_fused_equals_unfused(yaml, winfer::Shape{2, 3, 5, 7}, user_algorithms());
}
