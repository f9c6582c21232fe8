// Custom operators (winfer/custom_op.h): an embedder's op type registered from outside, used in
// a YAML model, checked against a float64 reference in both layouts it can ask for; the
// registration, attribute and shape errors.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "winfer/custom_op.h"
#include "winfer/winfer.h"

namespace {

using winfer::CustomOp;
using winfer::CustomOpAttrs;
using winfer::CustomOpContext;
using winfer::CustomOpDefinition;
using winfer::Layout;
using winfer::Result;
using winfer::Shape;
using winfer::Status;
using winfer::Tensor;
using winfer_test::contains;

// y[n,c,h,w] = x[n,c,h,w] * scale * (c + 1) + shift - c: per channel, so that a tensor read in
// the wrong layout gives wrong numbers.
double scale_shift(double x, int64_t c, double scale, double shift) {
  return x * scale * double(c + 1) + shift - double(c);
}

class ScaleShift : public CustomOp {
 public:
  ScaleShift(int64_t channels, double scale, double shift, Layout layout)
      : channels_(channels), scale_(scale), shift_(shift), layout_(layout) {}

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    if (inputs[0].rank() != 4 || inputs[0].c() != channels_) {
      return winfer::shape_mismatch("scale_shift expects [N, " + std::to_string(channels_) + ", H, W], got " +
                                    inputs[0].to_string());
    }
    *outputs = {inputs[0]};
    return Status::Ok();
  }

  void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
           const CustomOpContext& context) const override {
    const Tensor& x = *inputs[0];
    Tensor& y = *outputs[0];
    CHECK(x.layout() == layout_);
    CHECK(y.layout() == layout_);
    CHECK(context.threads >= 1);
    const Shape& s = x.shape();
    for (int64_t i = 0; i < x.numel(); ++i) {
      // NCHW: the channel is the second index; NHWC: the innermost one.
      const int64_t c = layout_ == Layout::kNCHW ? (i / (s.h() * s.w())) % s.c() : i % s.c();
      y.data()[i] = static_cast<float>(scale_shift(x.data()[i], c, scale_, shift_));
    }
  }

  int64_t flops(const std::vector<Shape>& inputs, const std::vector<Shape>&) const override {
    return 2 * inputs[0].numel();
  }

 private:
  int64_t channels_;
  double scale_, shift_;
  Layout layout_;
};

CustomOpDefinition scale_shift_definition(const std::string& type, Layout layout) {
  CustomOpDefinition d;
  d.type = type;
  d.layout = layout;
  d.create = [layout](const CustomOpAttrs& attrs) -> Result<std::unique_ptr<CustomOp>> {
    int64_t channels = 0;
    double scale = 1, shift = 0;
    WINFER_RETURN_IF_ERROR(attrs.get_int("channels", &channels));
    WINFER_RETURN_IF_ERROR(attrs.get_float("scale", &scale, 1.0));
    WINFER_RETURN_IF_ERROR(attrs.get_float("shift", &shift, 0.0));
    return std::unique_ptr<CustomOp>(new ScaleShift(channels, scale, shift, layout));
  };
  return d;
}

// The registry is the process's: each type is registered once, whichever test comes first.
void register_test_ops() {
  static const bool registered = [] {
    REQUIRE(winfer::register_custom_op(scale_shift_definition("test_scale_shift", Layout::kNCHW)).ok());
    REQUIRE(winfer::register_custom_op(scale_shift_definition("test_scale_shift_nhwc", Layout::kNHWC)).ok());
    return true;
  }();
  CHECK(registered);
}

// conv (odd sizes, so that NCHW and NHWC differ everywhere) then `op` on its output.
std::string model_with(const std::string& op, const std::string& attrs) {
  return winfer_test::model_header(3, 7, 5) +
         "outputs: [custom]\n"
         "layers:\n"
         "  - {name: conv, op: conv2d, in_channels: 3, out_channels: 5, kernel_size: 3, padding: 1}\n"
         "  - {name: custom, op: " +
         op + attrs + "}\n";
}

std::shared_ptr<const winfer::Model> load(const winfer_test::TempDir& dir, const std::string& yaml) {
  winfer::LoadOptions options;
  options.random_weights_seed = 7;
  auto model = winfer_test::load_text(dir, yaml, options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

}  // namespace

TEST_CASE("custom op: a registered op runs in a YAML model and matches a float64 reference, in either layout") {
  register_test_ops();
  winfer_test::TempDir dir;
  const double scale = 0.75, shift = -0.5;
  const std::string attrs = ", channels: 5, scale: 0.75, shift: -0.5";
  // The reference: the same conv (same seed) with identity after it, then the op in double.
  auto plain = load(dir, model_with("identity", ""));
  const Tensor input = winfer_test::random_tensor(Shape{2, 3, 7, 5}, 21, Layout::kNCHW);
  const Tensor conv = winfer_test::run_model(plain, input);
  for (const char* type : {"test_scale_shift", "test_scale_shift_nhwc"}) {
    CAPTURE(type);
    auto model = load(dir, model_with(type, attrs));
    CHECK(model->layers().back().type == type);
    CHECK(model->layers().back().flops == 2 * 5 * 7 * 5);
    for (int threads : {1, 3}) {
      winfer::SessionOptions options;
      options.threads = threads;
      const Tensor out = winfer_test::run_model(model, input, options);
      REQUIRE(out.shape() == Shape{2, 5, 7, 5});
      double worst = 0;
      for (int64_t i = 0; i < out.numel(); ++i) {
        const int64_t c = (i / (7 * 5)) % 5;
        const double want = scale_shift(conv.data()[i], c, scale, shift);
        worst = std::max(worst, std::fabs(out.data()[i] - want) / (1 + std::fabs(want)));
      }
      CHECK(worst < 1e-6);
    }
  }
}

TEST_CASE("custom op: registration refuses a built-in's name, a second registration and bad definitions") {
  register_test_ops();
  auto message = [](const CustomOpDefinition& d) {
    const Status s = winfer::register_custom_op(d);
    CHECK(s.code() == winfer::ErrorCode::kInvalidArgument);
    return s.message();
  };
  CHECK(contains(message(scale_shift_definition("relu", Layout::kNCHW)),
                 "register_custom_op('relu'): operator type 'relu' is a built-in operator"));
  CHECK(contains(message(scale_shift_definition("test_scale_shift", Layout::kNCHW)),
                 "operator type 'test_scale_shift' is registered already"));
  CHECK(contains(message(scale_shift_definition("bad name", Layout::kNCHW)), "must be a non-empty identifier"));
  CHECK(contains(message(scale_shift_definition("", Layout::kNCHW)), "must be a non-empty identifier"));
  CustomOpDefinition d = scale_shift_definition("test_unused", Layout::kNCHW);
  d.create = nullptr;
  CHECK(contains(message(d), "create is empty"));
  d = scale_shift_definition("test_unused", Layout::kPlain);
  CHECK(contains(message(d), "layout must be kNCHW or kNHWC"));
  d = scale_shift_definition("test_unused", Layout::kNCHW);
  d.num_outputs = 0;
  CHECK(contains(message(d), "num_outputs must be >= 1, got 0"));
  d.num_outputs = 1;
  d.min_inputs = 2;
  d.max_inputs = 1;
  CHECK(contains(message(d), "min_inputs >= 1 and max_inputs >= min_inputs"));
  // None of these was registered: the loader still does not know the name, and lists the custom ops.
  winfer_test::expect_load_error(model_with("test_unused", ""), {"unknown op 'test_unused'", "test_scale_shift"});
}

TEST_CASE("custom op: attribute and shape errors name the file, the layer and the attribute") {
  register_test_ops();
  winfer_test::expect_load_error(model_with("test_scale_shift", ""),
                                 {"model.yaml:", "layer 'custom' (test_scale_shift)", "missing attribute 'channels'"});
  winfer_test::expect_load_error(model_with("test_scale_shift", ", channels: 5, scale: big"),
                                 {"layer 'custom' (test_scale_shift)", "attribute 'scale'", "big"});
  winfer_test::expect_load_error(model_with("test_scale_shift", ", channels: 5, scael: 2"),
                                 {"unknown attribute 'scael' for op test_scale_shift"});
  winfer_test::expect_load_error(
      model_with("test_scale_shift", ", channels: 4"),
      {"layer 'custom' (test_scale_shift)", "scale_shift expects [N, 4, H, W], got [1,5,7,5]"});
}
