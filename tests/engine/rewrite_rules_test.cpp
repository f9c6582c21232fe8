// The fusion rules (engine/src/rewrites/), one pair of test cases per rule: the rewrite happens
// (the fused layer and what it absorbed, in order) and the fused graph computes what the unfused
// one does on random data for every algorithm; and a condition of the rule blocks it. One file,
// not one per rule: the rules share these YAML builders and checks, and each file of
// winfer_engine_tests is one more compile of doctest and the model helpers; the test names
// ("rewrite <rule>: ...") select a rule's cases (ctest -R 'rewrite conv_add'). The broader
// cases of two rules have files of their own (residual_fusion_test.cpp: conv_add on ResNets,
// depthwise_fusion_test.cpp: pointwise_depthwise on ShuffleNet's blocks and its memory).
#include "engine/fusion_test_util.h"
#include "engine/src/rewrites/rules.h"

using namespace winfer_test;

namespace {

// padding -1: kernel / 2; input empty: the previous layer.
std::string conv(const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t stride = 1,
                 int64_t groups = 1, int64_t padding = -1, const std::string& input = "", bool bias = false) {
  return "  - {name: " + name + ", op: conv2d, in_channels: " + std::to_string(in) +
         ", out_channels: " + std::to_string(out) + ", kernel_size: " + std::to_string(kernel) +
         ", stride: " + std::to_string(stride) + ", groups: " + std::to_string(groups) +
         ", padding: " + std::to_string(padding < 0 ? kernel / 2 : padding) + ", bias: " + (bias ? "true" : "false") +
         (input.empty() ? "" : ", input: " + input) + "}\n";
}
// A layer without attributes (relu, relu6, flatten, ...), reading `input` or the previous layer.
std::string layer(const std::string& name, const std::string& op, const std::string& input = "") {
  return "  - {name: " + name + ", op: " + op + (input.empty() ? "" : ", input: " + input) + "}\n";
}
std::string bn(const std::string& name, int64_t features, const std::string& input = "") {
  return "  - {name: " + name + ", op: batchnorm2d, num_features: " + std::to_string(features) +
         (input.empty() ? "" : ", input: " + input) + "}\n";
}
std::string add(const std::string& name, const std::string& a, const std::string& b) {
  return "  - {name: " + name + ", op: add, inputs: [" + a + ", " + b + "]}\n";
}
std::string maxpool(const std::string& name, int64_t kernel) {
  return "  - {name: " + name + ", op: maxpool2d, kernel_size: " + std::to_string(kernel) + "}\n";
}

constexpr uint64_t kSeed = 21;

std::shared_ptr<const winfer::Model> load_ok(const std::string& yaml, bool fuse = true) {
  return winfer_test::load_ok(yaml, fuse, kSeed);
}

// What layer `name` of the fused model absorbed; fails when the layer is gone.
std::vector<std::string> fused_into(const std::string& yaml, const std::string& name) {
  const auto layers = load_ok(yaml)->layers();
  const winfer::LayerInfo* layer = find_layer(layers, name);
  REQUIRE_MESSAGE(layer != nullptr, "no layer " << name);
  return layer->fused;
}

// Whether layer `name` is still a node of its own in the fused model.
bool kept(const std::string& yaml, const std::string& name) {
  return find_layer(load_ok(yaml)->layers(), name) != nullptr;
}

// The rule applied: layer `root` absorbed `fused` (in this order), which are no longer layers;
// and the fused model computes what the unfused one does, for every algorithm.
void check_rewrite(const std::string& yaml, const winfer::Shape& input, const std::string& root,
                   const std::vector<std::string>& fused) {
  CHECK(fused_into(yaml, root) == fused);
  for (const std::string& name : fused) CHECK_MESSAGE(!kept(yaml, name), name << " is still a layer");
  winfer_test::check_fused_equals_unfused(yaml, input, user_algorithms(), kSeed);
}

}  // namespace

// ---- conv_batchnorm ---------------------------------------------------------------------

TEST_CASE("rewrite conv_batchnorm: a batch norm alone reading a convolution is folded into its weights") {
  // Without a conv bias (folding creates one), with one, and into the depthwise convolution a
  // pointwise one absorbed (the batch norm follows the depthwise one).
  const std::string yaml = model_header(4, 7, 6) + "layers:\n" + conv("a", 4, 8, 3) + bn("a.bn", 8) +
                           conv("b", 8, 8, 3, 1, 1, -1, "", true) + bn("b.bn", 8) + conv("pw", 8, 6, 1) +
                           conv("dw", 6, 6, 3, 1, 6) + bn("dw.bn", 6);
  check_rewrite(yaml, winfer::Shape{2, 4, 7, 6}, "a", {"a.bn"});
  CHECK(fused_into(yaml, "b") == std::vector<std::string>{"b.bn"});
  CHECK(fused_into(yaml, "pw") == std::vector<std::string>{"dw", "dw.bn"});
  CHECK(std::string(winfer::conv_batchnorm_rule().name()) == "conv_batchnorm");
}

TEST_CASE("rewrite conv_batchnorm: not after an activation, a fused add or pooling, nor on a shared or output tensor") {
  const std::string head = model_header(4, 6, 6);
  // bn(relu(y)) is not affine in y.
  CHECK(kept(head + "layers:\n" + conv("a", 4, 4, 3) + layer("a.relu", "relu") + bn("a.bn", 4), "a.bn"));
  // bn(conv + r) would scale the residual too.
  const std::string after_add = head + "layers:\n" + conv("a", 4, 4, 3) + add("sum", "a", "input") + bn("a.bn", 4);
  CHECK(fused_into(after_add, "a") == std::vector<std::string>{"sum"});
  CHECK(kept(after_add, "a.bn"));
  // A per-channel scale does not commute with max.
  CHECK(kept(head + "layers:\n" + conv("a", 4, 4, 3) + maxpool("pool", 2) + bn("a.bn", 4), "a.bn"));
  // The convolution's output is read by another layer too, or is a graph output.
  CHECK(kept(
      head + "outputs: [a.bn, other]\nlayers:\n" + conv("a", 4, 4, 3) + bn("a.bn", 4) + layer("other", "relu", "a"),
      "a.bn"));
  CHECK(kept(head + "outputs: [a.bn, a]\nlayers:\n" + conv("a", 4, 4, 3) + bn("a.bn", 4), "a.bn"));
  // The unfused batch norm still computes what it did.
  winfer_test::check_fused_equals_unfused(after_add, winfer::Shape{1, 4, 6, 6}, {"im2win", "direct"}, kSeed);
}

// ---- activation_epilogue ----------------------------------------------------------------

TEST_CASE("rewrite activation_epilogue: relu/relu6 into a batchnorm2d, conv2d, add and linear") {
  // A standalone batch norm (it reads the graph input), a convolution (whose relu6 then keeps
  // the add from it), the add, and a linear layer, each followed by its activation.
  const std::string yaml = model_header(4, 6, 6) + "layers:\n" + bn("bn0", 4, "input") + layer("bn0.relu", "relu") +
                           conv("a", 4, 4, 3) + layer("a.relu6", "relu6") + add("sum", "a.relu6", "bn0.relu") +
                           layer("sum.relu", "relu") + layer("flatten", "flatten") +
                           "  - {name: fc, op: linear, in_features: 144, out_features: 10}\n" +
                           layer("fc.relu", "relu");
  check_rewrite(yaml, winfer::Shape{2, 4, 6, 6}, "fc", {"fc.relu"});
  CHECK(fused_into(yaml, "bn0") == std::vector<std::string>{"bn0.relu"});
  CHECK(fused_into(yaml, "a") == std::vector<std::string>{"a.relu6"});
  CHECK(fused_into(yaml, "sum") == std::vector<std::string>{"sum.relu"});
}

TEST_CASE("rewrite activation_epilogue: one activation per layer, none after a fused pooling or on an output") {
  const std::string head = model_header(4, 6, 6);
  // A second activation stays a layer.
  const std::string twice =
      head + "layers:\n" + conv("a", 4, 4, 3) + layer("a.relu", "relu") + layer("a.relu6", "relu6");
  CHECK(fused_into(twice, "a") == std::vector<std::string>{"a.relu"});
  CHECK(kept(twice, "a.relu6"));
  // The epilogue runs before the pooling; the relu was written after it.
  CHECK(kept(head + "layers:\n" + conv("a", 4, 4, 3) + maxpool("pool", 2) + layer("a.relu", "relu"), "a.relu"));
  // The layer's output is a graph output.
  CHECK(kept(head + "outputs: [sum.relu, sum]\nlayers:\n" + add("sum", "input", "input") + layer("sum.relu", "relu"),
             "sum.relu"));
}

// ---- conv_maxpool -----------------------------------------------------------------------

TEST_CASE("rewrite conv_maxpool: a max pooling after the convolution's batch norm and relu is computed band by band") {
  const std::string yaml = model_header(3, 9, 8) + "layers:\n" + conv("a", 3, 8, 3) + bn("a.bn", 8) +
                           layer("a.relu", "relu") + maxpool("pool", 2) + conv("b", 8, 8, 3, 1, 8);
  check_rewrite(yaml, winfer::Shape{2, 3, 9, 8}, "a", {"a.bn", "a.relu", "pool"});
  CHECK(kernel_description(load_ok(yaml), winfer::Shape{1, 3, 9, 8}, "a") == "im2win (fused maxpool)");
  // Nothing is folded after the pooling: the depthwise b stays a convolution of its own.
  CHECK(kept(yaml, "b"));
}

TEST_CASE("rewrite conv_maxpool: not after a fused add or a depthwise pair, nor on a shared tensor") {
  const std::string head = model_header(4, 6, 6);
  // conv_pool adds no residual.
  const std::string after_add = head + "layers:\n" + conv("a", 4, 4, 3) + add("sum", "a", "input") + maxpool("pool", 2);
  CHECK(fused_into(after_add, "a") == std::vector<std::string>{"sum"});
  CHECK(kept(after_add, "pool"));
  // The pair's band schedule pools nothing.
  CHECK(kept(head + "layers:\n" + conv("pw", 4, 8, 1) + conv("dw", 8, 8, 3, 1, 8) + maxpool("pool", 2), "pool"));
  // The convolution's output is read by another layer too.
  CHECK(kept(head + "outputs: [pool, other]\nlayers:\n" + conv("a", 4, 4, 3) + maxpool("pool", 2) +
                 layer("other", "relu", "a"),
             "pool"));
}

// ---- pointwise_depthwise ----------------------------------------------------------------

TEST_CASE(
    "rewrite pointwise_depthwise: a depthwise convolution, its batch norm and activation join the pointwise one") {
  const std::string yaml = model_header(4, 9, 7) + "layers:\n" + conv("pw", 4, 12, 1) + bn("pw.bn", 12) +
                           layer("pw.relu", "relu") + conv("dw", 12, 12, 3, 2, 12) + bn("dw.bn", 12) +
                           layer("dw.relu6", "relu6");
  check_rewrite(yaml, winfer::Shape{2, 4, 9, 7}, "pw", {"pw.bn", "pw.relu", "dw", "dw.bn", "dw.relu6"});
  CHECK(kernel_description(load_ok(yaml), winfer::Shape{1, 4, 9, 7}, "pw") == "im2win (then depthwise, fused)");
}

TEST_CASE("rewrite pointwise_depthwise: a grouped convolution (RegNet's group width 4) joins, a dense one does not") {
  const std::string head =
      model_header(4, 9, 7) + "layers:\n" + conv("pw", 4, 12, 1) + bn("pw.bn", 12) + layer("pw.relu", "relu");
  const std::string grouped = head + conv("g", 12, 12, 3, 2, 3) + bn("g.bn", 12) + layer("g.relu", "relu");
  check_rewrite(grouped, winfer::Shape{2, 4, 9, 7}, "pw", {"pw.bn", "pw.relu", "g", "g.bn", "g.relu"});
  CHECK(kernel_description(load_ok(grouped), winfer::Shape{1, 4, 9, 7}, "pw") == "im2win (then grouped, fused)");
  CHECK(kept(head + conv("dense", 12, 12, 3, 1, 1), "dense"));
}

TEST_CASE(
    "rewrite pointwise_depthwise: not depthwise after depthwise, with padding beyond the kernel, nor on an output") {
  const std::string head = model_header(6, 9, 9);
  CHECK(kept(head + "layers:\n" + conv("a", 6, 6, 3, 1, 6) + conv("dw", 6, 6, 3, 1, 6), "dw"));
  // A window of padding only would have no band to compute.
  CHECK(kept(head + "layers:\n" + conv("pw", 6, 12, 1) + conv("dw", 12, 12, 3, 1, 12, 3), "dw"));
  CHECK(kept(head + "outputs: [dw, pw]\nlayers:\n" + conv("pw", 6, 12, 1) + conv("dw", 12, 12, 3, 1, 12), "dw"));
}

// ---- conv_add ---------------------------------------------------------------------------

TEST_CASE(
    "rewrite conv_add: the convolution that runs last takes the add and its relu, the other operand as residual") {
  // A downsampling block: b (the shortcut) is listed after a, so b absorbs the add; then a basic
  // block whose identity shortcut is the downsampling block's output.
  const std::string yaml = model_header(4, 8, 7) + "layers:\n" + conv("stem", 4, 8, 3) + layer("stem.relu", "relu") +
                           conv("a", 8, 16, 3, 2) + bn("a.bn", 16) + conv("b", 8, 16, 1, 2, 1, 0, "stem.relu") +
                           bn("b.bn", 16) + add("sum", "a.bn", "b.bn") + layer("sum.relu", "relu") +
                           conv("c1", 16, 16, 3) + conv("c2", 16, 16, 3) + add("sum2", "c2", "sum.relu");
  check_rewrite(yaml, winfer::Shape{2, 4, 8, 7}, "b", {"b.bn", "sum", "sum.relu"});
  CHECK(fused_into(yaml, "a") == std::vector<std::string>{"a.bn"});
  CHECK(fused_into(yaml, "c2") == std::vector<std::string>{"sum2"});
  const auto layers = load_ok(yaml)->layers();
  CHECK(find_layer(layers, "b")->inputs == std::vector<std::string>{"stem.relu", "a.bn"});
  CHECK(find_layer(layers, "c2")->inputs == std::vector<std::string>{"c1", "sum.relu"});
  CHECK(kernel_description(load_ok(yaml), winfer::Shape{1, 4, 8, 7}, "b") == "im2win (fused add+relu)");
}

TEST_CASE("rewrite conv_add: not after an activation, not add(y, y), not with fuse = false") {
  const std::string head = model_header(4, 6, 6);
  // relu(conv) + r is not relu(conv + r).
  CHECK(kept(head + "layers:\n" + conv("a", 4, 4, 3) + layer("a.relu", "relu") + add("sum", "a.relu", "input"), "sum"));
  // Both operands are the convolution's output: there is no residual to take.
  const std::string twice = head + "layers:\n" + conv("a", 4, 4, 3) + add("sum", "a", "a");
  CHECK(kept(twice, "sum"));
  winfer_test::check_fused_equals_unfused(twice, winfer::Shape{1, 4, 6, 6}, {"im2win"}, kSeed);
  // LoadOptions::fuse = false turns every rule off.
  const std::string plain =
      head + "layers:\n" + conv("a", 4, 4, 3) + bn("a.bn", 4) + add("sum", "a.bn", "input") + layer("sum.relu", "relu");
  CHECK(load_ok(plain, false)->layers().size() == 4);
  CHECK(load_ok(plain, true)->layers().size() == 1);
}

// ---- shuffle_split ----------------------------------------------------------------------

namespace {

// ShuffleNetV2's unit boundary: a concat of two halves, the shuffle, and the next unit's split,
// whose first half joins the next concat and whose second goes through a branch. `after_shuffle`
// goes between the shuffle and the split (another reader of the shuffle's output, ...).
std::string shuffle_unit(const std::string& split_attrs, const std::string& after_shuffle = "") {
  return model_header(6, 7, 5) + "outputs: [cat2]\nlayers:\n" + conv("a", 6, 6, 1) +
         conv("b", 6, 6, 3, 1, 1, -1, "input") + "  - {name: cat, op: concat, inputs: [a, b]}\n" +
         "  - {name: shuf, op: channel_shuffle, groups: 2}\n" + after_shuffle +
         "  - {name: sp, op: split, input: shuf, " + split_attrs + "}\n" + conv("c", 12 - 5, 7, 3, 1, 1, -1, "'sp:1'") +
         "  - {name: cat2, op: concat, inputs: ['sp:0', c]}\n";
}

}  // namespace

TEST_CASE("rewrite shuffle_split: a split alone reading a shuffle is written by it, pieces of any size") {
  // Pieces 5 + 7: the second starts on the other group (channel 5 of the shuffled 12).
  const std::string yaml = shuffle_unit("sizes: [5, 7]");
  check_rewrite(yaml, winfer::Shape{1, 6, 7, 5}, "shuf", {"sp"});
  CHECK(kernel_description(load_ok(yaml), winfer::Shape{1, 6, 7, 5}, "shuf") == "shuffle and split in one pass");
  // Batch 3, every algorithm: the first piece lands in the next concat's slice.
  winfer_test::check_fused_equals_unfused(yaml, winfer::Shape{3, 6, 7, 5}, user_algorithms(), kSeed);
}

TEST_CASE("rewrite shuffle_split: not when another layer or the output reads the shuffle") {
  // A relu also reads the shuffled tensor: it must exist.
  CHECK(kept(shuffle_unit("sizes: [5, 7]", "  - {name: r, op: relu, input: shuf}\n"), "sp"));
  // The shuffled tensor is a model output.
  std::string out = shuffle_unit("sizes: [5, 7]");
  out.replace(out.find("outputs: [cat2]"), 15, "outputs: [cat2, shuf]");
  CHECK(kept(out, "sp"));
  winfer_test::check_fused_equals_unfused(out, winfer::Shape{1, 6, 7, 5}, {"im2win"}, kSeed);
}
