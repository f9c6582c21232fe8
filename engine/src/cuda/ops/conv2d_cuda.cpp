// conv2d on CUDA: the session's algorithm (or the layer's fallback, choose_conv_algorithm), its
// weights packed and uploaded once per model, device and algorithm (the model's
// DeviceWeightCache), bias the same; the algorithm tuned for these params before its workspace
// is asked (cuDNN picks its fastest algorithm there). What the op absorbed runs as more
// launches: a residual through cuda::add (with the activation) after the convolution without
// activation, since the CUDA algorithms have no residual in their epilogues; a max pooling or a
// depthwise convolution reading the convolution's output from the workspace; a pointwise
// activation (sigmoid, hardswish, ...: rule conv_pointwise) as cuda::pointwise_activation over
// the output in place, after the convolution (the op has then no activation, residual or pooling;
// with a fused depthwise convolution, over the first convolution's output in the workspace); a
// channel scale of the input (rule channel_scale_conv) as cuda::scale_channels_nhwc into a copy
// of the input at the workspace's end, which the convolution then reads (inputs x, scale,
// residual; never with a pooling or a fused depthwise convolution, Conv2dOp::absorb_input_scale).
#include <algorithm>
#include <optional>

#include "engine/src/cuda/cuda_ops.h"
#include "kernels/cuda/conv_algorithm.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/pointwise.h"
#include "kernels/cuda/pooling.h"
#include "layers/conv2d.h"

namespace winfer {
namespace {

class ConvCudaKernel : public CudaKernel {
 public:
  // With `pool`, the convolution goes to the workspace first and is max-pooled from there into
  // the output (the CPU computes it band by band; here the whole output is one band); with
  // `then` (the fused depthwise convolution's kernel), that kernel reads it from there.
  ConvCudaKernel(const cuda::ConvAlgorithm* algorithm, const ConvParams& params, const float* packed, const float* bias,
                 Activation activation, bool residual, bool input_scale, size_t weight_bytes,
                 std::optional<PoolParams> pool, std::unique_ptr<CudaKernel> then, std::optional<PointwiseFn> pointwise,
                 std::string description)
      : algorithm_(algorithm),
        params_(params),
        packed_(packed),
        bias_(bias),
        activation_(activation),
        residual_(residual),
        input_scale_(input_scale),
        weight_bytes_(weight_bytes),
        pool_(pool),
        then_(std::move(then)),
        pointwise_(pointwise),
        description_(std::move(description)) {}
  size_t workspace_bytes() const override {
    const size_t scratch = algorithm_->workspace_bytes(params_);
    return conv_output_bytes() +
           (then_          ? std::max(scratch, then_->workspace_bytes())
            : input_scale_ ? aligned(scratch)
                           : scratch) +
           scaled_input_bytes();
  }
  size_t weight_bytes() const override { return weight_bytes_ + (then_ ? then_->weight_bytes() : 0); }
  std::string describe() const override { return description_; }
  cuda::Status run(const cuda::Context& ctx, const std::vector<const float*>& in, const std::vector<float*>& out,
                   void* workspace) const override {
    if (input_scale_) {
      float* scaled =
          reinterpret_cast<float*>(static_cast<char*>(workspace) + workspace_bytes() - scaled_input_bytes());
      const ConvParams& p = params_;
      const cuda::Status s =
          cuda::scale_channels_nhwc(in[0], in[1], scaled, p.batch, p.in_h * p.in_w, p.in_channels, ctx.stream);
      if (!s.ok()) return s;
      std::vector<const float*> rest = {scaled};
      if (residual_) rest.push_back(in[2]);
      return run_unscaled(ctx, rest, out, workspace);
    }
    return run_unscaled(ctx, in, out, workspace);
  }

 private:
  // in: x (or its scaled copy) and, with a residual, the residual.
  cuda::Status run_unscaled(const cuda::Context& ctx, const std::vector<const float*>& in,
                            const std::vector<float*>& out, void* workspace) const {
    if (then_) {
      float* conv_out = static_cast<float*>(workspace);
      void* scratch = static_cast<char*>(workspace) + conv_output_bytes();
      const cuda::Status s = algorithm_->run(ctx, params_, in[0], packed_, bias_, conv_out,
                                             algorithm_->workspace_bytes(params_) > 0 ? scratch : nullptr, activation_);
      if (!s.ok()) return s;
      if (pointwise_) {  // the first convolution's own (EfficientNet's expand 1x1 + SiLU)
        const cuda::Status f =
            cuda::pointwise_activation(conv_out, conv_out, conv_output_floats(), *pointwise_, ctx.stream);
        if (!f.ok()) return f;
      }
      return then_->run(ctx, {conv_out}, out, then_->workspace_bytes() > 0 ? scratch : nullptr);
    }
    if (pool_) {
      float* conv_out = static_cast<float*>(workspace);
      void* conv_workspace =
          algorithm_->workspace_bytes(params_) > 0 ? static_cast<char*>(workspace) + conv_output_bytes() : nullptr;
      const cuda::Status s =
          algorithm_->run(ctx, params_, in[0], packed_, bias_, conv_out, conv_workspace, activation_);
      if (!s.ok()) return s;
      return cuda::maxpool2d_nhwc(*pool_, conv_out, out[0], ctx.stream);
    }
    if (pointwise_) {  // never with a residual or pooling (Conv2dOp::set_pointwise)
      const cuda::Status conv = algorithm_->run(ctx, params_, in[0], packed_, bias_, out[0], workspace, activation_);
      if (!conv.ok()) return conv;
      return cuda::pointwise_activation(out[0], out[0], conv_output_floats(), *pointwise_, ctx.stream);
    }
    if (!residual_) return algorithm_->run(ctx, params_, in[0], packed_, bias_, out[0], workspace, activation_);
    const cuda::Status conv =
        algorithm_->run(ctx, params_, in[0], packed_, bias_, out[0], workspace, Activation::kNone);
    if (!conv.ok()) return conv;
    return cuda::add(out[0], in[1], out[0], conv_output_floats(), activation_, ctx.stream);
  }

  static size_t aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }
  // The scaled copy of the input (an input scale), at the workspace's end.
  size_t scaled_input_bytes() const {
    if (!input_scale_) return 0;
    return aligned(static_cast<size_t>(params_.batch * params_.in_h * params_.in_w * params_.in_channels) *
                   sizeof(float));
  }
  // The convolution's output before pooling or the fused depthwise convolution, rounded up to
  // the arena's 256-byte alignment.
  size_t conv_output_bytes() const {
    if (!pool_ && !then_) return 0;
    const size_t bytes = static_cast<size_t>(conv_output_floats()) * sizeof(float);
    return (bytes + 255) / 256 * 256;
  }
  int64_t conv_output_floats() const {
    return params_.batch * params_.out_h() * params_.out_w() * params_.out_channels;
  }

  const cuda::ConvAlgorithm* algorithm_;
  ConvParams params_;
  const float* packed_;
  const float* bias_;
  Activation activation_;
  bool residual_;
  bool input_scale_;
  size_t weight_bytes_;
  std::optional<PoolParams> pool_;
  std::unique_ptr<CudaKernel> then_;
  std::optional<PointwiseFn> pointwise_;
  std::string description_;
};

// No CUDA algorithm declines a layer it supports (the CPU's winograd does).
std::string never_declines(const cuda::ConvAlgorithm&, const ConvParams&) { return std::string(); }

}  // namespace

Result<std::unique_ptr<CudaKernel>> compile_conv2d_cuda(const Op& op, const std::vector<Shape>& inputs,
                                                        const std::vector<Shape>& outputs,
                                                        const CudaCompileOptions& options) {
  const Conv2dOp& conv = static_cast<const Conv2dOp&>(op);
  const ConvParams p = conv.params_for(inputs[0]);
  std::string note;
  const cuda::ConvAlgorithm* algorithm =
      choose_conv_algorithm(p, options.conv_algorithm, "direct", cuda::find_conv_algorithm, never_declines, &note);
  if (algorithm == nullptr) return internal_error("no CUDA convolution algorithm supports " + p.to_string());
  const cuda::Status tuned = algorithm->tune(options.context, p);
  if (!tuned.ok()) return from_cuda(tuned).with_context(std::string(algorithm->name()) + " tuning");
  const size_t packed_bytes = algorithm->packed_weight_bytes(p);
  auto oihw = conv.weight_oihw(std::string("CUDA ") + algorithm->name());
  if (!oihw.ok()) return oihw.status();
  auto packed = options.weights->get(options.device, &op, std::string("weight:") + algorithm->name(), packed_bytes,
                                     [&](float* dst) { algorithm->pack_weights(p, oihw.value().data(), dst); });
  if (!packed.ok()) return packed.status();
  auto bias = upload_tensor(options, &op, "bias", conv.bias());
  if (!bias.ok()) return bias.status();
  std::unique_ptr<CudaKernel> then;
  if (conv.then() != nullptr) {
    auto compiled = compile_conv2d_cuda(*conv.then(), {conv.conv_output_shape(inputs[0])}, outputs, options);
    if (!compiled.ok()) return compiled.status();
    then = std::move(compiled.value());
  }
  return std::unique_ptr<CudaKernel>(
      new ConvCudaKernel(algorithm, p, packed.value(), bias.value(), conv.activation(), conv.has_residual(),
                         conv.has_input_scale(), packed_bytes + conv.bias().bytes(), conv.pool_params(p, outputs[0]),
                         std::move(then), conv.pointwise(), conv.kernel_description(algorithm->name(), note)));
}

}  // namespace winfer
