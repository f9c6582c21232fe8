// The fusion rules, one per file in this folder (each file's comment states its pattern, its
// conditions and why). The driver (engine/src/fusion.cpp) lists them in the order it tries them.
#pragma once

#include "engine/src/rewrites/rewrite_rule.h"

namespace winfer {

// conv2d <- batchnorm2d: folded into the weights and bias.
const AbsorbConsumerRule& conv_batchnorm_rule();
// conv2d / add / linear / batchnorm2d <- relu / relu6: the layer's kernel applies it.
const AbsorbConsumerRule& activation_epilogue_rule();
// conv2d <- sigmoid / hardsigmoid / hardswish / silu: the conv's kernel applies it after its store.
const AbsorbConsumerRule& conv_pointwise_rule();
// conv2d <- maxpool2d: pooled band by band, the convolution's output never stored.
const AbsorbConsumerRule& conv_maxpool_rule();
// conv2d (not depthwise) <- grouped conv2d (depthwise or not): the pair run band by band.
const AbsorbConsumerRule& pointwise_depthwise_rule();
// conv2d <- add of its output and a tensor ready before it: the residual (ResNet shortcut).
const RewriteRule& conv_add_rule();
// mul (a pooled channel scale) -> conv2d: the convolution scales its input (squeeze-and-excitation).
const RewriteRule& channel_scale_conv_rule();
// channel_shuffle <- split: the pieces written straight from the shuffle's input (ShuffleNetV2).
const RewriteRule& shuffle_split_rule();

}  // namespace winfer
