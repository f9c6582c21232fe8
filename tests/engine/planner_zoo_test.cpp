// SLOW (the "slow: zoo ..." cases, about a minute in all): every zoo model with random
// weights, at batch 1 and 4, runs out of its planned arena, with every dead arena byte
// poisoned before each layer, and gives bit-identical outputs to unplanned execution (one
// allocation per tensor, same kernels). The plan must also be within 5% of the lower bound.
//
// The big networks run at a smaller input than their declared 224x224 (a copy of the YAML
// with another `input.shape` in a temporary directory): the plan's structure does not depend
// on the image size, and CI runs the whole suite on two cores.
#include "engine/model_test_util.h"

using namespace winfer_test;

namespace {

void check_zoo_model(const std::string& name, int64_t side) {
  const std::string yaml = zoo_yaml_at(name, side);
  TempDir dir;
  winfer::LoadOptions load;
  load.random_weights_seed = 1;
  auto model = load_text(dir, yaml, load);
  REQUIRE_MESSAGE(model.ok(), model.status().message());

  for (int64_t batch : {1, 4}) {
    INFO(name << " at " << side << "x" << side << ", batch " << batch);
    const winfer::Tensor input = random_tensor(winfer::Shape{batch, 3, side, side}, 17, winfer::Layout::kNCHW);
    winfer::SessionOptions options;
    options.batch = batch;
    options.plan_memory = false;
    auto unplanned = winfer::Session::create(model.value(), options);
    options.plan_memory = true;
    options.poison_unused_memory = true;
    auto planned = winfer::Session::create(model.value(), options);
    REQUIRE(unplanned.ok());
    REQUIRE(planned.ok());
    auto expected = unplanned.value()->run(input);
    auto got = planned.value()->run(input);
    REQUIRE(expected.ok());
    REQUIRE(got.ok());
    CHECK(same_bits(got.value(), expected.value()));

    const winfer::MemoryReport& r = planned.value()->memory_report();
    const double over = double(r.arena_bytes) / double(r.activations_lower_bound_bytes) - 1.0;
    MESSAGE(name << " " << side << "x" << side << " batch " << batch << ": arena " << r.arena_bytes
                 << " B, lower bound " << r.activations_lower_bound_bytes << " B (+" << 100.0 * over << "%), no reuse "
                 << r.activations_sum_bytes << " B, " << r.in_place_layers << " layers in place");
    CHECK(over <= 0.05);
    CHECK(r.arena_bytes <= r.activations_sum_bytes);
  }
}

}  // namespace

// Input side per model: 224 where a batch-4 run is cheap enough, smaller for the heavy ones.
#define ZOO_CASE(model, side)                                                                      \
  TEST_CASE("slow: zoo " model " runs planned and poisoned exactly as unplanned, batch 1 and 4") { \
    check_zoo_model(model, side);                                                                  \
  }

ZOO_CASE("resnet18", 224)
ZOO_CASE("resnet34", 160)
ZOO_CASE("resnet50", 160)
ZOO_CASE("resnet101", 112)
ZOO_CASE("resnet152", 96)
ZOO_CASE("shufflenet_v2_x0_5", 224)
ZOO_CASE("shufflenet_v2_x1_0", 224)
ZOO_CASE("shufflenet_v2_x1_5", 224)
ZOO_CASE("shufflenet_v2_x2_0", 224)
ZOO_CASE("vgg11", 64)
ZOO_CASE("vgg11_bn", 64)
ZOO_CASE("vgg13", 64)
ZOO_CASE("vgg13_bn", 64)
ZOO_CASE("vgg16", 64)
ZOO_CASE("vgg16_bn", 64)
ZOO_CASE("vgg19", 64)
ZOO_CASE("vgg19_bn", 64)
