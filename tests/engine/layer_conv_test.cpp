// conv2d (every algorithm, depthwise), batchnorm2d, relu/relu6 and the fusions that rewrite
// them (BN folding, fused activations) against float64 references.
#include <algorithm>
#include <cmath>
#include <string>

#include "engine/src/fusion.h"
#include "layer_test_util.h"
#include "layers/conv2d.h"

namespace winfer {
namespace layer_test {
namespace {

AttrList conv_attrs(const ConvCase& k) {
  return {{"in_channels", int_attr(k.c)},           {"out_channels", int_attr(k.co)},
          {"kernel_size", ints_attr({k.kh, k.kw})}, {"stride", ints_attr({k.sh, k.sw})},
          {"dilation", ints_attr({k.dh, k.dw})},    {"padding", ints_attr({k.pt, k.pl, k.pb, k.pr})},
          {"groups", int_attr(k.groups)},           {"bias", bool_attr(k.bias)}};
}

// bn_reference with the parameters named "<prefix>.weight" etc. in `p`.
RefTensor bn_reference(const RefTensor& x, const MapParams& p, const std::string& prefix, double eps) {
  return bn_reference(x, p.at(prefix + ".weight"), p.at(prefix + ".bias"), p.at(prefix + ".running_mean"),
                      p.at(prefix + ".running_var"), eps);
}

void add_bn_params(MapParams& p, const std::string& prefix, int64_t channels) {
  p.add_random(prefix + ".weight", Shape{channels}, 0.5f, 1.0f);  // [0.5, 1.5]
  p.add_random(prefix + ".bias", Shape{channels});
  p.add_random(prefix + ".running_mean", Shape{channels});
  p.add_random(prefix + ".running_var", Shape{channels}, 0.75f, 1.25f);  // [0.5, 2]
}

// Loads a conv with random weights named "conv.weight"/"conv.bias" into `params`.
// Also returns its output shape when asked.
std::unique_ptr<Op> loaded_conv(const ConvCase& k, MapParams& params, Shape* out_shape = nullptr) {
  params.add_random("conv.weight", Shape{k.co, k.c / k.groups, k.kh, k.kw});
  if (k.bias) params.add_random("conv.bias", Shape{k.co});
  std::unique_ptr<Op> conv = make_op("conv2d", conv_attrs(k));
  const Shape out = prepare(*conv, {Shape{k.n, k.c, k.h, k.w}}, params, "conv")[0];
  if (out_shape != nullptr) *out_shape = out;
  return conv;
}

// The numbers of every case with every algorithm are checked against float64 through the
// public API by the op checker (op_check_test.cpp, same table); here only which kernel the layer
// compiles to, which needs the algorithms' supports().
TEST_CASE("layer conv2d runs the requested algorithm where it supports the layer, depthwise for depthwise") {
  for (const ConvCase& k : kConvCases) {
    MapParams params;
    std::unique_ptr<Op> conv = loaded_conv(k, params);
    const Shape input{k.n, k.c, k.h, k.w};
    std::vector<Shape> outputs;
    REQUIRE(conv->infer_shapes({input}, &outputs).ok());
    const ConvParams p = dynamic_cast<const Conv2dOp&>(*conv).params_for(input);
    for (const ConvAlgorithm* algorithm : conv_algorithms()) {
      CompileOptions options;
      options.conv_algorithm = algorithm;
      auto kernel = conv->compile({input}, outputs, options);
      REQUIRE_MESSAGE(kernel.ok(), kernel.status().message());
      const std::string used = kernel.value()->describe();
      const std::string expected_algorithm = p.is_depthwise()         ? "depthwise"
                                             : algorithm->supports(p) ? algorithm->name()
                                                                      : "im2win";
      INFO(k.name, ": requested ", std::string(algorithm->name()), ", kernel says '", used, "'");
      CHECK(used.rfind(expected_algorithm, 0) == 0);
    }
  }
}

TEST_CASE("layer conv2d offers its convolution through Op::conv(), other ops none") {
  for (const ConvCase& k : kConvCases) {
    MapParams params;
    std::unique_ptr<Op> conv = loaded_conv(k, params);
    const Conv2dOp& op = dynamic_cast<const Conv2dOp&>(*conv);
    const winfer::ConvCapability* capability = conv->conv();
    REQUIRE(capability != nullptr);
    const Shape input{k.n, k.c, k.h, k.w};
    CHECK(capability->params_for(input).to_string() == op.params_for(input).to_string());
    CHECK(&capability->bias() == &op.bias());
    CHECK(capability->activation() == op.activation());
    CHECK(capability->packed_for() == op.packed_for());
    CHECK(capability->has_residual() == op.has_residual());
    CHECK(capability->absorbed_conv_weight_bytes() == 0);
    auto weight = capability->weight_oihw("test");
    REQUIRE(weight.ok());
    const std::vector<float>& loaded = params.at("conv.weight").data;
    REQUIRE(static_cast<size_t>(weight.value().numel()) == loaded.size());
    CHECK(std::equal(loaded.begin(), loaded.end(), weight.value().data()));
  }
  std::unique_ptr<Op> relu = make_op("relu", {});
  CHECK(relu->conv() == nullptr);
}

TEST_CASE("layer conv2d flops and parameter count") {
  const ConvCase k = kConvCases[3];  // groups 2, bias
  MapParams params;
  std::unique_ptr<Op> conv = loaded_conv(k, params);
  std::vector<Shape> out;
  REQUIRE(conv->infer_shapes({Shape{k.n, k.c, k.h, k.w}}, &out).ok());
  CHECK(out[0] == Shape{2, 4, 6, 7});
  CHECK(conv->param_count() == 4 * 3 * 3 * 3 + 4);
  CHECK(conv->flops({Shape{k.n, k.c, k.h, k.w}}, out) == 2 * (2 * 4 * 6 * 7) * (3 * 3 * 3));
}

TEST_CASE("layer batchnorm2d and relu/relu6 standalone") {
  const Shape shape{3, 5, 4, 7};
  MapParams params;
  add_bn_params(params, "bn", 5);
  std::unique_ptr<Op> bn = make_op("batchnorm2d", {{"num_features", int_attr(5)}, {"eps", text_attr("0.001")}});
  prepare(*bn, {shape}, params, "bn");
  const HostTensor x = random_tensor(shape, 4.f);
  const RefTensor expected = bn_reference(to_ref(x), params, "bn", 1e-3);
  check_close(run_op(*bn, {x})[0], expected, kSumTol, "batchnorm2d");

  // Values beyond [-6, 6] so that both clamps of relu6 matter; relu also on a 2-D tensor.
  const HostTensor big = random_tensor(shape, 9.f);
  check_close(run_simple("relu", {}, big), relu6_reference(to_ref(big), false), kExact, "relu");
  check_close(run_simple("relu6", {}, big), relu6_reference(to_ref(big), true), kExact, "relu6");
  const HostTensor flat = random_tensor(Shape{3, 11}, 9.f);
  check_close(run_simple("relu6", {}, flat), relu6_reference(to_ref(flat), true), kExact, "relu6 2-D");

  // batchnorm2d absorbs an activation.
  REQUIRE(fuse_pair(*bn, *make_op("relu6")));
  check_close(run_op(*bn, {x})[0], relu6_reference(expected, true), kSumTol, "batchnorm2d + relu6");
}

// conv -> bn (-> act) run as separate kernels vs. bn folded into the conv at load.
void check_bn_folding(const ConvCase& k, const char* activation) {
  INFO(k.name, activation ? std::string(" + ") + activation : std::string());
  MapParams params;
  Shape out_shape;
  std::unique_ptr<Op> unfused_conv = loaded_conv(k, params, &out_shape);
  add_bn_params(params, "bn", k.co);
  std::unique_ptr<Op> bn = make_op("batchnorm2d", {{"num_features", int_attr(k.co)}});
  prepare(*bn, {out_shape}, params, "bn");

  std::unique_ptr<Op> fused_conv = make_op("conv2d", conv_attrs(k));
  prepare(*fused_conv, {Shape{k.n, k.c, k.h, k.w}}, params, "conv");
  REQUIRE(fuse_pair(*fused_conv, *bn));

  std::unique_ptr<Op> act;
  if (activation != nullptr) {
    act = make_op(activation);
    REQUIRE(fuse_pair(*fused_conv, *act));
    // The activation ends the chain: nothing more may be absorbed after it.
    CHECK_FALSE(fuse_pair(*fused_conv, *bn));
  }

  const HostTensor x = random_tensor(Shape{k.n, k.c, k.h, k.w}, 3.f);  // large enough to reach 6
  HostTensor unfused = run_op(*bn, run_op(*unfused_conv, {x}))[0];
  if (act) unfused = run_op(*act, {unfused})[0];
  for (const ConvAlgorithm* algorithm : conv_algorithms()) {
    RunOptions options;
    options.conv_algorithm = algorithm;
    const HostTensor fused = run_op(*fused_conv, {x}, options)[0];
    check_close(fused, unfused, kSumTol, std::string("folded vs unfolded with ") + algorithm->name());
  }

  // And both against float64.
  RefTensor expected = bn_reference(
      conv_reference(k, x, params.at("conv.weight"), k.bias ? &params.at("conv.bias") : nullptr), params, "bn", 1e-5);
  if (act) expected = relu6_reference(expected, std::string(activation) == "relu6");
  check_close(unfused, expected, kSumTol, "unfolded vs float64");
}

TEST_CASE("layer conv2d + batchnorm2d folding equals the unfolded pair") {
  check_bn_folding(kConvCases[0], nullptr);   // with conv bias
  check_bn_folding(kConvCases[2], nullptr);   // without conv bias: folding creates one
  check_bn_folding(kConvCases[12], nullptr);  // depthwise, no bias
  check_bn_folding(kConvCases[7], "relu");
  check_bn_folding(kConvCases[4], "relu6");
  check_bn_folding(kConvCases[11], "relu6");  // depthwise
}

TEST_CASE("layer conv2d + relu6 fusion equals conv then relu6") {
  for (const ConvCase& k : {kConvCases[1], kConvCases[11]}) {
    MapParams params;
    std::unique_ptr<Op> conv = loaded_conv(k, params);
    std::unique_ptr<Op> fused = make_op("conv2d", conv_attrs(k));
    prepare(*fused, {Shape{k.n, k.c, k.h, k.w}}, params, "conv");
    std::unique_ptr<Op> relu6 = make_op("relu6");
    REQUIRE(fuse_pair(*fused, *relu6));
    CHECK_FALSE(fuse_pair(*fused, *make_op("relu")));  // only one activation

    const HostTensor x = random_tensor(Shape{k.n, k.c, k.h, k.w}, 4.f);
    const HostTensor separate = run_op(*relu6, run_op(*conv, {x}))[0];
    check_close(run_op(*fused, {x})[0], separate, kSumTol, k.name);
    // Not an op conv2d can absorb.
    CHECK_FALSE(fuse_pair(*fused, *make_op("identity")));
  }
}

}  // namespace
}  // namespace layer_test
}  // namespace winfer
