// The op checker, in the spirit of ncnn's test_layer: one op (a case: its attributes and input
// shapes) is written as a tiny model with inline random weights, loaded and run through the
// public API only (Model::load, Session with a device and a convolution algorithm), and every
// output is compared with a float64 reference from layer_reference.h. Header-only so that the
// CPU tests (tests/engine/op_check_test.cpp) and the CUDA tests (tests/engine_cuda/
// op_check_test.cpp, built against the host emulator and natively) share it without either
// binary linking the other's sources.
//
//   OpCheck("conv2d").attr("in_channels", 5).attr("out_channels", 4).attr("kernel_size", 3)
//       .attr("padding", 1).input({3, 5, 7, 9})
//
// The model: input `x` -> a feeding layer -> the op (-> its outputs). The feeding layer is an
// identity (one input) or a split along the channels (several inputs: the graph has one input,
// the op's inputs are its pieces); both are exact copies. Because of it the op's output buffer
// is dead, and poisoned with NaN (SessionOptions::poison_unused_memory), before the op runs: an
// element the kernel never writes cannot pass.
//
// Tolerance: float32 rounding only, relative to the accumulated magnitude. A sum of K terms
// computed in float32 in any order is within K*u*sum|terms| of the exact sum (u = 2^-24; Higham,
// "Accuracy and Stability of Numerical Algorithms", the gamma_K bound), so each output may
// differ from the float64 reference by factor * u * magnitude, where magnitude is the reference
// evaluated on |x|, |w|, |b| (= sum|terms|, layer_reference.h) and factor the number of
// roundings on the way (K for a sum of K terms, plus the bias and the final rounding). A
// missing, extra or wrong term moves an output by about magnitude/K, far beyond K*u*magnitude
// for the K < 4096 of these cases. Ops that only move or select data (identity, flatten,
// concat, split, shuffle, relu, maxpool) have magnitude 0: bit-exact.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/test_files.h"
#include "engine/layer_reference.h"
#include "winfer/model.h"
#include "winfer/session.h"
#include "winfer/shape.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {
namespace op_check {

using layer_test::HostTensor;
using layer_test::RefTensor;

constexpr double kUnitRoundoff = 1.0 / (1 << 24);  // float32, round to nearest

// ---- a case -----------------------------------------------------------------------------

class OpCheck {
 public:
  explicit OpCheck(std::string type) : type_(std::move(type)) {}

  OpCheck& attr(const std::string& key, int64_t v) { return set(key, std::to_string(v), {v}); }
  OpCheck& attr(const std::string& key, int v) { return attr(key, static_cast<int64_t>(v)); }
  OpCheck& attr(const std::string& key, std::initializer_list<int64_t> values) {
    std::string text = "[";
    for (int64_t v : values) text += (text.size() > 1 ? ", " : "") + std::to_string(v);
    return set(key, text + "]", values);
  }
  OpCheck& attr(const std::string& key, bool v) { return set(key, v ? "true" : "false", {v ? 1 : 0}); }
  // A float attribute, written as given ("0.001").
  OpCheck& attr(const std::string& key, const char* number) {
    attrs_.push_back({key, number, {}});
    return *this;
  }
  // One input of the op (NCHW or [N, F]); ops with several inputs get several.
  OpCheck& input(const Shape& shape) {
    inputs_.push_back(shape);
    return *this;
  }
  // Input data uniform in offset +- scale (never near offset: layer_reference.h).
  OpCheck& data(float scale, float offset = 0.f) {
    scale_ = scale;
    offset_ = offset;
    return *this;
  }

  const std::string& type() const { return type_; }
  const std::vector<Shape>& inputs() const { return inputs_; }
  float scale() const { return scale_; }
  float offset() const { return offset_; }

  bool has(const std::string& key) const { return find(key) != nullptr; }
  // An int attribute (the first of a list), or `fallback` when absent.
  int64_t get(const std::string& key, int64_t fallback) const {
    const Attr* a = find(key);
    return a && !a->ints.empty() ? a->ints[0] : fallback;
  }
  // Every value of an int-or-list attribute: {v} for an int.
  std::vector<int64_t> get_list(const std::string& key, std::vector<int64_t> fallback) const {
    const Attr* a = find(key);
    return a && !a->ints.empty() ? a->ints : fallback;
  }
  double get_float(const std::string& key, double fallback) const {
    const Attr* a = find(key);
    return a ? std::stod(a->yaml) : fallback;
  }

  // "conv2d {kernel_size: 3, padding: 1} on [3,5,7,9]" for messages.
  std::string describe() const {
    std::string text = type_ + " {" + yaml_attrs() + "} on";
    for (const Shape& s : inputs_) text += " " + s.to_string();
    if (scale_ != 1.f || offset_ != 0.f) {
      text += " data " + std::to_string(offset_) + " +- " + std::to_string(scale_);
    }
    return text;
  }
  std::string yaml_attrs() const {
    std::string text;
    for (const Attr& a : attrs_) text += (text.empty() ? "" : ", ") + a.key + ": " + a.yaml;
    return text;
  }

 private:
  struct Attr {
    std::string key, yaml;
    std::vector<int64_t> ints;
  };
  OpCheck& set(const std::string& key, std::string yaml, std::vector<int64_t> ints) {
    attrs_.push_back({key, std::move(yaml), std::move(ints)});
    return *this;
  }
  const Attr* find(const std::string& key) const {
    for (const Attr& a : attrs_)
      if (a.key == key) return &a;
    return nullptr;
  }

  std::string type_;
  std::vector<Attr> attrs_;
  std::vector<Shape> inputs_;
  float scale_ = 1.f, offset_ = 0.f;
};

// ---- what each op type computes ----------------------------------------------------------

struct Param {
  std::string name;  // "weight", "bias", ...
  HostTensor value;
};

// The reference outputs, and for each the magnitude its float32 error scales with.
struct Expected {
  std::vector<RefTensor> outputs, magnitudes;
  double factor = 0;  // allowed error = factor * u * magnitude
};

struct OpSpec {
  bool conv = false;  // run once per convolution algorithm
  std::function<std::vector<Param>(const OpCheck&)> params;
  std::function<Expected(const OpCheck&, const std::vector<HostTensor>&, const std::vector<Param>&)> reference;
};

inline const HostTensor* param(const std::vector<Param>& params, const std::string& name) {
  for (const Param& p : params)
    if (p.name == name) return &p.value;
  return nullptr;
}

inline HostTensor absolute(HostTensor t) {
  for (float& v : t.data) v = std::fabs(v);
  return t;
}

inline RefTensor zeros_like(const RefTensor& t) { return {t.shape, std::vector<double>(t.data.size(), 0.0)}; }

// Data movement and selection: the exact values, nothing may differ.
inline Expected exact(std::vector<RefTensor> outputs) {
  Expected e;
  for (const RefTensor& t : outputs) e.magnitudes.push_back(zeros_like(t));
  e.outputs = std::move(outputs);
  return e;
}

inline std::pair<int64_t, int64_t> pair_of(const OpCheck& c, const std::string& key, int64_t fallback) {
  const std::vector<int64_t> v = c.get_list(key, {fallback});
  return {v[0], v.size() > 1 ? v[1] : v[0]};
}

inline layer_test::ConvCase conv_case(const OpCheck& c) {
  const Shape& s = c.inputs()[0];
  layer_test::ConvCase k{};
  k.name = "op check";
  k.n = s.n(), k.c = s.c(), k.h = s.h(), k.w = s.w();
  k.co = c.get("out_channels", 0);
  std::tie(k.kh, k.kw) = pair_of(c, "kernel_size", 1);
  std::tie(k.sh, k.sw) = pair_of(c, "stride", 1);
  std::tie(k.dh, k.dw) = pair_of(c, "dilation", 1);
  const std::vector<int64_t> pad = c.get_list("padding", {0});
  if (pad.size() == 4) {
    k.pt = pad[0], k.pl = pad[1], k.pb = pad[2], k.pr = pad[3];
  } else {
    k.pt = k.pb = pad[0];
    k.pl = k.pr = pad.size() > 1 ? pad[1] : pad[0];
  }
  k.groups = c.get("groups", 1);
  k.bias = c.get("bias", 1) != 0;
  return k;
}

inline layer_test::PoolCase pool_case(const OpCheck& c) {
  layer_test::PoolCase k{};
  k.name = "op check";
  k.input = c.inputs()[0];
  std::tie(k.kh, k.kw) = pair_of(c, "kernel_size", 1);
  const std::vector<int64_t> stride = c.get_list("stride", {k.kh, k.kw});
  k.sh = stride[0], k.sw = stride.size() > 1 ? stride[1] : stride[0];
  std::tie(k.ph, k.pw) = pair_of(c, "padding", 0);
  std::tie(k.dh, k.dw) = pair_of(c, "dilation", 1);
  k.ceil_mode = c.get("ceil_mode", 0) != 0;
  return k;
}

// Channel counts of split's pieces: `sizes`, or torch.chunk's ceil(C/chunks) each.
inline std::vector<int64_t> split_sizes(const OpCheck& c) {
  if (c.has("sizes")) return c.get_list("sizes", {});
  const int64_t channels = c.inputs()[0][1], chunks = c.get("chunks", 1);
  const int64_t each = (channels + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t left = channels; left > 0; left -= each) sizes.push_back(std::min(each, left));
  return sizes;
}

// Softmax's error per output, relative to it: the exponent's argument x - max rounded (R*u for
// R = the row's largest |x - max|), exp itself (a few ulps; the GPU's fast exp about 1.16*R
// ulps), the C-term sum and the division. So magnitude = y * (C + 4 + 3R), factor 1.
inline RefTensor softmax_magnitude(const HostTensor& x, const RefTensor& y) {
  const layer_test::ChannelView v(x.shape);
  RefTensor m = y;
  for (int64_t r = 0; r < v.rows; ++r) {
    double max = -INFINITY, range = 0;
    for (int64_t c = 0; c < v.channels; ++c) max = std::max(max, double(x.data[v.index(r, c)]));
    for (int64_t c = 0; c < v.channels; ++c) range = std::max(range, max - x.data[v.index(r, c)]);
    for (int64_t c = 0; c < v.channels; ++c) m.data[v.index(r, c)] *= double(v.channels) + 4 + 3 * range;
  }
  return m;
}

inline std::vector<Param> no_params(const OpCheck&) { return {}; }

inline Expected conv_expected(const OpCheck& c, const std::vector<HostTensor>& in, const std::vector<Param>& p) {
  const layer_test::ConvCase k = conv_case(c);
  const HostTensor* bias = param(p, "bias");
  const HostTensor abs_w = absolute(*param(p, "weight"));
  const HostTensor abs_b = bias ? absolute(*bias) : HostTensor{};
  Expected e;
  e.outputs = {layer_test::conv_reference(k, in[0], *param(p, "weight"), bias)};
  e.magnitudes = {layer_test::conv_reference(k, absolute(in[0]), abs_w, bias ? &abs_b : nullptr)};
  e.factor = double(k.c / k.groups * k.kh * k.kw) + 2;  // the products' sum, the bias, the store
  return e;
}

inline Expected bn_expected(const OpCheck& c, const std::vector<HostTensor>& in, const std::vector<Param>& p) {
  const double eps = c.get_float("eps", 1e-5);
  const HostTensor &gamma = *param(p, "weight"), &beta = *param(p, "bias");
  const HostTensor &mean = *param(p, "running_mean"), &var = *param(p, "running_var");
  HostTensor minus_abs_mean = absolute(mean);
  for (float& v : minus_abs_mean.data) v = -v;
  Expected e;
  e.outputs = {layer_test::bn_reference(layer_test::to_ref(in[0]), gamma, beta, mean, var, eps)};
  // (|x| + |mean|) * |gamma| / sqrt(var + eps) + |beta|.
  e.magnitudes = {layer_test::bn_reference(layer_test::to_ref(absolute(in[0])), absolute(gamma), absolute(beta),
                                           minus_abs_mean, var, eps)};
  e.factor = 8;  // scale and shift folded in float (sqrt, division, product, difference), then x*s + t
  return e;
}

inline Expected pool_average_expected(const OpCheck& c, const std::vector<HostTensor>& in, bool adaptive) {
  Expected e;
  if (adaptive) {
    const auto size = pair_of(c, "output_size", 1);
    e.outputs = {layer_test::adaptive_reference(in[0], size.first, size.second)};
    e.magnitudes = {layer_test::adaptive_reference(absolute(in[0]), size.first, size.second)};
    // The largest bin: ceil(H/oh) + 1 rows by ceil(W/ow) + 1 columns at most.
    const Shape& s = in[0].shape;
    e.factor = double((s.h() / size.first + 2) * (s.w() / size.second + 2)) + 2;
  } else {
    const layer_test::PoolCase k = pool_case(c);
    const bool include_pad = c.get("count_include_pad", 1) != 0;
    e.outputs = {layer_test::avgpool_reference(k, include_pad, in[0])};
    e.magnitudes = {layer_test::avgpool_reference(k, include_pad, absolute(in[0]))};
    e.factor = double(k.kh * k.kw) + 2;  // the window's sum, the division, the store
  }
  return e;
}

inline Expected linear_expected(const OpCheck&, const std::vector<HostTensor>& in, const std::vector<Param>& p) {
  const HostTensor* bias = param(p, "bias");
  const HostTensor abs_b = bias ? absolute(*bias) : HostTensor{};
  Expected e;
  e.outputs = {layer_test::linear_reference(in[0], *param(p, "weight"), bias)};
  e.magnitudes = {
      layer_test::linear_reference(absolute(in[0]), absolute(*param(p, "weight")), bias ? &abs_b : nullptr)};
  e.factor = double(in[0].shape[1]) + 2;
  return e;
}

inline Expected add_expected(const std::vector<HostTensor>& in) {
  Expected e;
  RefTensor sum = layer_test::to_ref(in[0]), magnitude = layer_test::to_ref(absolute(in[0]));
  for (size_t i = 0; i < sum.data.size(); ++i) {
    sum.data[i] += in[1].data[i];
    magnitude.data[i] += std::fabs(in[1].data[i]);
  }
  e.outputs = {sum};
  e.magnitudes = {magnitude};
  e.factor = 1;  // one rounding
  return e;
}

// sigmoid/silu: exp within a few ulps (the CPU's polynomial 2.4 measured; CUDA's expf 2), then
// 1 + e, the division (and silu's x / ...): relative to |y|, the error of e shrinks by
// e / (1 + e) <= 1. hardsigmoid/hardswish: x + 3 rounded (relative to |x| + 3), the division by
// 6 (and hardswish's product). So magnitude = |y| for the smooth ones, (|x| + 3) / 6 (times |x|)
// for the hard ones, where the clamps are exact.
inline Expected pointwise_expected(const std::string& type, const std::vector<HostTensor>& in) {
  Expected e;
  RefTensor y = layer_test::to_ref(in[0]), magnitude = y;
  const bool hard = type == "hardsigmoid" || type == "hardswish";
  for (size_t i = 0; i < y.data.size(); ++i) {
    const double x = in[0].data[i];
    y.data[i] = layer_test::pointwise_reference(type, x);
    const double scale = (std::fabs(x) + 3) / 6;
    magnitude.data[i] = !hard ? std::fabs(y.data[i]) : (type == "hardswish" ? std::fabs(x) * scale : scale);
  }
  e.outputs = {y};
  e.magnitudes = {magnitude};
  e.factor = hard ? 4 : 8;
  return e;
}

inline Expected mul_expected(const std::vector<HostTensor>& in) {
  Expected e;
  e.outputs = {layer_test::mul_reference(in[0], in[1])};
  e.magnitudes = {e.outputs[0]};
  for (double& v : e.magnitudes[0].data) v = std::fabs(v);
  e.factor = 1;  // one rounding
  return e;
}

inline Expected split_expected(const OpCheck& c, const std::vector<HostTensor>& in) {
  std::vector<RefTensor> pieces;
  int64_t begin = 0;
  for (int64_t size : split_sizes(c)) {
    pieces.push_back(layer_test::channel_slice(in[0], begin, size));
    begin += size;
  }
  return exact(pieces);
}

inline Expected flatten_expected(const std::vector<HostTensor>& in) {
  // The logical data is NCHW already: flattening [N, C, H, W] from dim 1 only renames the shape.
  const Shape& s = in[0].shape;
  RefTensor y = layer_test::to_ref(in[0]);
  if (s.rank() == 4) y.shape = Shape{s.n(), s.c() * s.h() * s.w()};
  return exact({y});
}

inline Expected softmax_expected(const std::vector<HostTensor>& in) {
  Expected e;
  e.outputs = {layer_test::softmax_reference(in[0])};
  e.magnitudes = {softmax_magnitude(in[0], e.outputs[0])};
  e.factor = 1;
  return e;
}

// Random parameters of the right shapes (batch norm's variance positive, its scale near 1).
inline std::vector<Param> conv_params(const OpCheck& c) {
  const layer_test::ConvCase k = conv_case(c);
  std::vector<Param> p = {{"weight", layer_test::random_tensor(Shape{k.co, k.c / k.groups, k.kh, k.kw})}};
  if (k.bias) p.push_back({"bias", layer_test::random_tensor(Shape{k.co})});
  return p;
}

inline std::vector<Param> bn_params(const OpCheck& c) {
  const Shape channels{c.get("num_features", 0)};
  return {{"weight", layer_test::random_tensor(channels, 0.5f, 1.f)},
          {"bias", layer_test::random_tensor(channels)},
          {"running_mean", layer_test::random_tensor(channels)},
          {"running_var", layer_test::random_tensor(channels, 0.75f, 1.25f)}};
}

inline std::vector<Param> linear_params(const OpCheck& c) {
  const int64_t in = c.get("in_features", 0), out = c.get("out_features", 0);
  std::vector<Param> p = {{"weight", layer_test::random_tensor(Shape{out, in})}};
  if (c.get("bias", 1) != 0) p.push_back({"bias", layer_test::random_tensor(Shape{out})});
  return p;
}

// Every op type the checker knows how to check. A type missing here has no reference: its
// cases fail, and the registry test names it.
inline const std::map<std::string, OpSpec>& op_specs() {
  using In = const std::vector<HostTensor>&;
  using Params = const std::vector<Param>&;
  static const std::map<std::string, OpSpec> specs = {
      {"conv2d", {true, conv_params, conv_expected}},
      {"batchnorm2d", {false, bn_params, bn_expected}},
      {"linear", {false, linear_params, linear_expected}},
      {"relu",
       {false, no_params,
        [](const OpCheck&, In in, Params) {
          return exact({layer_test::relu6_reference(layer_test::to_ref(in[0]), false)});
        }}},
      {"relu6",
       {false, no_params,
        [](const OpCheck&, In in, Params) {
          return exact({layer_test::relu6_reference(layer_test::to_ref(in[0]), true)});
        }}},
      {"sigmoid", {false, no_params, [](const OpCheck& c, In in, Params) { return pointwise_expected(c.type(), in); }}},
      {"hardsigmoid",
       {false, no_params, [](const OpCheck& c, In in, Params) { return pointwise_expected(c.type(), in); }}},
      {"hardswish",
       {false, no_params, [](const OpCheck& c, In in, Params) { return pointwise_expected(c.type(), in); }}},
      {"silu", {false, no_params, [](const OpCheck& c, In in, Params) { return pointwise_expected(c.type(), in); }}},
      {"maxpool2d",
       {false, no_params,
        [](const OpCheck& c, In in, Params) { return exact({layer_test::maxpool_reference(pool_case(c), in[0])}); }}},
      {"avgpool2d",
       {false, no_params, [](const OpCheck& c, In in, Params) { return pool_average_expected(c, in, false); }}},
      {"adaptive_avgpool2d",
       {false, no_params, [](const OpCheck& c, In in, Params) { return pool_average_expected(c, in, true); }}},
      {"add", {false, no_params, [](const OpCheck&, In in, Params) { return add_expected(in); }}},
      {"mul", {false, no_params, [](const OpCheck&, In in, Params) { return mul_expected(in); }}},
      {"concat",
       {false, no_params, [](const OpCheck&, In in, Params) { return exact({layer_test::concat_reference(in)}); }}},
      {"split", {false, no_params, [](const OpCheck& c, In in, Params) { return split_expected(c, in); }}},
      {"channel_shuffle",
       {false, no_params,
        [](const OpCheck& c, In in, Params) {
          return exact({layer_test::shuffle_reference(in[0], c.get("groups", 1))});
        }}},
      {"flatten", {false, no_params, [](const OpCheck&, In in, Params) { return flatten_expected(in); }}},
      {"softmax", {false, no_params, [](const OpCheck&, In in, Params) { return softmax_expected(in); }}},
      {"dropout", {false, no_params, [](const OpCheck&, In in, Params) { return exact({layer_test::to_ref(in[0])}); }}},
      {"identity",
       {false, no_params, [](const OpCheck&, In in, Params) { return exact({layer_test::to_ref(in[0])}); }}},
  };
  return specs;
}

// ---- the tiny model -----------------------------------------------------------------------

inline std::string yaml_floats(const std::vector<float>& values) {
  std::string text = "[";
  char buffer[32];
  for (size_t i = 0; i < values.size(); ++i) {
    std::snprintf(buffer, sizeof buffer, "%.9g", double(values[i]));  // 9 digits: float32 round-trips
    text += (i ? ", " : "") + std::string(buffer);
  }
  return text + "]";
}

inline std::string yaml_shape(const Shape& s) {
  std::string text = "[";
  for (int d = 0; d < s.rank(); ++d) text += (d ? ", " : "") + std::to_string(s[d]);
  return text + "]";
}

// Whether the op's input i is a [N, C, 1, 1] tensor against a first input with more pixels (mul's
// channel scale): the graph input holds its values repeated over the first's H and W, and a
// max pooling over the whole window (exact: all its values are equal) brings them back to 1x1.
inline bool pooled_feed(const std::vector<Shape>& inputs, size_t i) {
  const Shape &first = inputs[0], &s = inputs[i];
  return i > 0 && s.rank() == 4 && first.rank() == 4 && s.h() == 1 && s.w() == 1 && first.h() * first.w() > 1;
}

// The graph input: the op's inputs side by side along dim 1 (what the feeding split cuts apart).
inline Shape graph_input_shape(const std::vector<Shape>& inputs) {
  Shape s = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) s[1] += inputs[i][1];
  return s;
}

inline std::string model_yaml(const OpCheck& c, const std::vector<Param>& params, size_t outputs) {
  const std::vector<Shape>& in = c.inputs();
  std::string feed = "  - {name: feed, op: identity}\n", op_inputs = "input: feed";
  if (in.size() > 1) {
    std::string sizes, names;
    for (size_t i = 0; i < in.size(); ++i) {
      sizes += (i ? ", " : "") + std::to_string(in[i][1]);
      names +=
          (i ? ", " : "") + (pooled_feed(in, i) ? "feed_" + std::to_string(i) : "'feed:" + std::to_string(i) + "'");
    }
    feed = "  - {name: feed, op: split, sizes: [" + sizes + "]}\n";
    for (size_t i = 0; i < in.size(); ++i) {
      if (!pooled_feed(in, i)) continue;
      feed += "  - {name: feed_" + std::to_string(i) + ", op: maxpool2d, input: 'feed:" + std::to_string(i) +
              "', kernel_size: [" + std::to_string(in[0].h()) + ", " + std::to_string(in[0].w()) + "]}\n";
    }
    op_inputs = "inputs: [" + names + "]";
  }
  // A layer with several outputs names them "op:0", "op:1", ...; with one (a split into one
  // piece too, whatever docs/MODEL_FORMAT.md says of split) it is "op".
  std::string output_names = "op";
  if (outputs > 1) {
    output_names.clear();
    for (size_t i = 0; i < outputs; ++i)
      output_names += (i ? ", " : "") + std::string("'op:") + std::to_string(i) + "'";
  }
  const std::string attrs = c.yaml_attrs();
  std::string yaml = "format: winfer/1\nname: op_check\ninput: {name: x, shape: " + yaml_shape(graph_input_shape(in)) +
                     "}\noutputs: [" + output_names + "]\nlayers:\n" + feed + "  - {name: op, op: " + c.type() + ", " +
                     op_inputs + (attrs.empty() ? "" : ", " + attrs) + "}\n";
  if (!params.empty()) {
    yaml += "tensors:\n";
    for (const Param& p : params) {
      yaml +=
          "  op." + p.name + ": {shape: " + yaml_shape(p.value.shape) + ", data: " + yaml_floats(p.value.data) + "}\n";
    }
  }
  return yaml;
}

// ---- running and comparing ---------------------------------------------------------------

// One run of the model: its status, outputs, and the kernel the op ran (Session::last_timings).
struct Run {
  Status status;
  std::vector<Tensor> outputs;
  std::string kernel;
};

// A case made ready: random inputs and parameters, the reference, the model written and loaded.
class PreparedCheck {
 public:
  explicit PreparedCheck(const OpCheck& c) : case_(c) {
    auto spec = op_specs().find(c.type());
    REQUIRE_MESSAGE(spec != op_specs().end(), "op checker: no reference for op type '", c.type(), "'");
    REQUIRE_MESSAGE(!c.inputs().empty(), c.describe(), ": no input shape");
    spec_ = &spec->second;
    for (const Shape& s : c.inputs()) inputs_.push_back(layer_test::random_tensor(s, c.scale(), c.offset()));
    params_ = spec_->params(c);
    expected_ = spec_->reference(c, inputs_, params_);
    const std::string path = dir_.file("op.yaml");
    winfer_test::write_bytes(path, model_yaml(c, params_, expected_.outputs.size()));
    auto model = Model::load(path);
    REQUIRE_MESSAGE(model.ok(), c.describe(), ": ", model.status().message());
    model_ = model.value();
    graph_input_ = graph_input();
  }

  const OpCheck& op() const { return case_; }
  bool is_conv() const { return spec_->conv; }
  // Whether a depthwise kernel must run it (groups == in_channels == out_channels).
  bool depthwise() const {
    const int64_t groups = case_.get("groups", 1);
    return is_conv() && groups > 1 && groups == case_.get("in_channels", 0) && groups == case_.get("out_channels", 0);
  }

  Run run(SessionOptions options) const {
    Run r;
    options.batch = graph_input_.shape()[0];
    auto session = Session::create(model_, options);
    if (!session.ok()) {
      r.status = session.status();
      return r;
    }
    auto outputs = session.value()->run_all(graph_input_);
    if (!outputs.ok()) {
      r.status = outputs.status();
      return r;
    }
    r.outputs = std::move(outputs).value();
    for (const LayerTiming& t : session.value()->last_timings())
      if (t.name == "op") r.kernel = t.kernel;
    return r;
  }

  // CHECKs every output of a successful run against the reference (one CHECK per output,
  // naming the worst element). Returns the largest error seen, in units of u * magnitude.
  double check(const Run& r, const std::string& how) const {
    INFO(case_.describe(), " ", how, " (kernel '", r.kernel, "')");
    REQUIRE_MESSAGE(r.status.ok(), r.status.message());
    REQUIRE(r.outputs.size() == expected_.outputs.size());
    double worst_seen = 0;
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      worst_seen = std::max(worst_seen, check_output(r.outputs[i], expected_.outputs[i], expected_.magnitudes[i], i));
    }
    return worst_seen;
  }

 private:
  Tensor graph_input() const {
    const Shape shape = graph_input_shape(case_.inputs());
    Tensor t = Tensor::allocate(shape, shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain);
    // Each input's channels go to its slice of the graph input's dim 1.
    int64_t offset = 0;
    const layer_test::ChannelView whole(shape);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const HostTensor& in = inputs_[i];
      const layer_test::ChannelView part(in.shape);
      const bool pooled = pooled_feed(case_.inputs(), i);  // [N, C, 1, 1]: repeated over H and W
      for (int64_t row = 0; row < whole.rows; ++row) {
        if (!pooled && row >= part.rows) break;
        const int64_t part_row = pooled ? row / whole.inner : row;
        for (int64_t c = 0; c < part.channels; ++c)
          t.data()[whole.index(row, offset + c)] = in.data[part.index(part_row, c)];
      }
      offset += part.channels;
    }
    return t;
  }

  // factor * u * magnitude, and where anything may differ at all (magnitude > 0) float32's
  // underflow: a result below its smallest normal number may be flushed to zero (the GPU's
  // fast exp does) or held as a subnormal with fewer digits.
  double allowed_error(double magnitude) const {
    if (magnitude == 0) return 0;
    return expected_.factor * kUnitRoundoff * magnitude + double(std::numeric_limits<float>::min());
  }

  double check_output(const Tensor& got, const RefTensor& want, const RefTensor& magnitude, size_t index) const {
    INFO("output ", index);
    REQUIRE(got.shape() == want.shape);
    REQUIRE(got.layout() != Layout::kNHWC);
    int64_t bad = 0, worst = -1;
    double worst_ratio = 0, worst_seen = 0;
    for (size_t i = 0; i < want.data.size(); ++i) {
      const double error = std::fabs(double(got.data()[i]) - want.data[i]);
      const double allowed = allowed_error(magnitude.data[i]);
      const double ratio = error == 0 ? 0 : (allowed > 0 ? error / allowed : std::numeric_limits<double>::infinity());
      if (std::isnan(error) || ratio > 1) {
        ++bad;
        if (worst < 0 || std::isnan(error) || ratio > worst_ratio) {
          worst = static_cast<int64_t>(i);
          worst_ratio = std::isnan(error) ? std::numeric_limits<double>::infinity() : ratio;
        }
      } else if (allowed > 0) {
        const double beyond_underflow = std::max(0.0, error - double(std::numeric_limits<float>::min()));
        worst_seen = std::max(worst_seen, beyond_underflow / (kUnitRoundoff * magnitude.data[i]));
      }
    }
    if (bad > 0) {
      const size_t w = static_cast<size_t>(worst);
      FAIL_CHECK(bad << " of " << want.data.size() << " elements differ; worst at "
                     << layer_test::index_text(want.shape, worst) << ": got " << got.data()[w] << ", expected "
                     << want.data[w] << ", allowed error " << allowed_error(magnitude.data[w]) << " ("
                     << expected_.factor << " u x magnitude " << magnitude.data[w] << ")");
    }
    return worst_seen;
  }

  OpCheck case_;
  const OpSpec* spec_ = nullptr;
  winfer_test::TempDir dir_;
  std::vector<HostTensor> inputs_;
  std::vector<Param> params_;
  Expected expected_;
  std::shared_ptr<const Model> model_;
  Tensor graph_input_;
};

// The kernel a convolution must run with `algorithm`: that one, depthwise for a depthwise
// layer, or a fallback whose description says why (it names the algorithm it stands in for).
inline bool expected_conv_kernel(const PreparedCheck& c, const std::string& algorithm, const std::string& kernel) {
  if (c.depthwise()) return kernel.rfind("depthwise", 0) == 0;
  return kernel.rfind(algorithm, 0) == 0 || kernel.find(algorithm) != std::string::npos;
}

// The runs of a sweep over the cases: each checked, and the largest error per op type (and
// convolution algorithm) kept in units of u * magnitude, printed at the end so that the
// tolerances' margins stay visible.
class Sweep {
 public:
  // The algorithms to run `c` with: every one of `conv_algorithms` for a convolution, else one
  // (the others never look at it).
  static std::vector<std::string> algorithms_for(const PreparedCheck& c,
                                                 const std::vector<std::string>& conv_algorithms) {
    return c.is_conv() ? conv_algorithms : std::vector<std::string>{"im2win"};
  }
  // CHECKs a run made with `algorithm`: its values, and for a convolution the kernel that ran.
  void check(const PreparedCheck& c, const Run& r, const std::string& algorithm, const std::string& where) {
    double& w = worst_[c.is_conv() ? c.op().type() + " " + algorithm : c.op().type()];
    w = std::max(w, c.check(r, where + " with " + algorithm));
    if (c.is_conv()) {
      INFO(c.op().describe(), ": requested ", algorithm, ", kernel '", r.kernel, "'");
      CHECK(expected_conv_kernel(c, algorithm, r.kernel));
    }
    ++runs_;
  }
  void count_run() { ++runs_; }
  void report(const std::string& what) const {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    for (const auto& kv : worst_) MESSAGE("largest error of ", kv.first, ": ", kv.second, " u x magnitude");
    MESSAGE(runs_, " runs ", what, " in ", seconds, " s");
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int runs_ = 0;
  std::map<std::string, double> worst_;
};

// A model whose one layer has an unknown op: loading it fails with the list of known ones.
constexpr const char* kUnknownOpModel =
    "format: winfer/1\ninput: {shape: [1, 1, 1, 1]}\nlayers:\n  - {name: a, op: no_such_op_for_the_list}\n";

// The op types listed in the loader's "unknown op" error ("... (known ops: a, b, c)",
// docs/ERRORS.md), the one place the public API names the registry. Empty if none are listed.
inline std::vector<std::string> known_ops_in(const std::string& message) {
  const std::string begin = "(known ops: ";
  const size_t at = message.find(begin), end = message.find(')', at);
  std::vector<std::string> types;
  if (at == std::string::npos || end == std::string::npos) return types;
  const std::string list = message.substr(at + begin.size(), end - at - begin.size());
  for (size_t from = 0; from <= list.size();) {
    size_t comma = list.find(", ", from);
    if (comma == std::string::npos) comma = list.size();
    if (comma > from) types.push_back(list.substr(from, comma - from));
    from = comma + 2;
  }
  return types;
}

// The op types this process's loader knows.
inline std::vector<std::string> registered_op_types() {
  auto model = Model::load_from_memory(kUnknownOpModel);
  REQUIRE_FALSE(model.ok());
  return known_ops_in(model.status().message());
}

}  // namespace op_check
}  // namespace winfer
