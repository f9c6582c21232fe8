#include "layers/pointwise_activation.h"

#include "kernels/cpu/pointwise.h"

namespace winfer {
namespace {

class PointwiseActivationKernel : public Kernel {
 public:
  explicit PointwiseActivationKernel(PointwiseFn fn) : fn_(fn) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    pointwise_activation(in[0]->data(), out[0]->data(), in[0]->numel(), fn_, threads);
  }

 private:
  PointwiseFn fn_;
};

Result<std::unique_ptr<Op>> create(PointwiseFn fn) { return std::unique_ptr<Op>(new PointwiseActivationOp(fn)); }

}  // namespace

Status PointwiseActivationOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  *outputs = {inputs[0]};
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> PointwiseActivationOp::compile(const std::vector<Shape>&, const std::vector<Shape>&,
                                                               const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new PointwiseActivationKernel(fn_));
}

Result<std::unique_ptr<Op>> create_sigmoid(const Attrs&) { return create(PointwiseFn::kSigmoid); }
Result<std::unique_ptr<Op>> create_hardsigmoid(const Attrs&) { return create(PointwiseFn::kHardSigmoid); }
Result<std::unique_ptr<Op>> create_hardswish(const Attrs&) { return create(PointwiseFn::kHardSwish); }
Result<std::unique_ptr<Op>> create_silu(const Attrs&) { return create(PointwiseFn::kSilu); }

}  // namespace winfer
