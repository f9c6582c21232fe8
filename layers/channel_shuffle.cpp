#include "layers/channel_shuffle.h"

#include "kernels/cpu/channel_ops.h"

#if defined(WINFER_WITH_CUDA)
#include "kernels/cuda/channel_ops.h"
#endif
#include "layers/layer_util.h"

namespace winfer {
namespace {

class ChannelShuffleKernel : public Kernel {
 public:
  ChannelShuffleKernel(const Shape& in, int64_t groups) : in_(in), groups_(groups) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*,
           int threads) const override {
    channel_shuffle_nhwc(in_.n() * in_.h() * in_.w(), in_.c(), groups_, in[0]->data(), out[0]->data(), threads);
  }

 private:
  Shape in_;
  int64_t groups_;
};

class ChannelShuffleOp : public Op {
 public:
  explicit ChannelShuffleOp(int64_t groups) : groups_(groups) {}
  const char* type() const override { return "channel_shuffle"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    const Shape& in = inputs[0];
    WINFER_RETURN_IF_ERROR(expect_rank(in, 4, "input"));
    if (in.c() % groups_ != 0) {
      return shape_mismatch("input " + in.to_string() + " has " + std::to_string(in.c()) +
                            " channels, not divisible by groups = " + std::to_string(groups_));
    }
    *outputs = {in};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(new ChannelShuffleKernel(inputs[0], groups_));
  }
#if defined(WINFER_WITH_CUDA)
  Result<std::unique_ptr<CudaKernel>> compile_cuda(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                                   const CudaCompileOptions&) const override {
    (void)outputs;
    const Shape i = inputs[0];
    const int64_t groups = groups_;
    return make_cuda_kernel("", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
      return cuda::channel_shuffle_nhwc(i.n() * i.h() * i.w(), i.c(), groups, in[0], out[0], ctx.stream);
    });
  }
#endif

 private:
  int64_t groups_;
};

}  // namespace

Result<std::unique_ptr<Op>> create_channel_shuffle(const Attrs& attrs) {
  int64_t groups = 0;
  WINFER_RETURN_IF_ERROR(attrs.get_int("groups", &groups));
  WINFER_RETURN_IF_ERROR(expect_at_least("groups", groups, 1));
  return std::unique_ptr<Op>(new ChannelShuffleOp(groups));
}

}  // namespace winfer
