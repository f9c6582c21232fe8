// conv_add: conv2d <- add, a ResNet shortcut. The add's other operand r becomes the
// convolution's second input, the residual, added in its epilogue before the activation:
// act(conv(x) + bias + r). The add's own activation (it has none yet: the pass has not reached
// the add) becomes the convolution's, and a relu after the add is folded next
// (activation_epilogue), so that ResNet's conv <- bn <- add <- relu is one node. The residual
// lives until the convolution's step; the convolution's output never takes over its storage
// unless the algorithm adds it element by element in its store (Kernel::in_place_input).
//
// Pattern: an add (two inputs) alone reads the convolution's only output, which is not a graph
// output (only_reader); r is the add's other input.
// Conditions:
// - r is produced before the convolution (or is the graph input), so that the fused node keeps
//   its place in the topological order with r ready. Of an add's two producers, the one that
//   runs last absorbs it: in a ResNet downsampling block, the shortcut's 1x1 convolution when
//   the file lists it after the main branch;
// - r is not the convolution's own output (add(y, y));
// - the convolution has no activation yet (act(conv(x)) + r is not act(conv(x) + r)), no
//   residual, no pooling and no absorbed depthwise convolution (their band schedules add no
//   residual): Conv2dOp::add_residual refuses these.
// A batch norm after the fused add is not folded (conv_batchnorm: it would scale r too).
#include "engine/src/rewrites/rules.h"
#include "layers/add.h"
#include "layers/conv2d.h"

namespace winfer {
namespace {

class ConvAdd : public RewriteRule {
 public:
  const char* name() const override { return "conv_add"; }
  bool apply(Graph& graph, int n) const override {
    auto* conv = dynamic_cast<Conv2dOp*>(graph.nodes[n].op.get());
    const int add = only_reader(graph, n);
    if (conv == nullptr || add < 0 || graph.nodes[add].inputs.size() != 2) return false;
    const auto* sum = dynamic_cast<const AddOp*>(graph.nodes[add].op.get());
    const std::vector<int>& in = graph.nodes[add].inputs;
    const int mine = graph.nodes[n].outputs[0];
    const int residual = in[0] == mine ? in[1] : in[0];
    if (sum == nullptr || residual == mine || graph.tensors[residual].producer >= n) return false;
    if (!conv->add_residual(sum->activation())) return false;
    graph.nodes[n].inputs.push_back(residual);
    absorb_node(graph, n, add);
    return true;
  }
};

}  // namespace

const RewriteRule& conv_add_rule() {
  static const ConvAdd rule;
  return rule;
}

}  // namespace winfer
