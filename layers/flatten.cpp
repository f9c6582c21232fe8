#include "layers/flatten.h"

#include "kernels/cpu/layout.h"

#include "layers/channel_rows.h"

namespace winfer {
namespace {

class FlattenKernel : public Kernel {
 public:
  explicit FlattenKernel(const Shape& in) : in_(in) {}
  std::string describe() const override { return flatten_needs_reorder(in_) ? "NHWC to NCHW order" : "copy"; }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    if (flatten_needs_reorder(in_)) {
      nhwc_to_nchw(in_.n(), in_.c(), in_.h(), in_.w(), in[0]->data(), out[0]->data(), threads);
    } else {
      copy_unless_aliased(*in[0], *out[0]);
    }
  }

 private:
  Shape in_;
};

class FlattenOp : public Op {
 public:
  const char* type() const override { return "flatten"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    const Shape& in = inputs[0];
    WINFER_RETURN_IF_ERROR(expect_rank_2_or_4(in, "input"));
    *outputs = {in.rank() == 2 ? in : Shape{in.n(), in.c() * in.h() * in.w()}};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(new FlattenKernel(inputs[0]));
  }
  // A plain copy can be skipped by sharing the storage; the NHWC -> NCHW reorder cannot run in
  // place (it moves elements to other positions).
  bool can_run_in_place(const std::vector<Shape>& inputs) const override { return !flatten_needs_reorder(inputs[0]); }
};

}  // namespace

bool flatten_needs_reorder(const Shape& in) { return in.rank() == 4 && in.h() * in.w() != 1 && in.c() != 1; }

Result<std::unique_ptr<Op>> create_flatten(const Attrs& attrs) {
  int64_t start_dim = 1;
  WINFER_RETURN_IF_ERROR(attrs.get_int("start_dim", &start_dim, 1));
  if (start_dim != 1) {
    return unsupported("attribute 'start_dim' must be 1 (keep the batch dim), got " + std::to_string(start_dim));
  }
  return std::unique_ptr<Op>(new FlattenOp());
}

}  // namespace winfer
