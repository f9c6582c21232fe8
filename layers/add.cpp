#include "layers/add.h"

#include "kernels/cpu/elementwise.h"

#include "layers/activation.h"

namespace winfer {
namespace {

class AddKernel : public Kernel {
 public:
  explicit AddKernel(Activation act) : act_(act) {}
  std::string describe() const override { return fused_activation_note(act_); }
  // Both inputs have the same shape and therefore the same layout: a flat sum is exact.
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    add(in[0]->data(), in[1]->data(), out[0]->data(), in[0]->numel(), act_, threads);
  }

 private:
  Activation act_;
};

}  // namespace

Status AddOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  if (inputs[0] != inputs[1]) {
    return shape_mismatch("inputs must have the same shape (no broadcasting), got " + inputs[0].to_string() + " and " +
                          inputs[1].to_string());
  }
  *outputs = {inputs[0]};
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> AddOp::compile(const std::vector<Shape>&, const std::vector<Shape>&,
                                               const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new AddKernel(activation_));
}

Result<std::unique_ptr<Op>> create_add(const Attrs&) { return std::unique_ptr<Op>(new AddOp()); }

}  // namespace winfer
