#include "layers/batchnorm2d.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/elementwise.h"

#include "layers/activation.h"
#include "layers/layer_util.h"

namespace winfer {
namespace {

class BatchNormKernel : public Kernel {
 public:
  BatchNormKernel(const BatchNorm2dOp& op, Activation act) : op_(op), act_(act) {}
  std::string describe() const override { return op_.kernel_description(); }
  size_t shared_weight_bytes() const override { return op_.weight_bytes(); }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    const Shape& s = in[0]->shape();  // NCHW logical, stored NHWC
    scale_shift_channels_nhwc(in[0]->data(), op_.scale().data(), op_.shift().data(), out[0]->data(),
                              s.n() * s.h() * s.w(), s.c(), act_, threads);
  }

 private:
  const BatchNorm2dOp& op_;  // the Model owns the op and outlives every session
  Activation act_;
};

}  // namespace

std::string BatchNorm2dOp::kernel_description() const {
  return activation_ == Activation::kNone ? "standalone" : "standalone, " + fused_activation_note(activation_);
}

Status BatchNorm2dOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  WINFER_RETURN_IF_ERROR(expect_rank(inputs[0], 4, "input"));
  if (inputs[0].c() != num_features_) {
    return shape_mismatch("input has " + std::to_string(inputs[0].c()) + " channels " + inputs[0].to_string() +
                          ", expected num_features = " + std::to_string(num_features_));
  }
  *outputs = {inputs[0]};
  return Status::Ok();
}

Status BatchNorm2dOp::load_params(const std::string& prefix, const std::vector<Shape>&, ParamSource& params) {
  const Shape shape{num_features_};
  Tensor weight, bias, mean, var;
  WINFER_RETURN_IF_ERROR(params.get(prefix + ".weight", shape, &weight));
  WINFER_RETURN_IF_ERROR(params.get(prefix + ".bias", shape, &bias));
  WINFER_RETURN_IF_ERROR(params.get(prefix + ".running_mean", shape, &mean));
  WINFER_RETURN_IF_ERROR(params.get(prefix + ".running_var", shape, &var));
  scale_.resize(static_cast<size_t>(num_features_));
  shift_.resize(static_cast<size_t>(num_features_));
  for (int64_t c = 0; c < num_features_; ++c) {
    if (!(var.data()[c] + eps_ > 0)) {
      return invalid_argument("parameter '" + prefix + ".running_var'[" + std::to_string(c) +
                              "] + eps must be > 0, got " + std::to_string(var.data()[c]));
    }
    // Computed in double: folding happens once and its rounding error would otherwise be
    // multiplied into every weight of the preceding convolution.
    const double s = weight.data()[c] / std::sqrt(static_cast<double>(var.data()[c]) + eps_);
    scale_[c] = static_cast<float>(s);
    shift_[c] = static_cast<float>(bias.data()[c] - mean.data()[c] * s);
  }
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> BatchNorm2dOp::compile(const std::vector<Shape>&, const std::vector<Shape>&,
                                                       const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new BatchNormKernel(*this, activation_));
}

Result<std::unique_ptr<Op>> create_batchnorm2d(const Attrs& attrs) {
  int64_t features = 0;
  double eps = 1e-5;
  WINFER_RETURN_IF_ERROR(attrs.get_int("num_features", &features));
  WINFER_RETURN_IF_ERROR(expect_at_least("num_features", features, 1));
  WINFER_RETURN_IF_ERROR(attrs.get_float("eps", &eps, 1e-5));
  if (!(eps >= 0)) return invalid_argument("attribute 'eps' must be >= 0");
  return std::unique_ptr<Op>(new BatchNorm2dOp(features, eps));
}

}  // namespace winfer
