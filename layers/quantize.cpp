#include "layers/quantize.h"

#include <string>

#include "kernels/cpu/quantize_u8.h"

namespace winfer {
namespace {

class QuantizeKernel : public Kernel {
 public:
  explicit QuantizeKernel(const quant::TensorQuant& q) : q_(q) {}
  std::string describe() const override {
    return "float32 -> u8 (scale " + std::to_string(q_.scale) + ", zero point " + std::to_string(q_.zero_point) + ")";
  }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    cpu::quantize_f32_u8(in[0]->data(), out[0]->u8(), in[0]->numel(), q_.scale, q_.zero_point, threads);
  }

 private:
  quant::TensorQuant q_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> QuantizeOp::compile(const std::vector<Shape>&, const std::vector<Shape>&,
                                                    const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new QuantizeKernel(q_));
}

}  // namespace winfer
