#include "layers/adaptive_avgpool2d.h"

#include <algorithm>

#include "kernels/cpu/pooling.h"

#include "layers/layer_util.h"

namespace winfer {
namespace {

class AdaptiveAvgPoolKernel : public Kernel {
 public:
  explicit AdaptiveAvgPoolKernel(const Shape& in, const Shape& out) : in_(in), out_(out) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    adaptive_avgpool2d_nhwc(in_.n(), in_.c(), in_.h(), in_.w(), out_.h(), out_.w(), in[0]->data(), out[0]->data(),
                            threads);
  }

 private:
  Shape in_, out_;
};

// flops() stays 0: bin sums are additions, not the multiply-adds that flops() counts.
class AdaptiveAvgPool2dOp : public Op {
 public:
  AdaptiveAvgPool2dOp(int64_t out_h, int64_t out_w) : out_h_(out_h), out_w_(out_w) {}
  const char* type() const override { return "adaptive_avgpool2d"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    const Shape& in = inputs[0];
    WINFER_RETURN_IF_ERROR(expect_rank(in, 4, "input"));
    // Any non-empty input works (bins may overlap when it is smaller than the output).
    if (in.h() < 1 || in.w() < 1) {
      return shape_mismatch("input " + in.to_string() + " has an empty spatial size");
    }
    auto out = Shape::make({in.n(), in.c(), out_h_, out_w_});  // rejects absurd element counts
    if (!out.ok()) return Status(out.status()).with_context("output");
    *outputs = {out.value()};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(new AdaptiveAvgPoolKernel(inputs[0], outputs[0]));
  }

 private:
  int64_t out_h_, out_w_;
};

}  // namespace

Result<std::unique_ptr<Op>> create_adaptive_avgpool2d(const Attrs& attrs) {
  int64_t h = 0, w = 0;
  WINFER_RETURN_IF_ERROR(read_hw(attrs, "output_size", &h, &w));
  WINFER_RETURN_IF_ERROR(expect_at_least("output_size", std::min(h, w), 1));
  const int64_t kLimit = int64_t(1) << 20;
  if (std::max(h, w) > kLimit) {
    return invalid_argument("attribute 'output_size' must be at most " + std::to_string(kLimit));
  }
  return std::unique_ptr<Op>(new AdaptiveAvgPool2dOp(h, w));
}

}  // namespace winfer
