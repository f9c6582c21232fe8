// Layer sets of `winfer bench`: the shipped sets parse to the shapes they promise, model files
// expand to their distinct convolution shapes, and malformed sets fail with useful messages.
#include "bench/layer_set.h"

#include <set>

#include "engine/model_test_util.h"

using namespace winfer_test;
using winfer::bench::BenchLayer;
using winfer::bench::LayerSet;

namespace {

const BenchLayer* find_layer(const LayerSet& set, const std::string& name) {
  for (const BenchLayer& l : set.layers)
    if (l.name == name) return &l;
  return nullptr;
}

void expect_parse_error(const std::string& yaml, const std::string& fragment) {
  auto set = winfer::bench::parse_layer_set(yaml, "test.yaml");
  REQUIRE_FALSE(set.ok());
  INFO(set.status().message());
  CHECK(contains(set.status().message(), fragment));
}

const char* kHeader = "format: winfer-layers/1\nname: t\n";

}  // namespace

TEST_CASE("bench layer sets: paper12 holds the paper's twelve layers") {
  auto set = winfer::bench::load_layer_set(repo_path("bench/layers/paper12.yaml"));
  REQUIRE(set.ok());
  REQUIRE(set.value().layers.size() == 12);
  CHECK(set.value().batch == 1);
  const BenchLayer& conv1 = set.value().layers[0];
  CHECK(conv1.name == "conv1");
  CHECK(conv1.params.in_channels == 3);
  CHECK(conv1.params.in_h == 227);
  CHECK(conv1.params.out_channels == 96);
  CHECK(conv1.params.kernel_h == 11);
  CHECK(conv1.params.stride_w == 4);
  CHECK(conv1.params.out_h() == 55);  // the paper's Ho
  CHECK(conv1.activation == winfer::Activation::kRelu);
  CHECK(conv1.bias);
  // The paper's GFLOP at batch 128 divided by 128: conv4 (C = 64) 610 GFLOP, conv12 15.1.
  CHECK(set.value().layers[3].params.flops() * 128 == doctest::Approx(610e9).epsilon(0.01));
  CHECK(set.value().layers[11].params.flops() * 128 == doctest::Approx(15.1e9).epsilon(0.01));
  for (const BenchLayer& l : set.value().layers) {
    CHECK(l.params.pad_top + l.params.pad_left + l.params.pad_bottom + l.params.pad_right == 0);
    CHECK(l.params.in_h == l.params.in_w);
  }
}

TEST_CASE("bench layer sets: found by name, batch override") {
  auto set = winfer::bench::load_layer_set("tiny");
  REQUIRE(set.ok());
  CHECK(set.value().name == "tiny");
  winfer::bench::set_batch(&set.value(), 3);
  for (const BenchLayer& l : set.value().layers) CHECK(l.params.batch == 3);
  const BenchLayer* dilated = find_layer(set.value(), "dilated");
  REQUIRE(dilated != nullptr);
  CHECK(dilated->params.dilation_h == 2);
  CHECK(dilated->params.pad_top == 2);
  CHECK(dilated->params.pad_left == 1);
  const BenchLayer* pointwise = find_layer(set.value(), "pointwise");
  REQUIRE(pointwise != nullptr);
  CHECK_FALSE(pointwise->bias);
  CHECK(find_layer(set.value(), "k3s2")->activation == winfer::Activation::kNone);
  CHECK(find_layer(set.value(), "grouped")->activation == winfer::Activation::kRelu6);
  CHECK(find_layer(set.value(), "depthwise")->params.is_depthwise());
}

TEST_CASE("bench layer sets: zoo takes every distinct conv shape of three networks") {
  auto set = winfer::bench::load_layer_set("zoo");
  REQUIRE(set.ok());
  std::set<std::string> shapes, prefixes;
  int depthwise = 0;
  for (const BenchLayer& l : set.value().layers) {
    CHECK(shapes.insert(l.params.to_string()).second);  // distinct
    prefixes.insert(l.name.substr(0, l.name.find(':')));
    depthwise += l.params.is_depthwise() ? 1 : 0;
  }
  CHECK(prefixes == std::set<std::string>{"resnet50", "vgg16", "shufflenet_v2_x1_0"});
  CHECK(depthwise > 0);
  // layer1.0.conv2 (3x3, 64 channels, 56x56) recurs in layer1.1 and layer1.2.
  const BenchLayer* l = find_layer(set.value(), "resnet50:layer1.0.conv2");
  REQUIRE(l != nullptr);
  CHECK(l->count == 3);
  CHECK(l->activation == winfer::Activation::kRelu);
  // conv3 of a bottleneck is followed by batch norm and the residual add: no fused activation.
  const BenchLayer* conv3 = find_layer(set.value(), "resnet50:layer1.0.conv3");
  REQUIRE(conv3 != nullptr);
  CHECK(conv3->activation == winfer::Activation::kNone);
}

TEST_CASE("bench layer sets: a model file stands for its distinct conv shapes") {
  auto set = winfer::bench::load_layer_set(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(set.ok());
  REQUIRE_FALSE(set.value().layers.empty());
  for (const BenchLayer& l : set.value().layers) CHECK(l.name.rfind("tiny_net:", 0) == 0);
}

TEST_CASE("bench layer sets: errors name the file, line and problem") {
  expect_parse_error("name: x\n", "not a layer set");
  expect_parse_error(std::string(kHeader) + "layers: []\n", "no layers");
  expect_parse_error(std::string(kHeader) + "colour: red\nlayers: []\n", "unknown key 'colour'");
  expect_parse_error(std::string(kHeader) + "layers:\n  - {name: a, in_channels: 3, out_channels: 4, kernel_size: 3}\n",
                     "missing attribute 'size'");
  expect_parse_error(
      std::string(kHeader) +
          "layers:\n  - {name: a, in_channels: 3, size: 8, out_channels: 4, kernel_size: 3, activation: gelu}\n",
      "test.yaml:4: layer 'a': activation must be relu, relu6 or none");
  expect_parse_error(std::string(kHeader) +
                         "layers:\n  - {name: a, in_channels: 3, size: 8, out_channels: 4, kernel_size: 3, strid: 2}\n",
                     "unknown key 'strid'");
  expect_parse_error(
      std::string(kHeader) + "layers:\n  - {name: a, in_channels: 3, size: 2, out_channels: 4, kernel_size: 3}\n",
      "layer 'a'");
  expect_parse_error(std::string(kHeader) +
                         "layers:\n  - {name: a, in_channels: 3, size: 8, out_channels: 4, kernel_size: 3}\n"
                         "  - {name: a, in_channels: 3, size: 8, out_channels: 4, kernel_size: 1}\n",
                     "duplicate layer name 'a'");
  auto missing = winfer::bench::load_layer_set("no_such_set");
  REQUIRE_FALSE(missing.ok());
  CHECK(contains(missing.status().message(), "paper12"));  // lists the known sets
}
