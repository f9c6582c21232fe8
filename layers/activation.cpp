#include "layers/activation.h"

#include "kernels/cpu/elementwise.h"

namespace winfer {
namespace {

class ActivationKernel : public Kernel {
 public:
  explicit ActivationKernel(Activation kind) : kind_(kind) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    activation_inplace_or_copy(in[0]->data(), out[0]->data(), in[0]->numel(), kind_, threads);
  }

 private:
  Activation kind_;
};

}  // namespace

Status ActivationOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  *outputs = {inputs[0]};
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> ActivationOp::compile(const std::vector<Shape>&, const std::vector<Shape>&,
                                                      const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new ActivationKernel(kind_));
}

std::string fused_activation_note(Activation act) {
  return act == Activation::kNone ? std::string() : std::string("fused ") + activation_name(act);
}

Result<std::unique_ptr<Op>> create_relu(const Attrs&) {
  return std::unique_ptr<Op>(new ActivationOp(Activation::kRelu));
}

Result<std::unique_ptr<Op>> create_relu6(const Attrs&) {
  return std::unique_ptr<Op>(new ActivationOp(Activation::kRelu6));
}

}  // namespace winfer
