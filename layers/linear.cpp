#include "layers/linear.h"

#include "kernels/cpu/linear.h"

#include "layers/activation.h"
#include "layers/layer_util.h"

namespace winfer {
namespace {

class LinearKernel : public Kernel {
 public:
  // The tensors share the op's storage; the op's weights never change after load.
  LinearKernel(const Tensor& weight, const Tensor& bias, int64_t rows, Activation act)
      : weight_(weight), bias_(bias), rows_(rows), act_(act) {}
  std::string describe() const override { return fused_activation_note(act_); }
  size_t shared_weight_bytes() const override { return weight_.bytes() + bias_.bytes(); }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    const Shape& w = weight_.shape();  // [out, in]
    linear(in[0]->data(), weight_.data(), bias_.empty() ? nullptr : bias_.data(), out[0]->data(), rows_, w[1], w[0],
           act_, threads);
  }

 private:
  Tensor weight_, bias_;
  int64_t rows_;
  Activation act_;
};

}  // namespace

Status LinearOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  const Shape& in = inputs[0];
  WINFER_RETURN_IF_ERROR(expect_rank(in, 2, "input"));
  if (in[1] != in_features_) {
    return shape_mismatch("input " + in.to_string() + " has " + std::to_string(in[1]) +
                          " features, expected in_features = " + std::to_string(in_features_));
  }
  *outputs = {Shape{in[0], out_features_}};
  return Status::Ok();
}

Status LinearOp::load_params(const std::string& prefix, const std::vector<Shape>&, ParamSource& params) {
  WINFER_RETURN_IF_ERROR(params.get(prefix + ".weight", Shape{out_features_, in_features_}, &weight_));
  if (has_bias_) WINFER_RETURN_IF_ERROR(params.get(prefix + ".bias", Shape{out_features_}, &bias_));
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> LinearOp::compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                                  const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new LinearKernel(weight_, bias_, inputs[0][0], activation_));
}

Result<std::unique_ptr<Op>> create_linear(const Attrs& attrs) {
  int64_t in_features = 0, out_features = 0;
  bool bias = true;
  WINFER_RETURN_IF_ERROR(attrs.get_int("in_features", &in_features));
  WINFER_RETURN_IF_ERROR(attrs.get_int("out_features", &out_features));
  WINFER_RETURN_IF_ERROR(attrs.get_bool("bias", &bias, true));
  WINFER_RETURN_IF_ERROR(expect_at_least("in_features", in_features, 1));
  WINFER_RETURN_IF_ERROR(expect_at_least("out_features", out_features, 1));
  // Reject absurd sizes before out * in can overflow.
  auto shape = Shape::make({out_features, in_features});
  if (!shape.ok()) return Status(shape.status()).with_context("weight");
  return std::unique_ptr<Op>(new LinearOp(in_features, out_features, bias));
}

}  // namespace winfer
