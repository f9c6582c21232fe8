// The one table of built-in operators. Adding an operator: write layers/<op>.{h,cpp} with a
// create_<op>(const Attrs&) factory, then add a line here.
#include "engine/src/op_registry.h"
#include "layers/activation.h"
#include "layers/adaptive_avgpool2d.h"
#include "layers/add.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/channel_shuffle.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/identity.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/mul.h"
#include "layers/pointwise_activation.h"
#include "layers/softmax.h"
#include "layers/split.h"

namespace winfer {
namespace {
int one_output(const Attrs&) { return 1; }
}  // namespace

void register_builtin_ops(OpRegistry& r) {
  //      type                  factory                     inputs  outputs
  r.add({"conv2d", create_conv2d, 1, 1, one_output});
  r.add({"batchnorm2d", create_batchnorm2d, 1, 1, one_output});
  r.add({"relu", create_relu, 1, 1, one_output});
  r.add({"relu6", create_relu6, 1, 1, one_output});
  r.add({"sigmoid", create_sigmoid, 1, 1, one_output});
  r.add({"hardsigmoid", create_hardsigmoid, 1, 1, one_output});
  r.add({"hardswish", create_hardswish, 1, 1, one_output});
  r.add({"silu", create_silu, 1, 1, one_output});
  r.add({"maxpool2d", create_maxpool2d, 1, 1, one_output});
  r.add({"avgpool2d", create_avgpool2d, 1, 1, one_output});
  r.add({"adaptive_avgpool2d", create_adaptive_avgpool2d, 1, 1, one_output});
  r.add({"add", create_add, 2, 2, one_output});
  r.add({"mul", create_mul, 2, 2, one_output});
  r.add({"concat", create_concat, 2, -1, one_output});
  r.add({"split", create_split, 1, 1, split_output_count});
  r.add({"channel_shuffle", create_channel_shuffle, 1, 1, one_output});
  r.add({"flatten", create_flatten, 1, 1, one_output});
  r.add({"linear", create_linear, 1, 1, one_output});
  r.add({"softmax", create_softmax, 1, 1, one_output});
  r.add({"dropout", create_dropout, 1, 1, one_output});
  r.add({"identity", create_identity, 1, 1, one_output});
}

OpRegistry& op_registry() {
  // Built on first use (thread-safe static initialisation); custom ops are added later.
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;  // never destroyed: models may load while the process exits
    register_builtin_ops(*r);
    return r;
  }();
  return *registry;
}

}  // namespace winfer
