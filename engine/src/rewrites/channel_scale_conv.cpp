// channel_scale_conv: mul (a channel scale) -> conv2d, squeeze-and-excitation's product and the
// convolution after it (EfficientNet's 1x1 projections, RegNetY's f.c). The convolution takes
// the mul's inputs, x and the scale s [N, C, 1, 1], and computes conv(x * s) itself
// (Conv2dOp::absorb_input_scale): its kernel folds s into a copy of its packed weights, image by
// image, so that the product's pass over x (a read and a write of the block's widest tensor) is
// gone; where the session's shape makes the weights too large for that, it scales a copy of x as
// the mul did. EfficientNet-B0's products took 3.5% of its time at batch 8 on 1 thread, 0.55 of
// 6.6 ms at batch 1 on 2 (docs/PERFORMANCE.md, session 39).
//
// Pattern: a mul (two inputs: x, s) whose output only the convolution reads, as its only input
// (only_reader); node n, the mul, becomes the convolution (it comes later in the order, and its
// only input is ready where the mul was), which then absorbs its own batch norm, activation and
// add as usual.
// Conditions:
// - s is a channel scale for every input size: produced by a chain of one-input layers whose
//   outputs are 1x1 (at the model's declared shape) from an adaptive_avgpool2d with a 1x1
//   output, with x's channels; x is larger than 1x1 (else the mul could be a same-shape product);
// - at the declared shape, an image's x is at least kChannelScaleFoldRatio times as large as the
//   convolution's weights, so that its kernel folds the scale into them (elsewhere the product
//   stays a layer: it runs in place, where the kernel's copy of x would be new memory);
// - the convolution is bare (Conv2dOp::absorb_input_scale); it later refuses a pooling or a
//   grouped convolution to absorb (their band schedules scale nothing).
#include "engine/src/rewrites/rules.h"
#include "layers/conv2d.h"
#include "layers/mul.h"

namespace winfer {
namespace {

// Whether tensor s is a global pooling's [N, channels, 1, 1], or one-input layers' 1x1 outputs
// computed from one (so that its shape does not depend on the input's size).
bool is_pooled_scale(const Graph& graph, int s, int64_t channels) {
  const Shape& shape = graph.tensors[s].shape;
  if (shape.rank() != 4 || shape.c() != channels) return false;
  constexpr int kMaxChainLength = 16;  // squeeze-and-excitation's: pool, conv, act, conv, act
  for (int step = 0; step < kMaxChainLength; ++step) {
    const Shape& here = graph.tensors[s].shape;
    if (here.rank() != 4 || here.h() != 1 || here.w() != 1) return false;
    const int producer = graph.tensors[s].producer;
    if (producer < 0) return false;  // the graph input
    const GraphNode& node = graph.nodes[producer];
    if (node.type == "adaptive_avgpool2d") return true;
    if (node.inputs.size() != 1) return false;
    s = node.inputs[0];
  }
  return false;
}

class ChannelScaleConv : public RewriteRule {
 public:
  const char* name() const override { return "channel_scale_conv"; }
  bool apply(Graph& graph, int n) const override {
    GraphNode& node = graph.nodes[n];
    if (dynamic_cast<const MulOp*>(node.op.get()) == nullptr || node.inputs.size() != 2) return false;
    const int reader = only_reader(graph, n);
    if (reader < 0 || graph.nodes[reader].inputs.size() != 1) return false;
    auto* conv = dynamic_cast<Conv2dOp*>(graph.nodes[reader].op.get());
    const int x = node.inputs[0], s = node.inputs[1];
    if (conv == nullptr || x == s) return false;
    const Shape& x_shape = graph.tensors[x].shape;
    if (x_shape.rank() != 4 || x_shape.h() * x_shape.w() <= 1 || !is_pooled_scale(graph, s, x_shape.c())) return false;
    if (conv->param_count() * kChannelScaleFoldRatio > x_shape.c() * x_shape.h() * x_shape.w()) return false;
    if (!conv->absorb_input_scale()) return false;
    // Node n becomes the convolution, with the mul's inputs and its own outputs; the mul is
    // recorded as fused into it (no parameters).
    absorb_producer(graph, n, reader);
    return true;
  }
};

}  // namespace

const RewriteRule& channel_scale_conv_rule() {
  static const ChannelScaleConv rule;
  return rule;
}

}  // namespace winfer
