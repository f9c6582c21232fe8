// conv_pointwise: conv2d <- sigmoid / hardsigmoid / hardswish / silu, the element-wise
// activation applied by the convolution's kernel (Conv2dOp::set_pointwise) in one pass over its
// output right after the convolution, on the CPU (every algorithm; pixel by pixel into a concat's
// channel slice) and on CUDA (cuda::pointwise_activation). Same function, same bits as the layer.
// It saves a layer, not time: applying the function to each im2win/indirect tile while it is in
// L1 was measured no faster (up to 15-28% slower on wide 1x1 layers), since the functions are
// bound by their arithmetic (a division per element), not by memory (docs/PERFORMANCE.md,
// "Pointwise activations fused into the convolution"). The rule is where a cheaper in-register
// version would plug in.
//
// Pattern: a pointwise activation alone reads the conv's output, which is not a graph output
// (AbsorbConsumerRule; the fused op takes the activation's output name).
// Conditions (Conv2dOp::set_pointwise refuses the rest):
// - it goes to the convolution's output stage (Conv2dOp::output_stage): the absorbed grouped
//   convolution of a pair where there is one (EfficientNet's depthwise + SiLU after its expand
//   1x1 + SiLU: the pair applies each stage's function to each band, kernels/cpu/conv_then_conv.h);
// - that stage has no activation, residual or pooling (their epilogues and band schedules do not
//   apply it), and no pointwise function yet;
// - nothing but a grouped convolution (pointwise_depthwise) is fused after it: batch norm, relu,
//   add and pooling refuse a convolution that has one (they would have to apply after it).
// WINFER_NO_CONV_POINTWISE=1 in the environment turns the rule off: the separate layers timed
// against the fused ones with one binary (docs/PERFORMANCE.md).
#include <cstdlib>
#include <cstring>

#include "engine/src/rewrites/rules.h"
#include "layers/conv2d.h"
#include "layers/pointwise_activation.h"

namespace winfer {
namespace {

class ConvPointwise : public AbsorbConsumerRule {
 public:
  const char* name() const override { return "conv_pointwise"; }
  bool absorb(Op& producer, const Op& consumer) const override {
    auto* conv = dynamic_cast<Conv2dOp*>(&producer);
    const auto* pointwise = dynamic_cast<const PointwiseActivationOp*>(&consumer);
    if (conv == nullptr || pointwise == nullptr) return false;
    const char* off = std::getenv("WINFER_NO_CONV_POINTWISE");
    if (off != nullptr && std::strcmp(off, "1") == 0) return false;
    return conv->output_stage().set_pointwise(pointwise->fn());
  }
};

}  // namespace

const AbsorbConsumerRule& conv_pointwise_rule() {
  static const ConvPointwise rule;
  return rule;
}

}  // namespace winfer
