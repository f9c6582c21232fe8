// pointwise_depthwise: conv2d (not depthwise) <- grouped conv2d (depthwise or not), ShuffleNet's
// and MobileNet's pointwise -> depthwise pair and RegNet's 1x1 -> grouped 3x3, computed band by band
// (kernels/cpu/conv_then_conv.h): the first convolution's rows into a buffer in the workspace, the depthwise
// convolution reading them from there, so that the pair's largest tensor (the pointwise output) is never stored. The op
// keeps a copy of the depthwise convolution (Conv2dOp::then()); its batch norm and activation, later in the file, go to
// it (conv_batchnorm, activation_epilogue: Conv2dOp::output_stage).
//
// Pattern: a grouped conv2d (groups > 1; depthwise: groups == in == out channels) alone reads the
// output of a conv2d that is not depthwise (AbsorbConsumerRule), after that one's batch norm and activation.
// Conditions:
// - the depthwise padding along H at most its dilated kernel extent less one (PyTorch's usual
//   "same" padding is half of that): the bands need every window of the depthwise convolution to
//   read at least one row of the first one's output, and a window of padding only has no band;
// - the first convolution has no residual, pooling or absorbed convolution, and the depthwise
//   one is the bare layer (Conv2dOp::absorb_grouped refuses the rest: the band schedule adds
//   no residual and pools nothing). A later add, pooling or convolution stays a node of its own.
//   The first may have a pointwise function (conv_pointwise: EfficientNet's expand 1x1 + SiLU,
//   MobileNetV3's + Hardswish): the bands apply it to their new rows.
// - Not a dense second convolution (groups == 1): it reads every channel of many rows per output
//   row, and ResNet's 1x1 -> 3x3 has no large tensor to save. RegNetY-400MF's grouped pairs at
//   batch 8: 4% faster on 1 thread, 9% on 2 (the 112x112 and 56x56 stages gain, whose pointwise
//   output is 19 and 9.6 MB), and the arena 35.4 -> 21.4 MiB (docs/PERFORMANCE.md, session 24).
#include "engine/src/rewrites/rules.h"
#include "layers/conv2d.h"

namespace winfer {
namespace {

class PointwiseDepthwise : public AbsorbConsumerRule {
 public:
  const char* name() const override { return "pointwise_depthwise"; }
  bool absorb(Op& producer, const Op& consumer) const override {
    auto* first = dynamic_cast<Conv2dOp*>(&producer);
    const auto* second = dynamic_cast<const Conv2dOp*>(&consumer);
    if (first == nullptr || second == nullptr) return false;
    const Conv2dAttrs& a = second->attrs();
    const int64_t extent = (a.kernel_h - 1) * a.dilation_h;
    return a.groups > 1 && !first->attrs().depthwise() && a.in_channels == first->attrs().out_channels &&
           a.padding.top <= extent && a.padding.bottom <= extent && first->absorb_grouped(*second);
  }
};

}  // namespace

const AbsorbConsumerRule& pointwise_depthwise_rule() {
  static const PointwiseDepthwise rule;
  return rule;
}

}  // namespace winfer
