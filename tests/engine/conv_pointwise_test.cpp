// The rule conv_pointwise (engine/src/rewrites/conv_pointwise.cpp): a sigmoid / hardsigmoid /
// hardswish / silu alone reading a convolution is applied by the convolution's kernel (over its
// output after run(), pixel by pixel into a concat's channel slice). The
// fused model must give the unfused one's bits exactly: the same function on the same values.
// Cases: the rewrite and its kernel description; the conditions that block it; every CPU
// algorithm (and depthwise) x every function x 1 and 2 threads bit for bit (im2col: a few ulps,
// see check_bitwise), a 1x1 and a 3x3
// convolution with outputs that reach both saturations; a fused convolution writing its
// channel slice of a concat (out_pixel_stride) bit for bit.
#include <cstring>

#include "engine/fusion_test_util.h"
#include "engine/src/rewrites/rules.h"

using namespace winfer_test;

namespace {

constexpr uint64_t kSeed = 31;
const char* const kFunctions[] = {"sigmoid", "hardsigmoid", "hardswish", "silu"};

std::string conv(const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t groups = 1,
                 const std::string& input = "") {
  return same_conv(name, in, out, kernel, groups, input);
}
std::string layer(const std::string& name, const std::string& op, const std::string& input = "") {
  return "  - {name: " + name + ", op: " + op + (input.empty() ? "" : ", input: " + input) + "}\n";
}

std::shared_ptr<const winfer::Model> load(const std::string& yaml, bool fuse = true) {
  return winfer_test::load_ok(yaml, fuse, kSeed);
}
std::vector<std::string> fused_into(const std::string& yaml, const std::string& name) {
  const auto layers = load(yaml)->layers();
  const winfer::LayerInfo* l = find_layer(layers, name);
  REQUIRE_MESSAGE(l != nullptr, "no layer " << name);
  return l->fused;
}
bool kept(const std::string& yaml, const std::string& name) {
  return find_layer(load(yaml)->layers(), name) != nullptr;
}

// A random input scaled so that the convolutions' outputs reach past hardswish's clamps (+-3)
// and far into sigmoid's tails.
winfer::Tensor input_for(const winfer::Shape& shape) {
  winfer::Tensor t = random_tensor(shape, 29, winfer::Layout::kNCHW);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] *= 6.f;
  return t;
}

bool same_bits(const winfer::Tensor& a, const winfer::Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

// Fused and unfused (LoadOptions::fuse = false: no rule at all, and these models have nothing
// else to fuse) give the same bits for every algorithm and thread count. Except im2col: its sums
// are OpenBLAS's, and a fused 1x1 -> depthwise pair calls sgemm band by band (fewer rows per
// call) where the unfused 1x1 calls it once; some of OpenBLAS's cores sum a row's K terms in an
// order that depends on the call's rows (seen with OPENBLAS_CORETYPE=Haswell: 1 ulp on 86 of
// 2520 outputs), so im2col is held to a few ulps instead.
void check_bitwise(const std::string& yaml, const winfer::Shape& input_shape) {
  const auto fused = load(yaml, true), unfused = load(yaml, false);
  const winfer::Tensor input = input_for(input_shape);
  for (const std::string& algorithm : user_algorithms()) {
    for (int threads : {1, 2}) {
      INFO("conv=" << algorithm << ", threads " << threads);
      winfer::SessionOptions options;
      options.conv_algorithm = algorithm;
      options.threads = threads;
      options.poison_unused_memory = true;
      const winfer::Tensor a = run_model(fused, input, options), b = run_model(unfused, input, options);
      if (algorithm == "im2col")
        CHECK(relative_diff(a, b) <= 1e-6f);
      else
        CHECK(same_bits(a, b));
    }
  }
}

}  // namespace

TEST_CASE("rewrite conv_pointwise: sigmoid/hardsigmoid/hardswish/silu into the convolution, after its batch norm") {
  CHECK(std::string(winfer::conv_pointwise_rule().name()) == "conv_pointwise");
  for (const char* fn : kFunctions) {
    INFO(fn);
    // A depthwise convolution of its own, then a convolution whose depthwise one joins it
    // (pointwise_depthwise), each stage with its own function (EfficientNet's expand + SiLU ->
    // depthwise + SiLU).
    const std::string yaml = model_header(4, 6, 5) + "layers:\n" + conv("dw0", 4, 4, 3, 4) + layer("dw0.act", fn) +
                             conv("a", 4, 8, 3) + "  - {name: a.bn, op: batchnorm2d, num_features: 8}\n" +
                             layer("a.act", fn) + conv("dw", 8, 8, 3, 8) + layer("dw.act", fn);
    CHECK(fused_into(yaml, "dw0") == std::vector<std::string>{"dw0.act"});
    CHECK(fused_into(yaml, "a") == std::vector<std::string>{"a.bn", "a.act", "dw", "dw.act"});
    CHECK(kernel_description(load(yaml), winfer::Shape{1, 4, 6, 5}, "dw0") ==
          std::string("depthwise (fused ") + fn + ")");
    CHECK(kernel_description(load(yaml), winfer::Shape{1, 4, 6, 5}, "a") ==
          std::string("im2win (") + fn + ", then depthwise+" + fn + ", fused)");
    // The batch norm folded: not bitwise against the unfused model, close.
    check_fused_equals_unfused(yaml, winfer::Shape{2, 4, 6, 5}, user_algorithms(), kSeed, {1, 2});
  }
}

TEST_CASE("rewrite conv_pointwise: not on a shared or output tensor, after a residual or relu, nothing after it") {
  const std::string head = model_header(4, 6, 6);
  // Two readers of the convolution's output.
  CHECK(kept(head + "outputs: [a.act, other]\nlayers:\n" + conv("a", 4, 4, 3) + layer("a.act", "silu") +
                 layer("other", "relu", "a"),
             "a.act"));
  // The convolution's output is a graph output.
  CHECK(kept(head + "outputs: [a.act, a]\nlayers:\n" + conv("a", 4, 4, 3) + layer("a.act", "silu"), "a.act"));
  // After a fused add (the residual).
  const std::string residual =
      head + "layers:\n" + conv("a", 4, 4, 3) + "  - {name: sum, op: add, inputs: [a, input]}\n" + layer("act", "silu");
  CHECK(fused_into(residual, "a") == std::vector<std::string>{"sum"});
  CHECK(kept(residual, "act"));
  // After a fused relu: one activation per convolution.
  const std::string relu =
      head + "layers:\n" + conv("a", 4, 4, 3) + layer("a.relu", "relu") + layer("act", "hardswish");
  CHECK(fused_into(relu, "a") == std::vector<std::string>{"a.relu"});
  CHECK(kept(relu, "act"));
  // After a fused pooling (the function was written after it).
  const std::string pooled = head + "layers:\n" + conv("a", 4, 4, 3) +
                             "  - {name: pool, op: maxpool2d, kernel_size: 2}\n" + layer("act", "sigmoid");
  CHECK(fused_into(pooled, "a") == std::vector<std::string>{"pool"});
  CHECK(kept(pooled, "act"));
  // Nothing but a grouped convolution folds after it: a batch norm, relu, second function,
  // pooling or add stays a layer.
  const std::string after = head + "layers:\n" + conv("a", 4, 4, 3) + layer("a.act", "silu") +
                            "  - {name: bn, op: batchnorm2d, num_features: 4}\n";
  CHECK(fused_into(after, "a") == std::vector<std::string>{"a.act"});
  CHECK(kept(after, "bn"));
  for (const std::string& next : {layer("next", "relu"), layer("next", "sigmoid"),
                                  std::string("  - {name: next, op: maxpool2d, kernel_size: 2}\n"),
                                  std::string("  - {name: next, op: add, inputs: [a.act, input]}\n")}) {
    INFO(next);
    const std::string yaml = head + "layers:\n" + conv("a", 4, 4, 1) + layer("a.act", "silu") + next;
    CHECK(fused_into(yaml, "a") == std::vector<std::string>{"a.act"});
    CHECK(kept(yaml, "next"));
    check_fused_equals_unfused(yaml, winfer::Shape{1, 4, 6, 6}, {"im2win", "direct"}, kSeed);
  }
  // A grouped (depthwise) convolution joins it; the function goes to the pair's second stage
  // after a relu on the first; not after the second's own relu6.
  for (const int64_t groups : {int64_t{4}, int64_t{2}}) {
    const std::string yaml = head + "layers:\n" + conv("a", 4, 4, 1) + layer("a.act", "silu") +
                             conv("next", 4, 4, 3, groups) + layer("next.act", "silu");
    CHECK(fused_into(yaml, "a") == std::vector<std::string>{"a.act", "next", "next.act"});
    check_fused_equals_unfused(yaml, winfer::Shape{2, 4, 6, 6}, {"im2win", "direct"}, kSeed);
  }
  const std::string pair = head + "layers:\n" + conv("pw", 4, 8, 1) + layer("pw.relu", "relu") +
                           conv("dw", 8, 8, 3, 8) + layer("dw.act", "hardswish");
  CHECK(fused_into(pair, "pw") == std::vector<std::string>{"pw.relu", "dw", "dw.act"});
  CHECK(kernel_description(load(pair), winfer::Shape{1, 4, 6, 6}, "pw") == "im2win (then depthwise+hardswish, fused)");
  const std::string relu6 = head + "layers:\n" + conv("pw", 4, 8, 1) + layer("pw.relu", "relu") +
                            conv("dw", 8, 8, 3, 8) + layer("dw.relu6", "relu6") + layer("dw.act", "hardswish");
  CHECK(fused_into(relu6, "pw") == std::vector<std::string>{"pw.relu", "dw", "dw.relu6"});
  CHECK(kept(relu6, "dw.act"));
}

TEST_CASE(
    "conv_pointwise: fused == unfused bit for bit (im2col within ulps), every algorithm and function, 1 and 2 "
    "threads") {
  for (const char* fn : kFunctions) {
    INFO(fn);
    // 3x3 (winograd's shape) and 1x1, 24 channels (a tail past each ISA's vector), and a
    // depthwise convolution; 7x9 pixels (tiles with tails), batch 2.
    const std::string yaml = model_header(16, 7, 9) + "layers:\n" + conv("a", 16, 24, 3) + layer("a.act", fn) +
                             conv("b", 24, 20, 1) + layer("b.act", fn) + conv("dw", 20, 20, 3, 20) +
                             layer("dw.act", fn);
    REQUIRE(count_type(*load(yaml), fn) == 0);
    check_bitwise(yaml, winfer::Shape{2, 16, 7, 9});
  }
}

TEST_CASE("conv_pointwise: a fused convolution writing its slice of a concat (pixel stride) bit for bit") {
  for (const char* fn : kFunctions) {
    INFO(fn);
    const std::string yaml = model_header(8, 6, 7) + "layers:\n" + conv("a", 8, 12, 3) + layer("a.act", fn) +
                             conv("b", 8, 5, 1, 1, "input") + layer("b.act", fn) +
                             "  - {name: cat, op: concat, inputs: [a.act, b.act]}\n" + conv("c", 17, 4, 1);
    REQUIRE(count_type(*load(yaml), fn) == 0);
    check_bitwise(yaml, winfer::Shape{2, 8, 6, 7});
  }
}
