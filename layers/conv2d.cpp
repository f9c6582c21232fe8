#include "layers/conv2d.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_pool.h"
#include "kernels/cpu/conv_then_conv.h"
#include "kernels/cpu/pointwise.h"

namespace winfer {
namespace {

// The profile's note for a layer: the algorithm's variant for these params (e.g. "group
// sets"), then why the layer does not run the session's algorithm, if it does not.
std::string with_variant(const ConvAlgorithm& algorithm, const ConvParams& p, const std::string& note) {
  const std::string variant = algorithm.variant(p);
  if (variant.empty()) return note;
  return note.empty() ? variant : variant + "; " + note;
}

constexpr size_t kWorkspaceAlignment = 64;
size_t workspace_aligned(size_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

// The fold's bar (InputScalePlan), the one the rule applies at the model's declared shape: the
// weights scaled and read per image against the product's read and write of the input.
constexpr size_t kFoldInputToWeights = kChannelScaleFoldRatio;

// How a kernel applies an absorbed channel scale (Conv2dOp::absorb_input_scale) to the input of
// convolution p: folded into a copy of the packed weights, image by image (the weights of p's
// batch-1 convolution `one`), where the algorithm's layout allows it and the weights are at most
// an eighth of an image's input (EfficientNet's 1x1 projections after its large
// squeeze-and-excitation products: 16 x 32 weights against 112 x 112 x 32 inputs); otherwise
// into a copy of the input, the product's own pass (a session whose input is smaller than the
// declared one the rule judged by). The workspace holds the copy (`copy_bytes`, aligned), then
// the algorithm's own workspace.
struct InputScalePlan {
  bool fold = false;
  ConvParams one;
  size_t copy_bytes = 0;
  size_t workspace_bytes = 0;  // in all
};
InputScalePlan plan_input_scale(const ConvAlgorithm& algorithm, const ConvParams& p) {
  InputScalePlan plan;
  plan.one = p;
  plan.one.batch = 1;
  const size_t weight_bytes = algorithm.packed_weight_bytes(p);
  const size_t image_bytes = static_cast<size_t>(p.in_h * p.in_w * p.in_channels) * sizeof(float);
  plan.fold = algorithm.scales_packed_input_channels(p) && weight_bytes * kFoldInputToWeights <= image_bytes;
  if (plan.fold) {
    plan.copy_bytes = workspace_aligned(weight_bytes);
    plan.workspace_bytes = plan.copy_bytes + algorithm.workspace_bytes(plan.one);
  } else {
    plan.copy_bytes = workspace_aligned(image_bytes * static_cast<size_t>(p.batch));
    plan.workspace_bytes = plan.copy_bytes + algorithm.workspace_bytes(p);
  }
  return plan;
}

// The fused second (grouped: depthwise or not) convolution of a ConvKernel: its algorithm
// ("depthwise" for a depthwise one), weights (the
// model's, packed at load, or packed for this kernel: `owned`), bias and activation, and the
// band-by-band schedule of the pair.
struct ThenStage {
  const ConvAlgorithm* algorithm;
  Tensor packed;
  bool owned;
  Tensor bias;
  Activation activation;
  std::optional<PointwiseFn> pointwise;
  ConvThenConv pair;
};

class ConvKernel : public Kernel {
 public:
  // `packed` holds the weights in the algorithm's layout: the model's copy (packed at load,
  // shared with every session using this algorithm) or one packed for this kernel (`owned`).
  // With `pool`, the output is the max-pooled convolution, computed band by band; with `then`,
  // the output is the fused grouped convolution's, computed band by band too.
  ConvKernel(const ConvAlgorithm* algorithm, const ConvParams& params, const Conv2dOp& op, Tensor packed, bool owned,
             std::optional<ConvPool> pool, std::optional<ThenStage> then, std::optional<InputScalePlan> scale,
             std::string note)
      : algorithm_(algorithm),
        params_(params),
        packed_(std::move(packed)),
        owned_(owned),
        bias_(op.bias()),
        activation_(op.activation()),
        residual_(op.has_residual()),
        residual_input_(op.residual_input()),
        scale_(scale),
        pool_(std::move(pool)),
        then_(std::move(then)),
        pointwise_(op.pointwise()),
        description_(op.kernel_description(algorithm->name(), with_variant(*algorithm, params, note))) {}
  size_t workspace_bytes() const override {
    if (scale_) return scale_->workspace_bytes;
    if (then_) return then_->pair.workspace_bytes();
    return pool_ ? pool_->workspace_bytes() : algorithm_->workspace_bytes(params_);
  }
  size_t owned_weight_bytes() const override {
    return (owned_ ? packed_.bytes() : 0) + (then_ && then_->owned ? then_->packed.bytes() : 0);
  }
  void for_each_owned_weight(const std::function<void(Tensor&)>& f) override {
    if (owned_) f(packed_);
    if (then_ && then_->owned) f(then_->packed);
  }
  size_t shared_weight_bytes() const override {
    size_t bytes = bias_.bytes() + (owned_ ? 0 : packed_.bytes());
    if (then_) bytes += then_->bias.bytes() + (then_->owned ? 0 : then_->packed.bytes());
    return bytes;
  }
  std::string describe() const override { return description_; }
  // The output may take over the residual's storage where the algorithm adds it element by
  // element in its store (im2win, indirect); never in a band-by-band pooling (no residual).
  int in_place_input() const override {
    return residual_ && algorithm_->residual_may_alias_output() ? residual_input_ : -1;
  }
  // A plain convolution (no residual, pooling or absorbed grouped one) whose algorithm writes
  // with a pixel stride (im2win, indirect, im2col, direct, winograd; not depthwise).
  bool supports_output_pixel_stride(int output) const override {
    return output == 0 && !residual_ && !scale_ && !pool_ && !then_ && algorithm_->supports_output_stride();
  }
  void set_output_pixel_stride(int, int64_t floats) override { params_.out_pixel_stride = floats; }
  // in[1], when there is one, is the residual (a fused add); with an input scale, in[1] is the
  // scale and in[2] the residual.
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void* workspace,
           int threads) const override {
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    if (scale_) {
      run_scaled(in[0]->data(), in[1]->data(), bias, residual_ ? in[2]->data() : nullptr, out[0]->data(),
                 static_cast<char*>(workspace), threads);
      if (pointwise_) apply_pointwise(*pointwise_, out[0]->data(), threads);
    } else if (then_) {
      const ConvStage first{algorithm_, packed_.data(), bias, activation_, pointwise_};
      const ConvStage second{then_->algorithm, then_->packed.data(), then_->bias.empty() ? nullptr : then_->bias.data(),
                             then_->activation, then_->pointwise};
      then_->pair.run(in[0]->data(), first, second, out[0]->data(), workspace, threads);
    } else if (pool_) {
      pool_->run(in[0]->data(), packed_.data(), bias, out[0]->data(), workspace, activation_, threads);
    } else {
      algorithm_->run(params_, in[0]->data(), packed_.data(), bias, residual_ ? in[1]->data() : nullptr, out[0]->data(),
                      workspace, activation_, threads);
      if (pointwise_) apply_pointwise(*pointwise_, out[0]->data(), threads);
    }
  }

 private:
  // conv(x * scale) (InputScalePlan): image by image with the scale folded into a copy of the
  // weights, or once over a scaled copy of the input. Outputs are contiguous (no pixel stride).
  void run_scaled(const float* x, const float* scale, const float* bias, const float* residual, float* y,
                  char* workspace, int threads) const {
    float* copy = reinterpret_cast<float*>(workspace);
    void* conv_workspace = workspace + scale_->copy_bytes;
    if (!scale_->fold) {
      const ConvParams& p = params_;
      scale_channels_nhwc(x, scale, copy, p.batch, p.in_h * p.in_w, p.in_channels, threads);
      algorithm_->run(p, copy, packed_.data(), bias, residual, y, conv_workspace, activation_, threads);
      return;
    }
    const ConvParams& one = scale_->one;
    const int64_t in_floats = one.in_h * one.in_w * one.in_channels;
    const int64_t out_floats = one.out_h() * one.out_w() * one.out_channels;
    for (int64_t n = 0; n < params_.batch; ++n) {
      algorithm_->scale_packed_input_channels(one, packed_.data(), scale + n * one.in_channels, copy);
      algorithm_->run(one, x + n * in_floats, copy, bias, residual != nullptr ? residual + n * out_floats : nullptr,
                      y + n * out_floats, conv_workspace, activation_, threads);
    }
  }

  // The absorbed pointwise activation (rule conv_pointwise) over the output, in place, after
  // the convolution: the separate layer's pass (the same function, so the same bits), pixel by
  // pixel when the output is a channel slice (out_pixel_stride). Not per tile inside im2win and
  // indirect while the tile is in L1: measured no faster, up to 15-28% slower on wide 1x1 layers
  // (the functions are bound by their arithmetic, not by memory: docs/PERFORMANCE.md).
  void apply_pointwise(PointwiseFn fn, float* output, int threads) const {
    const int64_t pixels = params_.batch * params_.out_h() * params_.out_w();
    if (params_.out_stride() == params_.out_channels) {
      pointwise_activation(output, output, pixels * params_.out_channels, fn, threads);
    } else {
      pointwise_activation_rows(output, pixels, params_.out_channels, params_.out_stride(), fn);
    }
  }

  const ConvAlgorithm* algorithm_;
  ConvParams params_;
  Tensor packed_;
  bool owned_;
  Tensor bias_;  // shares the op's storage
  Activation activation_;
  bool residual_;
  int residual_input_;
  std::optional<InputScalePlan> scale_;
  std::optional<ConvPool> pool_;
  std::optional<ThenStage> then_;
  std::optional<PointwiseFn> pointwise_;
  std::string description_;
};

// The CPU algorithm for params p when the session asks for `requested` (choose_conv_algorithm):
// "im2win", the default, takes every valid convolution that `requested` cannot do or (only where
// `may_decline`) declines as slower there (ConvAlgorithm::declines).
const ConvAlgorithm* choose_algorithm(const ConvParams& p, const ConvAlgorithm* requested, bool may_decline,
                                      std::string* note) {
  return choose_conv_algorithm(
      p, requested, "im2win", find_conv_algorithm,
      [may_decline](const ConvAlgorithm& a, const ConvParams& q) {
        return may_decline ? a.declines(q) : std::string();
      },
      note);
}

Tensor pack_for(const ConvAlgorithm& algorithm, const ConvParams& p, const float* weight_oihw) {
  const size_t floats = (algorithm.packed_weight_bytes(p) + sizeof(float) - 1) / sizeof(float);
  Tensor packed = Tensor::allocate(Shape{static_cast<int64_t>(floats)}, Layout::kPlain, DType::kFloat32,
                                   /*huge_pages=*/algorithm.packed_weights_in_huge_pages());
  algorithm.pack_weights(p, weight_oihw, packed.data());
  // Final now: into 2 MiB pages in the background (huge_page_promotion.h).
  if (algorithm.packed_weights_in_huge_pages()) packed.promote_to_huge_pages();
  return packed;
}

}  // namespace

std::string Conv2dOp::kernel_description(const char* algorithm, const std::string& note) const {
  std::string extra;
  if (has_residual_) {
    extra = activation_ == Activation::kNone ? "fused add" : std::string("fused add+") + activation_name(activation_);
  }
  if (pointwise_) extra = std::string("fused ") + pointwise_fn_name(*pointwise_);
  if (has_input_scale_) extra = "fused mul" + (extra.empty() ? "" : ", " + extra);
  if (pool_) extra = "fused maxpool";
  if (then_) {
    // e.g. "silu, then depthwise+silu, fused": each stage's own function, where it has one.
    const auto stage_fn = [](const std::optional<PointwiseFn>& fn) {
      return fn ? std::string(pointwise_fn_name(*fn)) : std::string();
    };
    const std::string first = stage_fn(pointwise_), second = stage_fn(then_->pointwise_);
    extra = (first.empty() ? "" : first + ", ") + (then_->attrs().depthwise() ? "then depthwise" : "then grouped") +
            (second.empty() ? "" : "+" + second) + ", fused";
  }
  if (!note.empty()) extra += (extra.empty() ? "" : "; ") + note;
  return extra.empty() ? std::string(algorithm) : std::string(algorithm) + " (" + extra + ")";
}

ConvParams Conv2dOp::params_for(const Shape& input) const {
  ConvParams p;
  p.batch = input.n();
  p.in_channels = attrs_.in_channels;
  p.in_h = input.h();
  p.in_w = input.w();
  p.out_channels = attrs_.out_channels;
  p.kernel_h = attrs_.kernel_h;
  p.kernel_w = attrs_.kernel_w;
  p.stride_h = attrs_.stride_h;
  p.stride_w = attrs_.stride_w;
  p.pad_top = attrs_.padding.top;
  p.pad_left = attrs_.padding.left;
  p.pad_bottom = attrs_.padding.bottom;
  p.pad_right = attrs_.padding.right;
  p.dilation_h = attrs_.dilation_h;
  p.dilation_w = attrs_.dilation_w;
  p.groups = attrs_.groups;
  return p;
}

Status Conv2dOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  const size_t expected = 1 + (has_input_scale_ ? 1 : 0) + (has_residual_ ? 1 : 0);
  if (inputs.size() != expected) {
    return internal_error("conv2d given " + std::to_string(inputs.size()) + " inputs, expected " +
                          std::to_string(expected) + " (input" +
                          (has_input_scale_ ? ", channel scale of a fused mul" : "") +
                          (has_residual_ ? ", residual of a fused add" : "") + ")");
  }
  const Shape& in = inputs[0];
  WINFER_RETURN_IF_ERROR(expect_rank(in, 4, "input"));
  if (in.c() != attrs_.in_channels) {
    return shape_mismatch("input " + in.to_string() + " has " + std::to_string(in.c()) +
                          " channels, expected in_channels = " + std::to_string(attrs_.in_channels));
  }
  if (has_input_scale_ && inputs[1] != Shape{in.n(), in.c(), 1, 1}) {
    return shape_mismatch("channel scale " + inputs[1].to_string() + " (fused mul) must be [N, C, 1, 1] = " +
                          Shape{in.n(), in.c(), 1, 1}.to_string() + " for input " + in.to_string());
  }
  const ConvParams p = params_for(in);
  // Compared on the padded extent, not via out_h() < 1: out_h() divides a negative span
  // rounding towards zero, so a kernel 1 tap too large with stride 2 would pass.
  const bool fits = in.h() + p.pad_top + p.pad_bottom >= attrs_.dilation_h * (attrs_.kernel_h - 1) + 1 &&
                    in.w() + p.pad_left + p.pad_right >= attrs_.dilation_w * (attrs_.kernel_w - 1) + 1;
  if (!fits) {
    return shape_mismatch("input " + in.to_string() + " is smaller than the dilated kernel " +
                          std::to_string(attrs_.dilation_h * (attrs_.kernel_h - 1) + 1) + "x" +
                          std::to_string(attrs_.dilation_w * (attrs_.kernel_w - 1) + 1) + " plus padding");
  }
  const Shape conv = conv_output_shape(in);
  if (has_residual_ && inputs[residual_input()] != conv) {
    return shape_mismatch("residual " + inputs[residual_input()].to_string() +
                          " (fused add) must have the output's shape " + conv.to_string());
  }
  if (then_) return then_->infer_shapes({conv}, outputs);
  if (!pool_) {
    *outputs = {conv};
    return Status::Ok();
  }
  Shape pooled;
  WINFER_RETURN_IF_ERROR(pool2d_output_shape(*pool_, conv, &pooled));
  *outputs = {pooled};
  return Status::Ok();
}

Status Conv2dOp::load_params(const std::string& prefix, const std::vector<Shape>&, ParamSource& params) {
  const Shape weight_shape{attrs_.out_channels, attrs_.in_channels / attrs_.groups, attrs_.kernel_h, attrs_.kernel_w};
  WINFER_RETURN_IF_ERROR(params.get(prefix + ".weight", weight_shape, &weight_));
  if (attrs_.bias) WINFER_RETURN_IF_ERROR(params.get(prefix + ".bias", Shape{attrs_.out_channels}, &bias_));
  return Status::Ok();
}

Shape Conv2dOp::conv_output_shape(const Shape& input) const {
  const ConvParams p = params_for(input);
  return Shape{input.n(), attrs_.out_channels, p.out_h(), p.out_w()};
}

bool Conv2dOp::fold_batchnorm(const std::vector<float>& scale, const std::vector<float>& shift) {
  const size_t channels = static_cast<size_t>(attrs_.out_channels);
  if (pointwise_ || weight_.empty() || scale.size() != channels || shift.size() != channels) return false;
  // w'[o] = w[o] * scale[o];  b'[o] = b[o] * scale[o] + shift[o].
  const int64_t per_output = weight_.numel() / attrs_.out_channels;
  if (bias_.empty()) bias_ = Tensor::allocate(Shape{attrs_.out_channels});
  for (int64_t o = 0; o < attrs_.out_channels; ++o) {
    const float s = scale[o];
    float* w = weight_.data() + o * per_output;
    for (int64_t i = 0; i < per_output; ++i) w[i] *= s;
    bias_.data()[o] = bias_.data()[o] * s + shift[o];
  }
  return true;
}

bool Conv2dOp::add_residual(Activation act) {
  // The epilogue computes act(conv(x) + bias + residual): an activation already there would
  // have to apply before the sum.
  if (has_residual_ || pool_ || then_ || pointwise_ || activation_ != Activation::kNone) return false;
  has_residual_ = true;
  activation_ = act;
  return true;
}

bool Conv2dOp::absorb_input_scale() {
  if (has_input_scale_ || has_residual_ || pool_ || then_ || pointwise_ || activation_ != Activation::kNone)
    return false;
  has_input_scale_ = true;
  return true;
}

bool Conv2dOp::absorb_pool(const Pool2dAttrs& pool) {
  if (pool_ || has_residual_ || has_input_scale_ || then_ || pointwise_) return false;
  pool_ = pool;
  return true;
}

bool Conv2dOp::absorb_grouped(const Conv2dOp& grouped) {
  const bool bare = !grouped.has_residual_ && !grouped.has_input_scale_ && !grouped.pool_ && !grouped.then_ &&
                    grouped.packed_for_ == nullptr && grouped.activation_ == Activation::kNone && !grouped.pointwise_;
  // A pointwise function of this op stays: the bands apply it to their rows (ConvStage).
  if (then_ || has_residual_ || has_input_scale_ || pool_ || !bare) return false;
  then_ = std::make_shared<Conv2dOp>(grouped);
  return true;
}

bool Conv2dOp::set_pointwise(PointwiseFn fn) {
  if (pointwise_ || has_residual_ || pool_ || then_ || activation_ != Activation::kNone) return false;
  pointwise_ = fn;
  return true;
}

std::optional<PoolParams> Conv2dOp::pool_params(const ConvParams& p, const Shape& output) const {
  if (!pool_) return std::nullopt;
  return pool2d_params(*pool_, Shape{p.batch, p.out_channels, p.out_h(), p.out_w()}, output);
}

Result<std::unique_ptr<Kernel>> Conv2dOp::compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                                  const CompileOptions& options) const {
  const ConvParams p = params_for(inputs[0]);
  std::string note;
  // A layer whose weights the model keeps only in the requested algorithm's layout, which
  // cannot be undone (winograd packed at load for a larger batch), runs that algorithm even
  // where it would decline the shape: no other algorithm could get the weights.
  const bool only_requested_layout = packed_for_ == options.conv_algorithm && !packed_for_->can_unpack_weights();
  const ConvAlgorithm* algorithm = choose_algorithm(p, options.conv_algorithm, !only_requested_layout, &note);
  if (algorithm == nullptr) return internal_error("no convolution algorithm supports " + p.to_string());
  std::optional<ConvPool> pool;
  const BandSizing bands{options.threads};
  if (const auto pooling = pool_params(p, outputs[0])) pool.emplace(*algorithm, p, *pooling, bands);
  bool shared = false;
  auto packed = weights_for(*algorithm, p, &shared);
  if (!packed.ok()) return packed.status();
  std::optional<ThenStage> then;
  if (then_) {
    const ConvParams q = then_->params_for(conv_output_shape(inputs[0]));
    std::string then_note;
    const ConvAlgorithm* second = choose_algorithm(q, options.conv_algorithm, false, &then_note);
    if (second == nullptr) return internal_error("no convolution algorithm supports " + q.to_string());
    bool then_shared = false;
    auto then_packed = then_->weights_for(*second, q, &then_shared);
    if (!then_packed.ok()) return then_packed.status();
    then.emplace(ThenStage{second, std::move(then_packed.value()), !then_shared, then_->bias(), then_->activation(),
                           then_->pointwise(), ConvThenConv(*algorithm, p, *second, q, bands)});
  }
  std::optional<InputScalePlan> scale;
  if (has_input_scale_) {
    scale = plan_input_scale(*algorithm, p);
    const char* how = scale->fold ? "channel scale in the weights" : "channel scale on a copy of the input";
    note = note.empty() ? how : std::string(how) + "; " + note;
  }
  return std::unique_ptr<Kernel>(new ConvKernel(algorithm, p, *this, std::move(packed.value()), /*owned=*/!shared,
                                                std::move(pool), std::move(then), scale, std::move(note)));
}

Result<Tensor> Conv2dOp::weights_for(const ConvAlgorithm& algorithm, const ConvParams& p, bool* shared) const {
  *shared = &algorithm == packed_for_;
  if (*shared) return packed_;
  auto oihw = weight_oihw(algorithm.name());
  if (!oihw.ok()) return oihw.status();
  return pack_for(algorithm, p, oihw.value().data());
}

size_t Conv2dOp::kernel_workspace_bytes(const ConvAlgorithm& algorithm, const std::vector<Shape>& inputs,
                                        const std::vector<Shape>& outputs, int threads) const {
  const ConvParams p = params_for(inputs[0]);
  if (has_input_scale_) return plan_input_scale(algorithm, p).workspace_bytes;
  if (then_) {
    const auto absorbed = absorbed_conv(algorithm, inputs[0]);
    return absorbed ? ConvThenConv(algorithm, p, *absorbed->algorithm, absorbed->params, BandSizing{threads})
                          .workspace_bytes()
                    : 0;
  }
  if (const auto pooling = pool_params(p, outputs[0]))
    return ConvPool(algorithm, p, *pooling, BandSizing{threads}).workspace_bytes();
  return algorithm.workspace_bytes(p);
}

std::optional<ConvCapability::AbsorbedConv> Conv2dOp::absorbed_conv(const ConvAlgorithm& algorithm,
                                                                    const Shape& input) const {
  if (!then_) return std::nullopt;
  AbsorbedConv absorbed;
  absorbed.op = then_.get();
  absorbed.params = then_->params_for(conv_output_shape(input));
  std::string note;
  // As compile() chooses the second stage's algorithm for a session that runs `algorithm`.
  absorbed.algorithm = choose_algorithm(absorbed.params, &algorithm, /*may_decline=*/false, &note);
  if (absorbed.algorithm == nullptr) return std::nullopt;
  return absorbed;
}

void Conv2dOp::for_each_weight(const std::function<void(Tensor&)>& f) {
  for (Tensor* t : {&weight_, &packed_, &bias_}) {
    if (!t->empty()) f(*t);
  }
  if (then_) then_->for_each_weight(f);
}

void Conv2dOp::pack_weights_at_load(const std::vector<Shape>& inputs, const ConvAlgorithm& conv) {
  const ConvParams p = params_for(inputs[0]);
  std::string note;
  const ConvAlgorithm* algorithm = choose_algorithm(p, &conv, /*may_decline=*/true, &note);
  if (then_) then_->pack_weights_at_load({conv_output_shape(inputs[0])}, conv);
  if (algorithm == nullptr || packed_for_ != nullptr) return;
  // A layout that cannot be undone (winograd's transformed weights) is packed all the same and
  // the OIHW copy dropped: asking for pack_for means one copy of the weights; other algorithms
  // then get a clear error from weight_oihw().
  if (algorithm->pack_weights_in_place(p, weight_.data())) {
    packed_ = weight_.reshaped(Shape{weight_.numel()}, Layout::kPlain);
  } else {
    packed_ = pack_for(*algorithm, p, weight_.data());  // another size (winograd) or a transpose (GHWIO)
  }
  packed_for_ = algorithm;
  packed_params_ = p;
  weight_ = Tensor();
}

Result<Tensor> Conv2dOp::weight_oihw(const std::string& user) const {
  if (!weight_.empty()) return weight_;
  if (!packed_for_->can_unpack_weights()) {
    return invalid_argument(std::string("the weights were packed for ") + packed_for_->name() +
                            " at load (LoadOptions::pack_for), which cannot be undone, so " + user +
                            " cannot have them; load the model with pack_for = \"" + user +
                            "\" (or \"\" to keep the OIHW weights)");
  }
  const Shape shape{attrs_.out_channels, attrs_.in_channels / attrs_.groups, attrs_.kernel_h, attrs_.kernel_w};
  Tensor oihw = Tensor::allocate(shape);
  packed_for_->unpack_weights(packed_params_, packed_.data(), oihw.data());
  return oihw;
}

int64_t Conv2dOp::flops(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) const {
  const int64_t own = params_for(inputs[0]).flops();
  return then_ ? own + then_->flops({conv_output_shape(inputs[0])}, outputs) : own;
}

int64_t Conv2dOp::param_count() const {
  return attrs_.out_channels * (attrs_.in_channels / attrs_.groups) * attrs_.kernel_h * attrs_.kernel_w +
         (attrs_.bias ? attrs_.out_channels : 0);
}

Result<std::unique_ptr<Op>> create_conv2d(const Attrs& attrs) {
  Conv2dAttrs a;
  WINFER_RETURN_IF_ERROR(attrs.get_int("in_channels", &a.in_channels));
  WINFER_RETURN_IF_ERROR(attrs.get_int("out_channels", &a.out_channels));
  WINFER_RETURN_IF_ERROR(read_hw(attrs, "kernel_size", &a.kernel_h, &a.kernel_w));
  WINFER_RETURN_IF_ERROR(read_hw(attrs, "stride", &a.stride_h, &a.stride_w, 1, 1));
  WINFER_RETURN_IF_ERROR(read_hw(attrs, "dilation", &a.dilation_h, &a.dilation_w, 1, 1));
  WINFER_RETURN_IF_ERROR(read_padding(attrs, "padding", &a.padding));
  WINFER_RETURN_IF_ERROR(attrs.get_int("groups", &a.groups, 1));
  WINFER_RETURN_IF_ERROR(attrs.get_bool("bias", &a.bias, true));
  WINFER_RETURN_IF_ERROR(expect_at_least("in_channels", a.in_channels, 1));
  WINFER_RETURN_IF_ERROR(expect_at_least("out_channels", a.out_channels, 1));
  WINFER_RETURN_IF_ERROR(expect_at_least("kernel_size", std::min(a.kernel_h, a.kernel_w), 1));
  WINFER_RETURN_IF_ERROR(expect_at_least("stride", std::min(a.stride_h, a.stride_w), 1));
  WINFER_RETURN_IF_ERROR(expect_at_least("dilation", std::min(a.dilation_h, a.dilation_w), 1));
  WINFER_RETURN_IF_ERROR(expect_at_least("groups", a.groups, 1));
  if (a.in_channels % a.groups != 0 || a.out_channels % a.groups != 0) {
    return invalid_argument("groups = " + std::to_string(a.groups) + " must divide in_channels = " +
                            std::to_string(a.in_channels) + " and out_channels = " + std::to_string(a.out_channels));
  }
  // Reject absurd sizes before any sum or product of them can overflow.
  constexpr int64_t kMaxExtent = int64_t(1) << 24;
  for (int64_t v : {a.kernel_h, a.kernel_w, a.stride_h, a.stride_w, a.dilation_h, a.dilation_w, a.padding.top,
                    a.padding.left, a.padding.bottom, a.padding.right}) {
    if (v > kMaxExtent) {
      return invalid_argument("kernel_size, stride, dilation and padding must be <= 2^24, got " + std::to_string(v));
    }
  }
  auto shape = Shape::make({a.out_channels, a.in_channels / a.groups, a.kernel_h, a.kernel_w});
  if (!shape.ok()) return Status(shape.status()).with_context("weight");
  return std::unique_ptr<Op>(new Conv2dOp(a));
}

}  // namespace winfer
