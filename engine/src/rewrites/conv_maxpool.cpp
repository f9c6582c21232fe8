// conv_maxpool: conv2d <- maxpool2d, computed band by band (kernels/cpu/conv_pool.h): a few
// convolution rows at a time into a buffer in the workspace, pooled from there, so that the
// convolution's output (VGG16's largest tensor, ResNet's stem output) is never stored.
//
// Pattern: the maxpool2d alone reads the convolution's output (AbsorbConsumerRule), after its
// batch norm and activation were folded in (they come first in the file: conv, bn, relu,
// maxpool); the pooling applies to the activated output, as written.
// Conditions (Conv2dOp::absorb_pool refuses the rest, which the band schedule cannot compute):
// - no residual: conv_pool adds none;
// - no pooling or absorbed depthwise convolution already.
// Nothing is folded after the pooling: conv_batchnorm, activation_epilogue and
// pointwise_depthwise refuse a pooled convolution (the op's output is the pooling's).
#include "engine/src/rewrites/rules.h"
#include "layers/conv2d.h"
#include "layers/maxpool2d.h"

namespace winfer {
namespace {

class ConvMaxPool : public AbsorbConsumerRule {
 public:
  const char* name() const override { return "conv_maxpool"; }
  bool absorb(Op& producer, const Op& consumer) const override {
    auto* conv = dynamic_cast<Conv2dOp*>(&producer);
    const auto* pool = dynamic_cast<const MaxPool2dOp*>(&consumer);
    return conv != nullptr && pool != nullptr && conv->absorb_pool(pool->attrs());
  }
};

}  // namespace

const AbsorbConsumerRule& conv_maxpool_rule() {
  static const ConvMaxPool rule;
  return rule;
}

}  // namespace winfer
