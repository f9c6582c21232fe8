#include "layers/dequantize.h"

#include <string>

#include "kernels/cpu/quantize_u8.h"

namespace winfer {
namespace {

class DequantizeKernel : public Kernel {
 public:
  explicit DequantizeKernel(const quant::TensorQuant& q) : q_(q) {}
  std::string describe() const override {
    return "u8 -> float32 (scale " + std::to_string(q_.scale) + ", zero point " + std::to_string(q_.zero_point) + ")";
  }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    cpu::dequantize_u8_f32(in[0]->u8(), out[0]->data(), in[0]->numel(), q_.scale, q_.zero_point, threads);
  }

 private:
  quant::TensorQuant q_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> DequantizeOp::compile(const std::vector<Shape>&, const std::vector<Shape>&,
                                                      const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new DequantizeKernel(q_));
}

}  // namespace winfer
