#include "layers/channel_shuffle.h"

#include "kernels/cpu/channel_ops.h"

#include "layers/layer_util.h"

namespace winfer {
namespace {

class ChannelShuffleKernel : public Kernel {
 public:
  ChannelShuffleKernel(const Shape& in, int64_t groups) : in_(in), groups_(groups) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    channel_shuffle_nhwc(in_.n() * in_.h() * in_.w(), in_.c(), groups_, in[0]->data(), out[0]->data(), threads);
  }

 private:
  Shape in_;
  int64_t groups_;
};

}  // namespace

Status ChannelShuffleOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  const Shape& in = inputs[0];
  WINFER_RETURN_IF_ERROR(expect_rank(in, 4, "input"));
  if (in.c() % groups_ != 0) {
    return shape_mismatch("input " + in.to_string() + " has " + std::to_string(in.c()) +
                          " channels, not divisible by groups = " + std::to_string(groups_));
  }
  *outputs = {in};
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> ChannelShuffleOp::compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                                          const CompileOptions&) const {
  return std::unique_ptr<Kernel>(new ChannelShuffleKernel(inputs[0], groups_));
}

Result<std::unique_ptr<Op>> create_channel_shuffle(const Attrs& attrs) {
  int64_t groups = 0;
  WINFER_RETURN_IF_ERROR(attrs.get_int("groups", &groups));
  WINFER_RETURN_IF_ERROR(expect_at_least("groups", groups, 1));
  return std::unique_ptr<Op>(new ChannelShuffleOp(groups));
}

}  // namespace winfer
