// conv2d: 2-D convolution with stride, asymmetric padding, dilation, groups and bias
// (PyTorch nn.Conv2d semantics, weights OIHW). At load the fusion rules (engine/src/rewrites/)
// may fold into it a following batchnorm2d (into weight and bias), relu/relu6 (fused epilogue),
// an add of its output and a residual (a ResNet shortcut: the residual becomes a second input,
// added in the epilogue before the activation, out = act(conv(x) + bias + residual)), a
// sigmoid/hardsigmoid/hardswish/silu (applied over the output after the convolution), a channel scale of its input
// (a mul before it: squeeze-and-excitation, folded into the weights), a maxpool2d after the activation
// (computed band by band, kernels/cpu/conv_pool.h: the convolution's full output is never stored), or a depthwise
// conv2d reading its output, with that one's own batch norm and activation or pointwise function (ShuffleNet's,
// MobileNet's and EfficientNet's pointwise -> depthwise pair, band by band too, kernels/cpu/conv_then_conv.h). The op
// only offers the mutators below and refuses what its kernel cannot compute; when a pattern may be fused is the rules'
// business.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/src/conv_capability.h"
#include "engine/src/op.h"
#include "kernels/common/pointwise.h"
#include "layers/layer_util.h"
#include "layers/pool2d_common.h"

namespace winfer {

// Conv2dOp::absorb_input_scale: the channel scale goes into the weights where an image's input
// is at least this many times as large as the packed weights.
constexpr int64_t kChannelScaleFoldRatio = 8;

struct Conv2dAttrs {
  int64_t in_channels = 0, out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  Padding padding;
  int64_t groups = 1;
  bool bias = true;

  // One filter per channel: groups == in_channels == out_channels (> 1).
  bool depthwise() const { return groups > 1 && groups == in_channels && groups == out_channels; }
};

class Conv2dOp : public Op, public ConvCapability {
 public:
  explicit Conv2dOp(const Conv2dAttrs& attrs) : attrs_(attrs) {}
  const char* type() const override { return "conv2d"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Status load_params(const std::string& prefix, const std::vector<Shape>& inputs, ParamSource& params) override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;
  int64_t flops(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) const override;
  int64_t param_count() const override;
  size_t weight_bytes() const override {
    return weight_.bytes() + packed_.bytes() + bias_.bytes() + absorbed_conv_weight_bytes();
  }
  void pack_weights_at_load(const std::vector<Shape>& inputs, const ConvAlgorithm& conv) override;
  void for_each_weight(const std::function<void(Tensor&)>& f) override;
  const ConvCapability* conv() const override { return this; }

  const Conv2dAttrs& attrs() const { return attrs_; }

  // Fusion mutators, called by the rewrite rules (engine/src/rewrites/) at load, before
  // pack_weights_at_load. Each returns false, changing nothing, where the op's kernel could not
  // compute the result: one activation, one residual, one pooling and one absorbed convolution
  // at most, and the band-by-band schedules (pooling, depthwise) add no residual.
  //
  // The convolution that produces the op's output: the absorbed grouped one (then()) when
  // there is one, else this one. A batch norm or activation after the op goes there.
  Conv2dOp& output_stage() { return then_ ? *then_ : *this; }
  // Folds a per-channel affine map y = x * scale[o] + shift[o] into the weights and bias:
  // w'[o] = w[o] * scale[o], b'[o] = b[o] * scale[o] + shift[o] (a zero bias is created where
  // there is none). False once the weights are packed (no OIHW copy left) or on a size mismatch.
  bool fold_batchnorm(const std::vector<float>& scale, const std::vector<float>& shift);
  // The epilogue's activation; false when there is one already, or a pointwise function (it
  // would have to apply after that one).
  bool set_activation(Activation act) { return !pointwise_ && set_fused_activation(&activation_, act); }
  // An element-wise activation (sigmoid, hardsigmoid, hardswish, silu) of the output, applied by
  // the kernel over the output after the convolution: false with one already, an
  // activation, a residual, a pooling (whose band schedule does not apply it) or an absorbed
  // convolution (whose output the function would apply to: the rule gives it to output_stage()).
  // Nothing but a grouped convolution is fused after it: batch norm, activation, residual and
  // pooling refuse once it is set; absorb_grouped takes it, the pair applying it band by band.
  bool set_pointwise(PointwiseFn fn);
  const std::optional<PointwiseFn>& pointwise() const { return pointwise_; }
  // A second input, the residual, added in the epilogue before `act` (the add's own activation,
  // which becomes this op's): act(conv(x) + bias + residual). False with an activation or a
  // residual already, or a pooling or depthwise convolution (their band schedules add none).
  bool add_residual(Activation act);
  // A per-input-channel scale of the input, conv(x * scale) with scale [N, C, 1, 1] a second
  // input (rule channel_scale_conv: squeeze-and-excitation's product): the kernel folds it into
  // a copy of the packed weights per image where those are smaller than an image's input, else
  // scales a copy of the input. Only on the bare op (nothing absorbed yet); afterwards the op
  // takes an activation, a pointwise function and a residual (inputs then x, scale, residual),
  // but no pooling and no grouped convolution (their band schedules scale nothing).
  bool absorb_input_scale();
  bool has_input_scale() const override { return has_input_scale_; }
  // Max pooling of this op's output; false with a pooling, a residual or a depthwise
  // convolution already.
  bool absorb_pool(const Pool2dAttrs& pool);
  // A copy of `grouped` (a grouped convolution, depthwise or not), run on this op's output band
  // by band (after this op's activation or pointwise function); false when this op has a
  // residual, a pooling or an absorbed convolution already, or `grouped` has absorbed anything or
  // been packed (the copy must be the bare layer).
  bool absorb_grouped(const Conv2dOp& grouped);

  // The convolution for a given input shape (NCHW).
  ConvParams params_for(const Shape& input) const override;
  // The absorbed max pooling, if any: the op's output is the pooled convolution.
  const std::optional<Pool2dAttrs>& pool() const { return pool_; }
  // The OIHW weights (BN folded in): the op's own tensor, or unpacked from the layout they were
  // packed into at load (a new tensor, for algorithms and devices that pack their own); an
  // error naming `user` (the algorithm asking) where that layout cannot be undone.
  Result<Tensor> weight_oihw(const std::string& user) const override;
  const Tensor& bias() const override { return bias_; }  // [Co]; empty when there is none
  Activation activation() const override { return activation_; }
  // The CPU algorithm whose layout the weights were packed into at load (null: none).
  const ConvAlgorithm* packed_for() const override { return packed_for_; }
  // True once an add was absorbed: inputs are then (x, residual), or (x, scale, residual).
  bool has_residual() const override { return has_residual_; }
  // The index of the residual among the inputs, when there is one.
  int residual_input() const { return has_input_scale_ ? 2 : 1; }
  // The absorbed depthwise convolution reading this one's output, if any (its own weights,
  // batch norm and activation): the op's output is then that convolution's.
  const Conv2dOp* then() const { return then_.get(); }
  size_t absorbed_conv_weight_bytes() const override { return then_ ? then_->weight_bytes() : 0; }
  std::optional<AbsorbedConv> absorbed_conv(const ConvAlgorithm& algorithm, const Shape& input) const override;
  // The bytes of workspace this op's CPU kernel needs when its convolution runs `algorithm`:
  // the algorithm's own, or the band buffer and scratch of a fused pooling or depthwise (sized
  // for a session of `threads` threads).
  size_t kernel_workspace_bytes(const ConvAlgorithm& algorithm, const std::vector<Shape>& inputs,
                                const std::vector<Shape>& outputs, int threads) const override;
  // The pooling of the convolution's output (for these conv params) into `output`, if absorbed.
  std::optional<PoolParams> pool_params(const ConvParams& p, const Shape& output) const;
  // This convolution's own output shape (before a fused pooling or depthwise convolution).
  Shape conv_output_shape(const Shape& input) const;
  // The profile's line for this layer on any device: the algorithm, then what it absorbed and
  // `note` (why it is not the session's algorithm), e.g. "im2win (fused add+relu)".
  std::string kernel_description(const char* algorithm, const std::string& note) const;

 private:
  // The weights in `algorithm`'s layout for params p: the model's copy packed at load (*shared
  // set) or a new one packed from OIHW.
  Result<Tensor> weights_for(const ConvAlgorithm& algorithm, const ConvParams& p, bool* shared) const;
  Conv2dAttrs attrs_;
  Tensor weight_, bias_;  // weight_ is empty once packed at load
  // Set by pack_weights_at_load: the weights in packed_for_'s layout, shared by every session
  // compiled with that algorithm.
  Tensor packed_;
  const ConvAlgorithm* packed_for_ = nullptr;
  ConvParams packed_params_;
  Activation activation_ = Activation::kNone;
  std::optional<PointwiseFn> pointwise_;
  std::optional<Pool2dAttrs> pool_;
  bool has_residual_ = false;
  bool has_input_scale_ = false;
  std::shared_ptr<Conv2dOp> then_;  // a copy of the absorbed op, which the graph drops
};

Result<std::unique_ptr<Op>> create_conv2d(const Attrs& attrs);

// The algorithm a convolution with params p runs when the session asks for `requested`, on any
// device (`Algorithm`: the CPU's or CUDA's interface; `find` looks one up by name): depthwise
// layers always take "depthwise"; a layer that `requested` does not support, or declines as
// slower there (`declines(algorithm, p)`: why, or empty), takes `fallback`, and *note says why.
// Null when nothing supports p.
template <class Algorithm, class Find, class Declines>
const Algorithm* choose_conv_algorithm(const ConvParams& p, const Algorithm* requested, const char* fallback, Find find,
                                       Declines declines, std::string* note) {
  const Algorithm* algorithm = requested;
  if (p.is_depthwise()) {
    algorithm = find("depthwise");
  } else if (!algorithm->supports(p)) {
    *note = std::string(requested->name()) + " does not support " + p.to_string();
    algorithm = find(fallback);
  } else if (std::string why = declines(*algorithm, p); !why.empty()) {
    *note = std::move(why);
    algorithm = find(fallback);
  }
  return algorithm != nullptr && algorithm->supports(p) ? algorithm : nullptr;
}

}  // namespace winfer
