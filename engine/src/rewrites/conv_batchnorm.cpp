// conv_batchnorm: conv2d <- batchnorm2d, the batch norm folded into the convolution's weights
// and bias (ONNX Runtime's conv_bn_fusion): w'[o] = w[o] * scale[o], b'[o] = b[o] * scale[o] +
// shift[o], a zero bias created where the convolution has none.
//
// Pattern: the batchnorm2d alone reads the convolution's output (AbsorbConsumerRule). The batch
// norm applies to the convolution that produces the op's output: after a pointwise -> depthwise
// fusion, the depthwise one's (Conv2dOp::output_stage), whose batch norm follows it in the file.
// Conditions, on that convolution:
// - no activation yet: bn(act(y)) is not affine in y, so it cannot be folded into the weights;
// - no residual (a fused add): bn(conv(x) + r) would need the residual scaled too;
// - no pooling: the op's output is then pooled, and a per-channel scale (negative ones too)
//   does not commute with max;
// - its OIHW weights, before packing (fusion runs before pack_weights_at_load;
//   Conv2dOp::fold_batchnorm refuses otherwise).
// Scale and shift are computed in double at load (BatchNorm2dOp::load_params), so that folding
// multiplies no extra rounding error into every weight.
#include "engine/src/rewrites/rules.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"

namespace winfer {
namespace {

class ConvBatchNorm : public AbsorbConsumerRule {
 public:
  const char* name() const override { return "conv_batchnorm"; }
  bool absorb(Op& producer, const Op& consumer) const override {
    auto* conv = dynamic_cast<Conv2dOp*>(&producer);
    const auto* bn = dynamic_cast<const BatchNorm2dOp*>(&consumer);
    if (conv == nullptr || bn == nullptr) return false;
    Conv2dOp& stage = conv->output_stage();
    if (stage.activation() != Activation::kNone || stage.has_residual() || stage.pool()) return false;
    return stage.fold_batchnorm(bn->scale(), bn->shift());
  }
};

}  // namespace

const AbsorbConsumerRule& conv_batchnorm_rule() {
  static const ConvBatchNorm rule;
  return rule;
}

}  // namespace winfer
