// Fusion of a depthwise convolution into the convolution whose output it alone reads
// (engine/src/rewrites/pointwise_depthwise.cpp, kernels/cpu/conv_then_conv.h): ShuffleNet's,
// MobileNet's and EfficientNet's pointwise -> depthwise pair becomes one conv2d node computed band by band, so the
// pointwise output (the block's largest tensor) is never stored. The fused graph must compute
// what the unfused one does, for every algorithm, and plan less memory where that tensor was the
// peak.
#include "engine/fusion_test_util.h"

using namespace winfer_test;

namespace {

std::string conv(const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t groups,
                 int64_t padding, const std::string& input = "") {
  return "  - {name: " + name + ", op: conv2d, in_channels: " + std::to_string(in) +
         ", out_channels: " + std::to_string(out) + ", kernel_size: " + std::to_string(kernel) +
         ", stride: " + std::to_string(stride) + ", groups: " + std::to_string(groups) +
         ", padding: " + std::to_string(padding) + ", bias: false" + (input.empty() ? "" : ", input: " + input) + "}\n";
}
std::string bn(const std::string& name, int64_t features) {
  return "  - {name: " + name + ", op: batchnorm2d, num_features: " + std::to_string(features) + "}\n";
}

// ShuffleNet's branch: 1x1 + bn + relu, depthwise 3x3 (stride `stride`) + bn, 1x1 + bn + relu.
// 6 -> 24 channels on 11x9 images (odd sizes).
std::string branch_net(int64_t stride, const std::string& dw_activation = "") {
  return model_header(6, 11, 9) + "layers:\n" + conv("pw1", 6, 24, 1, 1, 1, 0) + bn("pw1.bn", 24) +
         "  - {name: pw1.relu, op: relu}\n" + conv("dw", 24, 24, 3, stride, 24, 1) + bn("dw.bn", 24) +
         (dw_activation.empty() ? "" : "  - {name: dw.act, op: " + dw_activation + "}\n") +
         conv("pw2", 24, 16, 1, 1, 1, 0) + bn("pw2.bn", 16) + "  - {name: pw2.relu, op: relu}\n";
}

// EfficientNet's block (MobileNetV3's with hardswish): expand 1x1 + bn + `fn`, depthwise
// `kernel` x `kernel` (stride `stride`) + bn + `fn`, project 1x1 + bn. 6 -> 24 channels on 11x9.
std::string expand_net(const std::string& fn, int64_t kernel, int64_t stride) {
  return model_header(6, 11, 9) + "layers:\n" + conv("expand", 6, 24, 1, 1, 1, 0) + bn("expand.bn", 24) +
         "  - {name: expand.act, op: " + fn + "}\n" + conv("dw", 24, 24, kernel, stride, 24, kernel / 2) +
         bn("dw.bn", 24) + "  - {name: dw.act, op: " + fn + "}\n" + conv("project", 24, 16, 1, 1, 1, 0) +
         bn("project.bn", 16);
}

constexpr uint64_t kSeed = 11;

std::shared_ptr<const winfer::Model> load_ok(const std::string& yaml, bool fuse = true) {
  return winfer_test::load_ok(yaml, fuse, kSeed);
}

// Fewer convolution nodes fused, and the same results as unfused, at 1 and 2 threads.
void check_fused_equals_unfused(const std::string& yaml, const winfer::Shape& input,
                                const std::vector<std::string>& algorithms) {
  CHECK(count_type(*load_ok(yaml, true), "conv2d") < count_type(*load_ok(yaml, false), "conv2d"));
  winfer_test::check_fused_equals_unfused(yaml, input, algorithms, kSeed, {1, 2});
}

}  // namespace

TEST_CASE("depthwise fusion: pointwise+bn+relu then depthwise+bn becomes one conv2d node") {
  const auto model = load_ok(branch_net(2));
  const auto layers = model->layers();
  CHECK(count_type(*model, "conv2d") == 2);
  CHECK(count_type(*model, "batchnorm2d") == 0);
  const winfer::LayerInfo* pw1 = find_layer(layers, "pw1");
  REQUIRE(pw1 != nullptr);
  CHECK(pw1->fused == std::vector<std::string>{"pw1.bn", "pw1.relu", "dw", "dw.bn"});
  CHECK(pw1->outputs == std::vector<std::string>{"dw.bn"});
  CHECK(find_layer(layers, "dw") == nullptr);

  // The per-layer timings (winfer bench --per-layer, --profile) say so.
  CHECK(kernel_description(model, winfer::Shape{1, 6, 11, 9}, "pw1") == "im2win (then depthwise, fused)");
}

TEST_CASE("depthwise fusion: fused and unfused agree for every algorithm, stride 1 and 2, batch 1 and 3") {
  for (int64_t stride : {1, 2}) {
    for (int64_t batch : {1, 3}) {
      INFO("stride " << stride << ", batch " << batch);
      check_fused_equals_unfused(branch_net(stride), winfer::Shape{batch, 6, 11, 9}, user_algorithms());
    }
  }
  // MobileNetV2's relu6 after the depthwise batch norm goes with it.
  const std::string relu6 = branch_net(1, "relu6");
  CHECK(find_layer(load_ok(relu6)->layers(), "pw1")->fused ==
        std::vector<std::string>{"pw1.bn", "pw1.relu", "dw", "dw.bn", "dw.act"});
  check_fused_equals_unfused(relu6, winfer::Shape{2, 6, 11, 9}, {"im2win", "direct"});
}

TEST_CASE("depthwise fusion: EfficientNet's expand + SiLU -> depthwise + SiLU, each stage applying its function") {
  const auto model = load_ok(expand_net("silu", 3, 1));
  const auto layers = model->layers();
  const winfer::LayerInfo* expand = find_layer(layers, "expand");
  REQUIRE(expand != nullptr);
  CHECK(expand->fused == std::vector<std::string>{"expand.bn", "expand.act", "dw", "dw.bn", "dw.act"});
  CHECK(count_type(*model, "silu") == 0);
  CHECK(kernel_description(model, winfer::Shape{1, 6, 11, 9}, "expand") == "im2win (silu, then depthwise+silu, fused)");
  // 3x3 and 5x5 (EfficientNet's), stride 1 and 2, batch 1 and 3 (bands of whole images), and
  // MobileNetV3's hardswish.
  for (int64_t kernel : {3, 5}) {
    for (int64_t stride : {1, 2}) {
      for (int64_t batch : {1, 3}) {
        INFO("kernel " << kernel << ", stride " << stride << ", batch " << batch);
        check_fused_equals_unfused(expand_net("silu", kernel, stride), winfer::Shape{batch, 6, 11, 9},
                                   user_algorithms());
      }
    }
  }
  check_fused_equals_unfused(expand_net("hardswish", 3, 2), winfer::Shape{2, 6, 11, 9}, {"im2win", "indirect"});
}

TEST_CASE("depthwise fusion: the pointwise output is never stored, so the plan is smaller") {
  // 6 -> 24 channels: the pointwise output is 4x the input and was the peak.
  const winfer::Tensor input = random_tensor(winfer::Shape{4, 6, 11, 9}, 5, winfer::Layout::kNCHW);
  winfer::SessionOptions options;
  options.batch = 4;
  options.images_per_run = 0;  // the plan of the whole batch in one run
  auto fused = winfer::Session::create(load_ok(branch_net(1), true), options);
  auto unfused = winfer::Session::create(load_ok(branch_net(1), false), options);
  REQUIRE(fused.ok());
  REQUIRE(unfused.ok());
  // Unfused, the peak is the pointwise output and the depthwise output (the same size at
  // stride 1). Fused, it is while the pair runs: its input, the depthwise output and the band,
  // which holds whole images here (one image's 24x11x9 floats fit) but never more than half the
  // batch: two of the four images, half the pointwise output (and 64-byte alignment).
  const size_t input_bytes = 4 * 6 * 11 * 9 * sizeof(float), pointwise_output = 4 * 24 * 11 * 9 * sizeof(float);
  const winfer::MemoryReport& f = fused.value()->memory_report();
  const winfer::MemoryReport& u = unfused.value()->memory_report();
  INFO("arena fused " << f.arena_bytes << " B, unfused " << u.arena_bytes << " B");
  CHECK(u.arena_bytes == 2 * pointwise_output);
  CHECK(f.arena_bytes >= input_bytes + pointwise_output + pointwise_output / 2);
  CHECK(f.arena_bytes <= input_bytes + pointwise_output + pointwise_output / 2 + 3 * 64);
  for (const winfer::MemoryBuffer& b : f.buffers) CHECK(b.name != "pw1.relu");
}

TEST_CASE("depthwise fusion: not where the pair cannot run band by band or the output is needed elsewhere") {
  const auto pw1_fused = [](const std::string& yaml) {
    const auto layers = load_ok(yaml)->layers();
    const winfer::LayerInfo* pw1 = find_layer(layers, "pw1");
    REQUIRE(pw1 != nullptr);
    return std::find(pw1->fused.begin(), pw1->fused.end(), "dw") != pw1->fused.end();
  };
  const std::string head = model_header(6, 9, 9) + "outputs: [dw]\nlayers:\n" + conv("pw1", 6, 12, 1, 1, 1, 0);
  CHECK(pw1_fused(head + conv("dw", 12, 12, 3, 1, 12, 1)));
  // The pointwise output is also read by another layer, or is a graph output.
  CHECK_FALSE(pw1_fused(model_header(6, 9, 9) + "outputs: [dw, other]\nlayers:\n" + conv("pw1", 6, 12, 1, 1, 1, 0) +
                        conv("dw", 12, 12, 3, 1, 12, 1) + "  - {name: other, op: relu, input: pw1}\n"));
  CHECK_FALSE(pw1_fused(model_header(6, 9, 9) + "outputs: [dw, pw1]\nlayers:\n" + conv("pw1", 6, 12, 1, 1, 1, 0) +
                        conv("dw", 12, 12, 3, 1, 12, 1)));
  // Padding beyond the dilated kernel: some windows read padding only (no band to compute).
  const std::string wide_pad = head + conv("dw", 12, 12, 3, 1, 12, 3);
  CHECK_FALSE(pw1_fused(wide_pad));
  // A grouped convolution that is not depthwise is fused (RegNet's 1x1 -> grouped 3x3); a dense
  // one is not, nor depthwise after depthwise.
  CHECK(pw1_fused(head + conv("dw", 12, 12, 3, 1, 4, 1)));
  CHECK_FALSE(pw1_fused(head + conv("dw", 12, 12, 3, 1, 1, 1)));
  CHECK_FALSE(pw1_fused(model_header(6, 9, 9) + "outputs: [dw]\nlayers:\n" + conv("pw1", 6, 6, 3, 1, 6, 1) +
                        conv("dw", 6, 6, 3, 1, 6, 1)));
  // A convolution that already fused a residual add or a pooling takes no depthwise.
  CHECK_FALSE(pw1_fused(model_header(6, 9, 9) + "outputs: [dw]\nlayers:\n" + conv("pw1", 6, 6, 1, 1, 1, 0) +
                        "  - {name: sum, op: add, inputs: [pw1, input]}\n" + conv("dw", 6, 6, 3, 1, 6, 1)));
  CHECK_FALSE(pw1_fused(model_header(6, 9, 9) + "outputs: [dw]\nlayers:\n" + conv("pw1", 6, 12, 1, 1, 1, 0) +
                        "  - {name: pool, op: maxpool2d, kernel_size: 2}\n" + conv("dw", 12, 12, 3, 1, 12, 1)));
  // fuse = false keeps them apart.
  CHECK(find_layer(load_ok(head + conv("dw", 12, 12, 3, 1, 12, 1), false)->layers(), "dw") != nullptr);

  // After the fused depthwise, a pooling and another depthwise stay layers of their own, and so
  // does an add (the pair has no residual epilogue).
  const std::string after = model_header(6, 9, 9) + "layers:\n" + conv("pw1", 6, 12, 1, 1, 1, 0) +
                            conv("dw", 12, 12, 3, 1, 12, 1) + "  - {name: pool, op: maxpool2d, kernel_size: 2}\n" +
                            conv("dw2", 12, 12, 3, 1, 12, 1) + conv("dw3", 12, 12, 3, 1, 12, 1);
  const auto model = load_ok(after);
  CHECK(count_type(*model, "maxpool2d") == 1);
  CHECK(count_type(*model, "conv2d") == 3);
  const std::string add = model_header(6, 9, 9) + "layers:\n" + conv("pw1", 6, 6, 1, 1, 1, 0) +
                          conv("dw", 6, 6, 3, 1, 6, 1) + "  - {name: sum, op: add, inputs: [dw, input]}\n";
  CHECK(pw1_fused(add));
  CHECK(count_type(*load_ok(add), "add") == 1);
  // The wide padding and the layers after the pair still compute what the unfused graph does.
  check_fused_equals_unfused(after, winfer::Shape{2, 6, 9, 9}, {"im2win", "im2col"});
  check_fused_equals_unfused(add, winfer::Shape{2, 6, 9, 9}, {"im2win"});
  const winfer::Tensor input = random_tensor(winfer::Shape{1, 6, 9, 9}, 8, winfer::Layout::kNCHW);
  CHECK(relative_diff(run_model(load_ok(wide_pad, true), input), run_model(load_ok(wide_pad, false), input)) <= 1e-5f);
}

TEST_CASE("depthwise fusion: zoo shufflenet_v2_x1_0 fused equals unfused") {
  check_fused_equals_unfused(zoo_yaml_at("shufflenet_v2_x1_0", 64), winfer::Shape{2, 3, 64, 64}, {"im2win", "im2col"});
}

TEST_CASE("depthwise fusion: zoo efficientnet_b0 and mobilenet_v3_small fused equal unfused") {
  // Every expand -> depthwise pair with its SiLU / Hardswish (and the squeeze-and-excitation
  // after the depthwise output, which stays whole).
  // Every function is fused but MobileNetV3's classifier's (after a linear layer).
  for (const auto& zoo : {std::pair<const char*, int>{"efficientnet_b0", 0}, {"mobilenet_v3_small", 1}}) {
    const char* name = zoo.first;
    INFO(name);
    const auto model = load_ok(zoo_yaml_at(name, 64));
    CHECK(count_type(*model, "silu") + count_type(*model, "hardswish") == zoo.second);
    check_fused_equals_unfused(zoo_yaml_at(name, 64), winfer::Shape{2, 3, 64, 64}, {"im2win"});
  }
}
