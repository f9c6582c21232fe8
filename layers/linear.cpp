#include "layers/linear.h"

#include "kernels/cpu/linear.h"

#if defined(WINFER_WITH_CUDA)
#include "kernels/cuda/linear.h"
#endif
#include "layers/activation.h"
#include "layers/layer_util.h"

namespace winfer {
namespace {

class LinearKernel : public Kernel {
 public:
  // The tensors share the op's storage; the op's weights never change after load.
  LinearKernel(const Tensor& weight, const Tensor& bias, int64_t rows, Activation act)
      : weight_(weight), bias_(bias), rows_(rows), act_(act) {}
  std::string describe() const override {
    return act_ == Activation::kNone ? std::string() : std::string("fused ") + activation_name(act_);
  }
  size_t shared_weight_bytes() const override { return weight_.bytes() + bias_.bytes(); }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*,
           int threads) const override {
    const Shape& w = weight_.shape();  // [out, in]
    linear(in[0]->data(), weight_.data(), bias_.empty() ? nullptr : bias_.data(), out[0]->data(), rows_,
           w[1], w[0], act_, threads);
  }

 private:
  Tensor weight_, bias_;
  int64_t rows_;
  Activation act_;
};

class LinearOp : public Op {
 public:
  LinearOp(int64_t in_features, int64_t out_features, bool bias)
      : in_features_(in_features), out_features_(out_features), has_bias_(bias) {}
  const char* type() const override { return "linear"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    const Shape& in = inputs[0];
    WINFER_RETURN_IF_ERROR(expect_rank(in, 2, "input"));
    if (in[1] != in_features_) {
      return shape_mismatch("input " + in.to_string() + " has " + std::to_string(in[1]) +
                            " features, expected in_features = " + std::to_string(in_features_));
    }
    *outputs = {Shape{in[0], out_features_}};
    return Status::Ok();
  }

  Status load_params(const std::string& prefix, const std::vector<Shape>&, ParamSource& params) override {
    WINFER_RETURN_IF_ERROR(params.get(prefix + ".weight", Shape{out_features_, in_features_}, &weight_));
    if (has_bias_) WINFER_RETURN_IF_ERROR(params.get(prefix + ".bias", Shape{out_features_}, &bias_));
    return Status::Ok();
  }

  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(new LinearKernel(weight_, bias_, inputs[0][0], activation_));
  }
#if defined(WINFER_WITH_CUDA)
  Result<std::unique_ptr<CudaKernel>> compile_cuda(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                                   const CudaCompileOptions& options) const override {
    auto weight = upload_tensor(options, this, "weight", weight_);
    if (!weight.ok()) return weight.status();
    auto bias = upload_tensor(options, this, "bias", bias_);
    if (!bias.ok()) return bias.status();
    const float* w = weight.value();
    const float* b = bias.value();
    const int64_t rows = inputs[0][0], in_features = weight_.shape()[1], out_features = weight_.shape()[0];
    const Activation act = activation_;
    const std::string note = LinearKernel(weight_, bias_, rows, act).describe();
    return make_cuda_kernel(note, [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
      return cuda::linear(in[0], w, b, out[0], rows, in_features, out_features, act, ctx);
    }, weight_.bytes() + bias_.bytes());
  }
#endif

  int64_t flops(const std::vector<Shape>& inputs, const std::vector<Shape>&) const override {
    return 2 * inputs[0][0] * in_features_ * out_features_;
  }
  int64_t param_count() const override {
    return out_features_ * in_features_ + (has_bias_ ? out_features_ : 0);
  }
  size_t weight_bytes() const override { return weight_.bytes() + bias_.bytes(); }

  bool try_absorb(const Op& next) override {
    if (activation_ != Activation::kNone) return false;  // nothing may follow the activation
    const Activation act = activation_of(next);
    if (act == Activation::kNone) return false;
    activation_ = act;
    return true;
  }

 private:
  int64_t in_features_, out_features_;
  bool has_bias_;
  Tensor weight_, bias_;
  Activation activation_ = Activation::kNone;
};

}  // namespace

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
