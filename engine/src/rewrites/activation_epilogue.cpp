// activation_epilogue: conv2d / add / linear / batchnorm2d <- relu / relu6, the activation
// applied by the layer's own kernel as it stores its output (a fused epilogue), so that the
// activation's pass over memory disappears.
//
// One rule for the four producers, not one file each: the pattern (a relu/relu6 alone reading
// the layer's output, AbsorbConsumerRule) and the condition (one activation per kernel, which
// each op's set_activation enforces) are the same; only the convolution has conditions of its
// own, below. A new layer whose kernel can apply an activation is one more line here.
//
// Conditions:
// - the layer has no activation yet (set_activation refuses a second one): an activation then
//   ends the chain, nothing more is folded after it (conv_batchnorm, conv_add refuse it);
// - convolution: the activation goes to the convolution that produces the op's output (after a
//   pointwise -> depthwise fusion, the depthwise one's: Conv2dOp::output_stage), and not after
//   a fused pooling (the op's epilogue runs before the pooling; the activation was written
//   after it). After a fused add it is act(conv(x) + bias + r), as written (ResNet's add ->
//   relu).
#include "engine/src/rewrites/rules.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/linear.h"

namespace winfer {
namespace {

class ActivationEpilogue : public AbsorbConsumerRule {
 public:
  const char* name() const override { return "activation_epilogue"; }
  bool absorb(Op& producer, const Op& consumer) const override {
    const auto* activation = dynamic_cast<const ActivationOp*>(&consumer);
    if (activation == nullptr) return false;
    const Activation act = activation->kind();
    if (auto* conv = dynamic_cast<Conv2dOp*>(&producer)) {
      Conv2dOp& stage = conv->output_stage();
      return !stage.pool() && stage.set_activation(act);
    }
    if (auto* add = dynamic_cast<AddOp*>(&producer)) return add->set_activation(act);
    if (auto* linear = dynamic_cast<LinearOp*>(&producer)) return linear->set_activation(act);
    if (auto* bn = dynamic_cast<BatchNorm2dOp*>(&producer)) return bn->set_activation(act);
    return false;
  }
};

}  // namespace

const AbsorbConsumerRule& activation_epilogue_rule() {
  static const ActivationEpilogue rule;
  return rule;
}

}  // namespace winfer
