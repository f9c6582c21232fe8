#include "layers/softmax.h"

#include "kernels/cpu/linear.h"

#include "layers/channel_rows.h"

namespace winfer {
namespace {

// In the CPU layout the channels of each pixel (or the features of each row) are
// contiguous, so a softmax over dim 1 is a softmax of rows.
class SoftmaxKernel : public Kernel {
 public:
  explicit SoftmaxKernel(const Shape& in) : rows_(channel_rows(in)), cols_(in[1]) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    softmax_rows(in[0]->data(), out[0]->data(), rows_, cols_, threads);
  }

 private:
  int64_t rows_, cols_;
};

class SoftmaxOp : public Op {
 public:
  const char* type() const override { return "softmax"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    WINFER_RETURN_IF_ERROR(expect_rank_2_or_4(inputs[0], "input"));
    if (inputs[0][1] < 1) return shape_mismatch("input " + inputs[0].to_string() + " has no channels");
    *outputs = {inputs[0]};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(new SoftmaxKernel(inputs[0]));
  }
};

}  // namespace

Result<std::unique_ptr<Op>> create_softmax(const Attrs& attrs) {
  int64_t dim = 1;
  WINFER_RETURN_IF_ERROR(attrs.get_int("dim", &dim, 1));
  if (dim != 1) return unsupported("attribute 'dim' must be 1 (channels), got " + std::to_string(dim));
  return std::unique_ptr<Op>(new SoftmaxOp());
}

}  // namespace winfer
