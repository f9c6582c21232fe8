// channel_shuffle on CUDA: a permutation within each NHWC pixel row; after the rule shuffle_split,
// the shuffle into the workspace and the absorbed split's copies from there (two launches; the
// CPU's one pass matters on 2 cores, not here).
#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/channel_ops.h"
#include "layers/channel_shuffle.h"

namespace winfer {
namespace {

class ShuffleThenSplitCudaKernel : public CudaKernel {
 public:
  ShuffleThenSplitCudaKernel(const Shape& in, int64_t groups, std::vector<int64_t> pieces)
      : pixels_(in.n() * in.h() * in.w()), channels_(in.c()), groups_(groups), pieces_(std::move(pieces)) {}
  size_t workspace_bytes() const override { return static_cast<size_t>(pixels_ * channels_) * sizeof(float); }
  std::string describe() const override { return "shuffle, then split"; }
  cuda::Status run(const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out,
                   void* workspace) const override {
    auto* shuffled = static_cast<float*>(workspace);
    cuda::Status s = cuda::channel_shuffle_nhwc(pixels_, channels_, groups_, in[0], shuffled, ctx.stream);
    if (!s.ok()) return s;
    return cuda::split_channels_nhwc(pixels_, shuffled, static_cast<int>(out.size()), pieces_.data(), out.data(),
                                     ctx.stream);
  }

 private:
  int64_t pixels_, channels_, groups_;
  std::vector<int64_t> pieces_;
};

}  // namespace

Result<std::unique_ptr<CudaKernel>> compile_channel_shuffle_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                                 const std::vector<Shape>&, const CudaCompileOptions&) {
  const Shape i = inputs[0];
  const auto& shuffle = static_cast<const ChannelShuffleOp&>(op);
  const int64_t groups = shuffle.groups();
  if (!shuffle.split_pieces().empty()) {
    return std::unique_ptr<CudaKernel>(new ShuffleThenSplitCudaKernel(i, groups, shuffle.split_pieces()));
  }
  return make_cuda_kernel(
      "", [=](const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out, void*) {
        return cuda::channel_shuffle_nhwc(i.n() * i.h() * i.w(), i.c(), groups, in[0], out[0], ctx.stream);
      });
}

}  // namespace winfer
