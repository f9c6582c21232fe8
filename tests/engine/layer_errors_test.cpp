// Every layer rejects bad attributes in its factory and bad shapes in infer_shapes with a
// message that says what was expected and what was given (never an abort or a throw).
#include <string>

#include "layer_test_util.h"

namespace winfer {
namespace layer_test {
namespace {

// CHECKs that `message` contains `part` (printing both when it does not).
void check_mentions(const std::string& message, const std::string& part) {
  INFO("message: '", message, "', expected to contain '", part, "'");
  CHECK(message.find(part) != std::string::npos);
}

std::string shape_error_of(const std::string& type, const AttrList& attrs, const std::vector<Shape>& inputs) {
  return shape_error(*make_op(type, attrs), inputs);
}

const AttrList kConv = {{"in_channels", int_attr(8)}, {"out_channels", int_attr(4)}, {"kernel_size", int_attr(3)}};

AttrList with(AttrList base, const std::string& key, const AttrValue& value) {
  for (auto& kv : base) {
    if (kv.first == key) {
      kv.second = value;
      return base;
    }
  }
  base.push_back({key, value});
  return base;
}

TEST_CASE("layer errors: missing, non-integer and out-of-range attributes") {
  check_mentions(create_error("conv2d", {{"out_channels", int_attr(4)}, {"kernel_size", int_attr(3)}}),
                 "missing attribute 'in_channels'");
  check_mentions(create_error("linear", {{"in_features", int_attr(4)}}), "missing attribute 'out_features'");
  check_mentions(create_error("maxpool2d", {}), "missing attribute 'kernel_size'");
  check_mentions(create_error("adaptive_avgpool2d", {}), "missing attribute 'output_size'");
  check_mentions(create_error("channel_shuffle", {}), "missing attribute 'groups'");
  check_mentions(create_error("batchnorm2d", {}), "missing attribute 'num_features'");

  check_mentions(create_error("conv2d", with(kConv, "kernel_size", text_attr("3.5"))),
                 "attribute 'kernel_size': expected an integer");
  check_mentions(create_error("linear", {{"in_features", text_attr("four")}, {"out_features", int_attr(2)}}),
                 "attribute 'in_features': expected an integer");
  check_mentions(create_error("maxpool2d", {{"kernel_size", ints_attr({2, 2, 2})}}), "attribute 'kernel_size'");
  check_mentions(
      create_error("linear", {{"in_features", int_attr(4)}, {"out_features", int_attr(2)}, {"bias", text_attr("yes")}}),
      "attribute 'bias': expected true or false");

  check_mentions(create_error("conv2d", with(kConv, "stride", int_attr(0))), "attribute 'stride' must be >= 1, got 0");
  check_mentions(create_error("conv2d", with(kConv, "padding", int_attr(-1))),
                 "attribute 'padding' must be >= 0, got -1");
  check_mentions(create_error("conv2d", with(kConv, "groups", int_attr(0))), "attribute 'groups' must be >= 1, got 0");
  check_mentions(create_error("linear", {{"in_features", int_attr(0)}, {"out_features", int_attr(2)}}),
                 "attribute 'in_features' must be >= 1, got 0");
  check_mentions(create_error("maxpool2d", {{"kernel_size", int_attr(2)}, {"stride", ints_attr({1, -2})}}),
                 "attribute 'stride' must be >= 1, got -2");
  check_mentions(create_error("maxpool2d", {{"kernel_size", int_attr(3)}, {"dilation", int_attr(0)}}),
                 "attribute 'dilation' must be >= 1, got 0");
  check_mentions(create_error("avgpool2d", {{"kernel_size", int_attr(0)}}),
                 "attribute 'kernel_size' must be >= 1, got 0");
  check_mentions(create_error("adaptive_avgpool2d", {{"output_size", ints_attr({3, 0})}}),
                 "attribute 'output_size' must be >= 1, got 0");
  check_mentions(create_error("channel_shuffle", {{"groups", int_attr(-3)}}),
                 "attribute 'groups' must be >= 1, got -3");
  check_mentions(create_error("dropout", {{"p", text_attr("1")}}), "attribute 'p' must be in [0, 1), got 1");
  check_mentions(create_error("dropout", {{"p", text_attr("-0.1")}}), "attribute 'p' must be in [0, 1), got -0.1");
  check_mentions(create_error("dropout", {{"p", text_attr("half")}}), "attribute 'p': expected a number");
}

TEST_CASE("layer errors: op-specific attribute rules") {
  check_mentions(create_error("conv2d", with(kConv, "groups", int_attr(3))),
                 "groups = 3 must divide in_channels = 8 and out_channels = 4");
  // Pooling padding may be at most half the window (PyTorch's rule), and symmetric.
  const std::string pad = create_error("maxpool2d", {{"kernel_size", int_attr(3)}, {"padding", int_attr(2)}});
  check_mentions(pad, "attribute 'padding' [2,2] must be at most half of kernel_size [3,3]");
  check_mentions(create_error("avgpool2d", {{"kernel_size", ints_attr({4, 2})}, {"padding", ints_attr({2, 2})}}),
                 "at most half of kernel_size [4,2]");
  CHECK(create_error("maxpool2d", {{"kernel_size", int_attr(3)}, {"padding", int_attr(1)}}).empty());
  check_mentions(create_error("maxpool2d", {{"kernel_size", int_attr(3)}, {"padding", ints_attr({1, 1, 0, 0})}}),
                 "attribute 'padding': expected an integer or a list of 2 integers");
  // avgpool has no dilation in PyTorch: the key stays unread (the loader calls it unknown).
  check_mentions(create_error("avgpool2d", {{"kernel_size", int_attr(2)}, {"dilation", int_attr(2)}}),
                 "did not read attribute 'dilation'");

  check_mentions(create_error("split", {{"chunks", int_attr(2)}, {"sizes", ints_attr({1, 2})}}),
                 "either attribute 'chunks' or 'sizes', not both");
  check_mentions(create_error("split", {}), "missing attribute 'chunks' or 'sizes'");
  check_mentions(create_error("split", {{"chunks", int_attr(0)}}), "attribute 'chunks' must be >= 1, got 0");
  check_mentions(create_error("split", {{"sizes", ints_attr({3, 0, 2})}}), "attribute 'sizes' must be >= 1, got 0");
  check_mentions(create_error("split", {{"sizes", ints_attr({3, 4})}, {"dim", int_attr(2)}}),
                 "attribute 'dim' must be 1");
  check_mentions(create_error("split", {{"sizes", AttrValue::list({"3", "x"})}}),
                 "attribute 'sizes': expected a list of at most 256 integers, got [3, x]");
  check_mentions(create_error("concat", {{"dim", int_attr(0)}}), "attribute 'dim' must be 1");
  check_mentions(create_error("softmax", {{"dim", int_attr(-1)}}), "attribute 'dim' must be 1");
  check_mentions(create_error("flatten", {{"start_dim", int_attr(0)}}), "attribute 'start_dim' must be 1");

  // split_output_count never fails: 1 for invalid attributes (the factory reports them).
  const OpInfo* split = builtin_op_registry().find("split");
  CHECK(split->num_outputs(make_attrs({})) == 1);
  CHECK(split->num_outputs(make_attrs({{"chunks", int_attr(2)}, {"sizes", ints_attr({1, 2})}})) == 1);
  CHECK(split->num_outputs(make_attrs({{"chunks", text_attr("many")}})) == 1);
  CHECK(split->num_outputs(make_attrs({{"sizes", ints_attr({1, 2, 3, 4})}})) == 4);
}

TEST_CASE("layer errors: shapes") {
  // Wrong rank.
  check_mentions(shape_error_of("conv2d", kConv, {Shape{8, 5, 5}}), "input must be 4-D NCHW, got [8,5,5]");
  check_mentions(shape_error_of("maxpool2d", {{"kernel_size", int_attr(2)}}, {Shape{1, 8}}),
                 "input must be 4-D NCHW, got [1,8]");
  check_mentions(
      shape_error_of("linear", {{"in_features", int_attr(8)}, {"out_features", int_attr(2)}}, {Shape{1, 8, 1, 1}}),
      "input must be 2-D, got [1,8,1,1]");
  check_mentions(shape_error_of("flatten", {}, {Shape{2, 3, 4}}), "input must be 2-D [N,F] or 4-D NCHW, got [2,3,4]");
  check_mentions(shape_error_of("softmax", {}, {Shape{10}}), "got [10]");
  check_mentions(shape_error_of("channel_shuffle", {{"groups", int_attr(2)}}, {Shape{2, 8}}), "must be 4-D");
  check_mentions(shape_error_of("adaptive_avgpool2d", {{"output_size", int_attr(1)}}, {Shape{2, 8, 3}}), "must be 4-D");

  // Wrong channel or feature count.
  check_mentions(shape_error_of("conv2d", kConv, {Shape{1, 3, 8, 8}}),
                 "input [1,3,8,8] has 3 channels, expected in_channels = 8");
  check_mentions(
      shape_error_of("linear", {{"in_features", int_attr(8)}, {"out_features", int_attr(2)}}, {Shape{4, 10}}),
      "input [4,10] has 10 features, expected in_features = 8");
  check_mentions(shape_error_of("batchnorm2d", {{"num_features", int_attr(4)}}, {Shape{1, 3, 2, 2}}),
                 "expected num_features = 4");
  check_mentions(shape_error_of("channel_shuffle", {{"groups", int_attr(3)}}, {Shape{1, 8, 4, 4}}),
                 "input [1,8,4,4] has 8 channels, not divisible by groups = 3");

  // Inputs that do not fit together.
  check_mentions(shape_error_of("add", {}, {Shape{1, 8, 4, 4}, Shape{1, 8, 4, 5}}), "[1,8,4,4] and [1,8,4,5]");
  check_mentions(shape_error_of("add", {}, {Shape{1, 8, 4, 4}, Shape{1, 8}}), "no broadcasting");
  // mul broadcasts only a second operand of [N, C, 1, 1] over [N, C, H, W].
  check_mentions(shape_error_of("mul", {}, {Shape{2, 8, 4, 4}, Shape{1, 8, 1, 1}}), "[2,8,4,4] and [1,8,1,1]");
  check_mentions(shape_error_of("mul", {}, {Shape{2, 8, 1, 1}, Shape{2, 8, 4, 4}}), "or be [N, C, 1, 1]");
  check_mentions(shape_error_of("mul", {}, {Shape{2, 8}, Shape{2, 1}}), "[2,8] and [2,1]");
  CHECK(shape_error_of("mul", {}, {Shape{2, 8, 4, 4}, Shape{2, 8, 1, 1}}).empty());
  check_mentions(shape_error_of("concat", {}, {Shape{1, 3, 4, 4}, Shape{1, 2, 4, 4}, Shape{1, 2, 5, 4}}),
                 "input 2 [1,2,5,4] does not match input 0 [1,3,4,4]");
  check_mentions(shape_error_of("concat", {}, {Shape{2, 3}, Shape{2, 3, 1, 1}}), "input 1 [2,3,1,1] does not match");
  check_mentions(shape_error_of("concat", {}, {Shape{2, 3}, Shape{3, 3}}),
                 "input 1 [3,3] does not match input 0 [2,3]");

  // Split pieces that do not add up.
  check_mentions(shape_error_of("split", {{"sizes", ints_attr({3, 4})}}, {Shape{1, 8, 2, 2}}),
                 "attribute 'sizes' [3,4] sums to 7, but input [1,8,2,2] has 8 channels");
  const std::string chunks = shape_error_of("split", {{"chunks", int_attr(4)}}, {Shape{1, 5, 2, 2}});
  check_mentions(chunks, "pieces of ceil(5/4) = 2 channels, which gives 3 pieces (2,2,1), not 4");
  check_mentions(shape_error_of("split", {{"chunks", int_attr(4)}}, {Shape{1, 3, 2, 2}}),
                 "gives 3 pieces (1,1,1), not 4");

  // Windows larger than the (padded) input.
  check_mentions(shape_error_of("conv2d", with(kConv, "kernel_size", int_attr(5)), {Shape{1, 8, 3, 3}}),
                 "input [1,8,3,3] is smaller than the dilated kernel 5x5");
  // One tap too large with stride 2: (4 - 5) / 2 rounds to 0, which must not make a 1x1 output.
  check_mentions(shape_error_of("conv2d", with(with(kConv, "kernel_size", int_attr(5)), "stride", int_attr(2)),
                                {Shape{1, 8, 4, 4}}),
                 "input [1,8,4,4] is smaller than the dilated kernel 5x5");
  check_mentions(
      shape_error_of("maxpool2d", {{"kernel_size", int_attr(5)}, {"stride", int_attr(2)}}, {Shape{1, 2, 4, 4}}),
      "input [1,2,4,4] is smaller than the pooling window 5x5");
  check_mentions(
      shape_error_of("maxpool2d", {{"kernel_size", int_attr(3)}, {"dilation", int_attr(2)}}, {Shape{1, 2, 4, 4}}),
      "input [1,2,4,4] is smaller than the pooling window 5x5");
  check_mentions(shape_error_of("adaptive_avgpool2d", {{"output_size", int_attr(1)}}, {Shape{1, 2, 0, 4}}),
                 "empty spatial size");
}

TEST_CASE("layer errors: parameters") {
  std::unique_ptr<Op> fc = make_op("linear", {{"in_features", int_attr(4)}, {"out_features", int_attr(3)}});
  MapParams params;
  params.add_random("fc.weight", Shape{3, 4});
  Status s = fc->load_params("fc", {Shape{1, 4}}, params);
  check_mentions(s.message(), "missing parameter 'fc.bias'");
  params.add_random("fc.bias", Shape{4});
  s = fc->load_params("fc", {Shape{1, 4}}, params);
  check_mentions(s.message(), "parameter 'fc.bias' has shape [4], expected [3]");

  std::unique_ptr<Op> conv = make_op("conv2d", with(kConv, "groups", int_attr(2)));
  params.add_random("c.weight", Shape{4, 8, 3, 3});  // groups ignored
  s = conv->load_params("c", {Shape{1, 8, 5, 5}}, params);
  check_mentions(s.message(), "parameter 'c.weight' has shape [4,8,3,3], expected [4,4,3,3]");
}

}  // namespace
}  // namespace layer_test
}  // namespace winfer
