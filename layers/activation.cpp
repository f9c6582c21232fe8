#include "layers/activation.h"

#include "kernels/cpu/elementwise.h"

#if defined(WINFER_WITH_CUDA)
#include "kernels/cuda/elementwise.h"
#endif

namespace winfer {
namespace {

class ActivationKernel : public Kernel {
 public:
  explicit ActivationKernel(Activation kind) : kind_(kind) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*,
           int threads) const override {
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

#if defined(WINFER_WITH_CUDA)
Result<std::unique_ptr<CudaKernel>> ActivationOp::compile_cuda(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                                               const CudaCompileOptions&) const {
  const int64_t count = inputs[0].numel();
  const Activation kind = kind_;
  return make_cuda_kernel("", [=](const cuda::Context& ctx, const std::vector<const float*>& in,
                                  const std::vector<float*>& out, void*) {
    return cuda::activation_inplace_or_copy(in[0], out[0], count, kind, ctx.stream);
  });
}
#endif

Result<std::unique_ptr<Op>> create_relu(const Attrs&) {
  return std::unique_ptr<Op>(new ActivationOp(Activation::kRelu));
}

Result<std::unique_ptr<Op>> create_relu6(const Attrs&) {
  return std::unique_ptr<Op>(new ActivationOp(Activation::kRelu6));
}

Activation activation_of(const Op& next) {
  const auto* act = dynamic_cast<const ActivationOp*>(&next);
  return act == nullptr ? Activation::kNone : act->kind();
}

}  // namespace winfer
