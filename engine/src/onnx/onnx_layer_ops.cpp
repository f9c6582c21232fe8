// The data operators of an ONNX graph as winfer layers: one converter per operator, each
// checking the attributes it does not support (docs/MODEL_FORMAT.md, "ONNX", lists them).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/src/onnx/onnx_importer.h"

namespace winfer::onnx_import {
namespace {

AttrValue number(int64_t v) { return AttrValue::scalar(std::to_string(v)); }
AttrValue boolean(bool v) { return AttrValue::scalar(v ? "true" : "false"); }
AttrValue numbers(const std::vector<int64_t>& values) {
  std::vector<std::string> items;
  for (int64_t v : values) items.push_back(std::to_string(v));
  return AttrValue::list(std::move(items));
}
AttrValue real(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);  // exact: the double reads back bit for bit
  return AttrValue::scalar(text);
}

Value data_value(const std::string& tensor, const Shape& shape) {
  Value v;
  v.kind = Value::Kind::kData;
  v.tensor = tensor;
  v.shape = shape;
  return v;
}

Status require_rank(Importer& im, const Value& v, int rank, const std::string& what) {
  if (v.shape.rank() == rank) return Status::Ok();
  return im.unsupported_here(what + " has shape " + v.shape.to_string() + "; winfer imports this operator on rank-" +
                             std::to_string(rank) + " tensors");
}

// ONNX spatial pads [top, left, bottom, right] (default zeros); auto_pad SAME_* only where it
// does not depend on the input size (stride 1).
Result<std::vector<int64_t>> spatial_pads(Importer& im, const std::vector<int64_t>& kernel,
                                          const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations) {
  const std::string auto_pad = im.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> pads = im.attr_ints("pads", {0, 0, 0, 0});
  if (pads.size() != 4) return im.invalid_here("'pads' must have 4 values for a 2-D operator");
  if (auto_pad == "NOTSET" || auto_pad.empty()) return pads;
  if (auto_pad == "VALID") return std::vector<int64_t>{0, 0, 0, 0};
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (strides[0] != 1 || strides[1] != 1) {
      return im.unsupported_here("auto_pad " + auto_pad +
                                 " with a stride other than 1 pads by the input size; re-export with explicit pads");
    }
    for (int d = 0; d < 2; ++d) {
      const int64_t total = dilations[d] * (kernel[d] - 1);
      const int64_t small = total / 2, large = total - small;
      pads[d] = auto_pad == "SAME_UPPER" ? small : large;
      pads[d + 2] = auto_pad == "SAME_UPPER" ? large : small;
    }
    return pads;
  }
  return im.invalid_here("unknown auto_pad '" + auto_pad + "'");
}

Result<std::vector<int64_t>> pair_attr(Importer& im, const std::string& name, int64_t fallback) {
  std::vector<int64_t> v = im.attr_ints(name, {fallback, fallback});
  if (v.size() != 2) return im.unsupported_here("'" + name + "' must have 2 values (winfer imports 2-D operators)");
  return v;
}

// Pad with zeros on H and W only: kept aside for the Conv that reads it (F.pad before a conv),
// whose padding it becomes. Pads are an attribute before opset 11, an input (with an optional
// constant value, and from opset 18 axes) after.
Status convert_pad(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"mode", "pads", "value"}));
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  WINFER_RETURN_IF_ERROR(require_rank(im, *x, 4, "input"));
  const std::string mode = im.attr_string("mode", "constant");
  if (mode != "constant") return im.unsupported_here("mode '" + mode + "' (winfer imports zero padding only)");
  std::vector<int64_t> pads = im.attr_ints("pads", {});
  double value = im.attr_float("value", 0.0);
  if (im.has_input(1)) {
    WINFER_ASSIGN_OR_RETURN(pads, im.ints_input(1, "pads"));
  }
  if (im.has_input(2)) {
    WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(2, "constant_value"));
    if (c.size() != 1) return im.invalid_here("constant_value must be a scalar");
    value = c.at(0);
  }
  std::vector<int64_t> axes = {0, 1, 2, 3};
  if (im.has_input(3)) {
    WINFER_ASSIGN_OR_RETURN(axes, im.ints_input(3, "axes"));
    for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  }
  if (pads.size() != 2 * axes.size()) return im.invalid_here("pads must hold 2 values per axis");
  std::vector<int64_t> begin(4, 0), end(4, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] > 3) return im.invalid_here("axis " + std::to_string(axes[i]) + " out of range");
    begin[axes[i]] = pads[i];
    end[axes[i]] = pads[i + axes.size()];
  }
  if (value != 0.0 || begin[0] || begin[1] || end[0] || end[1]) {
    return im.unsupported_here("Pad other than zeros on H and W (winfer imports F.pad before a convolution)");
  }
  for (int64_t p : {begin[2], begin[3], end[2], end[3]}) {
    if (p < 0) return im.unsupported_here("negative pads (cropping)");
  }
  Value v = *x;
  v.pads = {begin[2], begin[3], end[2], end[3]};
  // A Pad of nothing (torch writes one before every AvgPool2d with count_include_pad) is the
  // identity; otherwise the Conv or AveragePool reading it takes it over.
  if (v.pads != std::vector<int64_t>{0, 0, 0, 0}) v.kind = Value::Kind::kPadded;
  im.set_output(0, v);
  return Status::Ok();
}

Status convert_conv(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"}));
  std::vector<int64_t> extra_pads = {0, 0, 0, 0};
  {
    WINFER_ASSIGN_OR_RETURN(const Value* in, im.input(0));
    if (in->kind == Value::Kind::kPadded) extra_pads = in->pads;
  }
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0, /*padded_ok=*/true));
  WINFER_RETURN_IF_ERROR(require_rank(im, *x, 4, "input X"));
  WINFER_ASSIGN_OR_RETURN(const Value* w, im.input(1));
  if (w->kind != Value::Kind::kInitializer) return im.unsupported_here("the weight W must be an initializer");
  WINFER_ASSIGN_OR_RETURN(Shape w_shape, im.initializer_shape(*w, "W"));
  if (w_shape.rank() != 4)
    return im.unsupported_here("W has shape " + w_shape.to_string() + "; winfer imports 2-D convolutions");
  const int64_t group = im.attr_int("group", 1);
  if (group < 1 || group > (int64_t(1) << 24)) return im.invalid_here("group " + std::to_string(group));
  const std::vector<int64_t> kernel = {w_shape[2], w_shape[3]};
  if (im.has_attr("kernel_shape") && im.attr_ints("kernel_shape", {}) != kernel) {
    return im.invalid_here("kernel_shape disagrees with W's shape " + w_shape.to_string());
  }
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> strides, pair_attr(im, "strides", 1));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, pair_attr(im, "dilations", 1));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> pads, spatial_pads(im, kernel, strides, dilations));
  for (int i = 0; i < 4; ++i) pads[i] += extra_pads[i];
  Layer layer;
  layer.name = im.new_layer_name();
  layer.op = "conv2d";
  const bool bias = im.has_input(2);
  layer.attrs = {{"in_channels", number(w_shape[1] * group)},
                 {"out_channels", number(w_shape[0])},
                 {"kernel_size", numbers(kernel)},
                 {"stride", numbers(strides)},
                 {"padding", numbers(pads)},
                 {"dilation", numbers(dilations)},
                 {"groups", number(group)},
                 {"bias", boolean(bias)}};
  layer.params = im.param_prefix(layer.name, w->initializer->name());
  WINFER_RETURN_IF_ERROR(im.add_param(layer.params + ".weight", *w, w_shape, "W"));
  if (bias) {
    WINFER_ASSIGN_OR_RETURN(const Value* b, im.input(2));
    WINFER_RETURN_IF_ERROR(im.add_param(layer.params + ".bias", *b, Shape({w_shape[0]}), "B"));
  } else {
    layer.open_bias_channels = w_shape[0];
  }
  return im.emit(std::move(layer), {x->tensor});
}

Status convert_activation(Importer& im, const std::string& op) {
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  Layer layer;
  layer.op = op;
  return im.emit(std::move(layer), {x->tensor});
}

Status convert_relu(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({}));
  return convert_activation(im, "relu");
}

// Clip(0, 6) is ReLU6 and Clip(0, +inf) ReLU; bounds are attributes before opset 11, inputs after.
Status convert_clip(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"min", "max"}));
  const double inf = std::numeric_limits<double>::infinity();
  double low = im.attr_float("min", -inf), high = im.attr_float("max", inf);
  for (int i : {1, 2}) {
    if (!im.has_input(i)) continue;
    WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(i, i == 1 ? "min" : "max"));
    if (c.size() != 1) return im.invalid_here("min and max must be scalars");
    (i == 1 ? low : high) = c.at(0);
  }
  if (low == 0 && high == 6) return convert_activation(im, "relu6");
  if (low == 0 && high == inf) return convert_activation(im, "relu");
  return im.unsupported_here("Clip(" + std::to_string(low) + ", " + std::to_string(high) +
                             "): winfer imports Clip(0, 6) as relu6 and Clip(0, inf) as relu only");
}

Status convert_sigmoid(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({}));
  return convert_activation(im, "sigmoid");
}

Status convert_hardswish(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({}));
  return convert_activation(im, "hardswish");
}

// HardSigmoid(alpha, beta) = max(0, min(1, alpha * x + beta)) is torch's Hardsigmoid,
// relu6(x + 3) / 6, for alpha 1/6 and beta 0.5 (as float32 attributes) only.
Status convert_hardsigmoid(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"alpha", "beta"}));
  const double alpha = im.attr_float("alpha", 0.2), beta = im.attr_float("beta", 0.5);
  if (float(alpha) == float(1.0 / 6.0) && beta == 0.5) return convert_activation(im, "hardsigmoid");
  char text[96];
  std::snprintf(text, sizeof text, "HardSigmoid with alpha %.9g, beta %.9g", alpha, beta);
  return im.unsupported_here(std::string(text) + ": winfer imports alpha 1/6, beta 0.5 (torch's Hardsigmoid) only");
}

Status convert_pool(Importer& im, bool max) {
  std::vector<std::string> known = {"kernel_shape", "strides", "pads", "ceil_mode", "auto_pad"};
  known.push_back(max ? "dilations" : "count_include_pad");
  if (max) known.push_back("storage_order");
  WINFER_RETURN_IF_ERROR(im.check_attrs(known));
  if (max && im.node().output_size() > 1 && !im.node().output(1).empty() && im.consumers(im.node().output(1)) > 0) {
    return im.unsupported_here("its Indices output is used; winfer's max pooling gives the values only");
  }
  // torch writes AvgPool2d(padding=p, count_include_pad=True) as a zero Pad then an AveragePool
  // without pads: the same as winfer's avgpool2d with padding p that counts the padding.
  std::vector<int64_t> padded = {0, 0, 0, 0};
  bool count_include_pad = im.attr_int("count_include_pad", 0) != 0;
  {
    WINFER_ASSIGN_OR_RETURN(const Value* in, im.input(0));
    if (in->kind == Value::Kind::kPadded && !max) {
      padded = in->pads;
      count_include_pad = true;
    }
  }
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0, /*padded_ok=*/!max));
  WINFER_RETURN_IF_ERROR(require_rank(im, *x, 4, "input X"));
  const std::vector<int64_t> kernel = im.attr_ints("kernel_shape", {});
  if (kernel.size() != 2) return im.unsupported_here("kernel_shape must have 2 values (winfer imports 2-D pooling)");
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> strides, pair_attr(im, "strides", 1));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, pair_attr(im, "dilations", 1));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> pads, spatial_pads(im, kernel, strides, dilations));
  if (padded != std::vector<int64_t>{0, 0, 0, 0}) {
    if (pads != std::vector<int64_t>{0, 0, 0, 0} && im.attr_int("count_include_pad", 0) == 0) {
      return im.unsupported_here("a Pad before an AveragePool that pads again without counting the padding");
    }
    for (int i = 0; i < 4; ++i) pads[i] += padded[i];
  }
  if (pads[0] != pads[2] || pads[1] != pads[3]) {
    return im.unsupported_here("asymmetric pads " + numbers(pads).to_string() +
                               "; winfer's pooling pads both sides of a dim alike");
  }
  Layer layer;
  layer.op = max ? "maxpool2d" : "avgpool2d";
  layer.attrs = {{"kernel_size", numbers(kernel)},
                 {"stride", numbers(strides)},
                 {"padding", numbers({pads[0], pads[1]})},
                 {"ceil_mode", boolean(im.attr_int("ceil_mode", 0) != 0)}};
  if (max) {
    layer.attrs.push_back({"dilation", numbers(dilations)});
  } else {
    layer.attrs.push_back({"count_include_pad", boolean(count_include_pad)});
  }
  return im.emit(std::move(layer), {x->tensor});
}

Status convert_maxpool(Importer& im) { return convert_pool(im, true); }
Status convert_averagepool(Importer& im) { return convert_pool(im, false); }

Status emit_global_average(Importer& im, const Value& x, bool keep_dims) {
  WINFER_RETURN_IF_ERROR(require_rank(im, x, 4, "input"));
  Layer pool;
  pool.op = "adaptive_avgpool2d";
  pool.attrs = {{"output_size", number(1)}};
  if (keep_dims) return im.emit(std::move(pool), {x.tensor});
  const std::string name = im.new_layer_name();
  pool.name = im.new_layer_name(name + ".pool");
  WINFER_RETURN_IF_ERROR(im.emit(std::move(pool), {x.tensor}));
  Layer flatten;
  flatten.name = name;
  flatten.op = "flatten";
  flatten.attrs = {{"start_dim", number(1)}};
  WINFER_ASSIGN_OR_RETURN(const Value* pooled, im.input(0));
  (void)pooled;
  return im.emit(std::move(flatten), {name + ".pool"});
}

Status convert_global_average_pool(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({}));
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  return emit_global_average(im, *x, true);
}

// ReduceMean over H and W (torch's x.mean([2, 3])) is global average pooling.
Status convert_reduce_mean(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"axes", "keepdims", "noop_with_empty_axes"}));
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  std::vector<int64_t> axes = im.attr_ints("axes", {});
  if (im.has_input(1)) {
    WINFER_ASSIGN_OR_RETURN(axes, im.ints_input(1, "axes"));  // opset 18
  }
  for (int64_t& a : axes) a = a < 0 ? a + x->shape.rank() : a;
  std::sort(axes.begin(), axes.end());
  if (x->shape.rank() != 4 || axes != std::vector<int64_t>{2, 3}) {
    return im.unsupported_here("ReduceMean over axes " + numbers(axes).to_string() + " of " + x->shape.to_string() +
                               "; winfer imports the mean over H and W of [N, C, H, W] (global average pooling)");
  }
  return emit_global_average(im, *x, im.attr_int("keepdims", 1) != 0);
}

Status convert_flatten(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"axis"}));
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  int64_t axis = im.attr_int("axis", 1);
  if (axis < 0) axis += x->shape.rank();
  if (axis != 1)
    return im.unsupported_here("Flatten with axis " + std::to_string(axis) + " (winfer flattens from dim 1)");
  if (x->shape.rank() == 2) {
    im.set_output(0, *x);
    return Status::Ok();
  }
  Layer layer;
  layer.op = "flatten";
  layer.attrs = {{"start_dim", number(1)}};
  return im.emit(std::move(layer), {x->tensor});
}

// A bias from a per-channel constant (Add after a bias-less Conv, MatMul or Gemm): the tensor
// when `c` holds one value per channel in a shape that broadcasts along the channel dim.
bool is_channel_vector(const Constant& c, int64_t channels, int rank) {
  if (c.size() != channels || !c.floating) return false;
  const std::vector<int64_t>& d = c.dims;
  if (d.size() == 1) return rank == 2;  // [C] broadcasts along the last dim: a linear's features
  if (rank == 2) return d.size() == 2 && d[0] == 1;
  // rank 4: [C, 1, 1] or [1, C, 1, 1]
  const size_t at = d.size() == 4 ? 1 : d.size() == 3 ? 0 : 9;
  if (at == 9) return false;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i != at && d[i] != 1) return false;
  }
  return true;
}

Status convert_gemm(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"alpha", "beta", "transA", "transB"}));
  WINFER_ASSIGN_OR_RETURN(const Value* a, im.data_input(0));
  WINFER_RETURN_IF_ERROR(require_rank(im, *a, 2, "input A"));
  if (im.attr_int("transA", 0) != 0) return im.unsupported_here("transA = 1 (A transposed) is not supported");
  WINFER_ASSIGN_OR_RETURN(const Value* b, im.input(1));
  if (b->kind != Value::Kind::kInitializer) return im.unsupported_here("B must be an initializer (the weights)");
  WINFER_ASSIGN_OR_RETURN(Shape b_shape, im.initializer_shape(*b, "B"));
  if (b_shape.rank() != 2) return im.invalid_here("B has shape " + b_shape.to_string() + ", expected rank 2");
  const bool trans_b = im.attr_int("transB", 0) != 0;
  const double alpha = im.attr_float("alpha", 1.0), beta = im.attr_float("beta", 1.0);
  const int64_t out = trans_b ? b_shape[0] : b_shape[1], in = trans_b ? b_shape[1] : b_shape[0];
  Layer layer;
  layer.name = im.new_layer_name();
  layer.op = "linear";
  layer.params = im.param_prefix(layer.name, b->initializer->name());
  const Shape weight_shape({out, in});
  if (trans_b && alpha == 1.0) {
    WINFER_RETURN_IF_ERROR(im.add_param(layer.params + ".weight", *b, weight_shape, "B"));
  } else {
    // [in, out] -> [out, in], times alpha: computed once, at import.
    WINFER_ASSIGN_OR_RETURN(std::vector<float> values, im.read_floats(*b, "B"));
    std::vector<float> weight(values.size());
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        const float v = trans_b ? values[o * in + i] : values[i * out + o];
        weight[o * in + i] = static_cast<float>(alpha * v);
      }
    }
    im.add_computed_param(layer.params + ".weight", weight_shape, std::move(weight));
  }
  bool bias = false;
  if (im.has_input(2) && beta != 0.0) {
    WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(2, "C"));
    if (c.size() != out || !c.floating || (c.dims.size() == 2 && c.dims[0] != 1) || c.dims.size() > 2) {
      return im.unsupported_here("C must hold one value per output feature ([" + std::to_string(out) + "] or [1, " +
                                 std::to_string(out) + "])");
    }
    std::vector<float> values;
    for (double v : c.floats) values.push_back(static_cast<float>(beta * v));
    im.add_computed_param(layer.params + ".bias", Shape({out}), std::move(values));
    bias = true;
  }
  layer.attrs = {{"in_features", number(in)}, {"out_features", number(out)}, {"bias", boolean(bias)}};
  if (!bias) layer.open_bias_channels = out;
  return im.emit(std::move(layer), {a->tensor});
}

Status convert_matmul(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({}));
  WINFER_ASSIGN_OR_RETURN(const Value* a, im.data_input(0));
  WINFER_RETURN_IF_ERROR(require_rank(im, *a, 2, "input A"));
  WINFER_ASSIGN_OR_RETURN(const Value* b, im.input(1));
  if (b->kind != Value::Kind::kInitializer) return im.unsupported_here("B must be an initializer (the weights)");
  WINFER_ASSIGN_OR_RETURN(Shape b_shape, im.initializer_shape(*b, "B"));
  if (b_shape.rank() != 2) return im.unsupported_here("B has shape " + b_shape.to_string() + ", expected rank 2");
  const int64_t in = b_shape[0], out = b_shape[1];
  WINFER_ASSIGN_OR_RETURN(std::vector<float> values, im.read_floats(*b, "B"));
  std::vector<float> weight(values.size());
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) weight[o * in + i] = values[i * out + o];
  }
  Layer layer;
  layer.name = im.new_layer_name();
  layer.op = "linear";
  layer.params = im.param_prefix(layer.name, b->initializer->name());
  im.add_computed_param(layer.params + ".weight", Shape({out, in}), std::move(weight));
  layer.attrs = {{"in_features", number(in)}, {"out_features", number(out)}, {"bias", boolean(false)}};
  layer.open_bias_channels = out;
  return im.emit(std::move(layer), {a->tensor});
}

Status convert_batchnorm(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"epsilon", "momentum", "training_mode", "spatial"}));
  if (im.attr_int("training_mode", 0) != 0) return im.unsupported_here("training_mode = 1 (winfer runs inference)");
  if (im.attr_int("spatial", 1) != 1) return im.unsupported_here("spatial = 0 (per-element statistics)");
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  if (x->shape.rank() != 4) return require_rank(im, *x, 4, "input X");
  const int64_t channels = x->shape[1];
  WINFER_ASSIGN_OR_RETURN(const Value* scale, im.input(1));
  Layer layer;
  layer.name = im.new_layer_name();
  layer.op = "batchnorm2d";
  layer.attrs = {{"num_features", number(channels)}, {"eps", real(static_cast<float>(im.attr_float("epsilon", 1e-5)))}};
  layer.params =
      im.param_prefix(layer.name, scale->kind == Value::Kind::kInitializer ? scale->initializer->name() : "");
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  const char* onnx_names[] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 0; i < 4; ++i) {
    WINFER_ASSIGN_OR_RETURN(const Value* v, im.input(i + 1));
    WINFER_RETURN_IF_ERROR(im.add_param(layer.params + "." + names[i], *v, Shape({channels}), onnx_names[i]));
  }
  return im.emit(std::move(layer), {x->tensor});
}

Status convert_softmax(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"axis"}));
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  const int rank = x->shape.rank();
  int64_t axis = im.attr_int("axis", im.opset() < 13 ? 1 : -1);
  if (axis < 0) axis += rank;
  if (axis != 1 || (rank == 4 && im.opset() < 13)) {
    return im.unsupported_here("Softmax over axis " + std::to_string(axis) + " of " + x->shape.to_string() +
                               "; winfer imports the softmax over dim 1 (the classes)");
  }
  Layer layer;
  layer.op = "softmax";
  layer.attrs = {{"dim", number(1)}};
  return im.emit(std::move(layer), {x->tensor});
}

Status convert_split(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"axis", "split", "num_outputs"}));
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  int64_t axis = im.attr_int("axis", 0);
  if (axis < 0) axis += x->shape.rank();
  if (axis != 1) return im.unsupported_here("Split along axis " + std::to_string(axis) + " (winfer splits channels)");
  std::vector<int64_t> sizes = im.attr_ints("split", {});
  if (im.has_input(1)) {
    WINFER_ASSIGN_OR_RETURN(sizes, im.ints_input(1, "split"));  // opset 13
  }
  const int outputs = im.node().output_size();
  Layer layer;
  layer.op = "split";
  if (sizes.empty()) {
    layer.attrs = {{"chunks", number(outputs)}, {"dim", number(1)}};
  } else {
    if (static_cast<int>(sizes.size()) != outputs) return im.invalid_here("'split' sizes disagree with the outputs");
    layer.attrs = {{"sizes", numbers(sizes)}, {"dim", number(1)}};
  }
  return im.emit(std::move(layer), {x->tensor}, outputs);
}

// Transpose of a constant (torch's F.pad export reorders its pads with one).
Status fold_transpose(Importer& im, std::vector<int64_t> perm) {
  WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(0, "data"));
  const int64_t rank = static_cast<int64_t>(c.dims.size());
  if (perm.empty()) {
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t d = 0; d < rank; ++d) {
    if (static_cast<int64_t>(sorted.size()) != rank || sorted[d] != d)
      return im.invalid_here("perm is not a permutation");
  }
  std::vector<int64_t> dims(rank), strides(rank, 1);
  for (int64_t d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * c.dims[d];
  for (int64_t d = 0; d < rank; ++d) dims[d] = c.dims[perm[d]];
  Constant out;
  out.floating = c.floating;
  out.dims = dims;
  for (int64_t i = 0; i < c.size(); ++i) {
    int64_t rest = i, at = 0;
    for (int64_t d = rank; d-- > 0;) {
      at += (rest % dims[d]) * strides[perm[d]];
      rest /= dims[d];
    }
    if (c.floating) {
      out.floats.push_back(c.floats[at]);
    } else {
      out.ints.push_back(c.ints[at]);
    }
  }
  Value v;
  v.kind = Value::Kind::kConstant;
  v.constant = std::move(out);
  im.set_output(0, std::move(v));
  return Status::Ok();
}

Status convert_transpose(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"perm"}));
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.input(0));
  std::vector<int64_t> perm = im.attr_ints("perm", {});
  if (im.all_inputs_constant()) return fold_transpose(im, perm);
  if (x->kind == Value::Kind::kShuffle && !x->transposed && perm == std::vector<int64_t>{0, 2, 1, 3, 4}) {
    Value v = *x;
    v.transposed = true;
    im.set_output(0, v);
    return Status::Ok();
  }
  return im.unsupported_here(
      "Transpose of activations is imported only inside a channel shuffle (Reshape to "
      "[N, g, C/g, H, W], Transpose perm [0, 2, 1, 3, 4], Reshape back)");
}

}  // namespace

// ---- operators folded on constants, layers on activations (onnx_shape_ops.cpp) -------------

Status convert_add_layer(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({}));
  WINFER_ASSIGN_OR_RETURN(const Value* a, im.input(0));
  WINFER_ASSIGN_OR_RETURN(const Value* b, im.input(1));
  for (int i : {0, 1}) {  // a Pad or a shuffle in progress: data_input says why not
    const Value* v = i == 0 ? a : b;
    if (v->kind == Value::Kind::kPadded || v->kind == Value::Kind::kShuffle) return im.data_input(i).status();
  }
  if (a->kind == Value::Kind::kData && b->kind == Value::Kind::kData) {
    Layer layer;
    layer.op = "add";
    return im.emit(std::move(layer), {a->tensor, b->tensor});
  }
  // Activation + per-channel constant right after a bias-less Conv/MatMul/Gemm: that layer's bias.
  const Value* data = a->kind == Value::Kind::kData ? a : b;
  const int constant_index = a->kind == Value::Kind::kData ? 1 : 0;
  Layer* producer = data->kind == Value::Kind::kData ? im.producer_of(data->tensor) : nullptr;
  const std::string data_name = im.node().input(1 - constant_index);
  if (producer != nullptr && producer->open_bias_channels > 0 && im.consumers(data_name) == 1) {
    WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(constant_index, "the bias"));
    if (is_channel_vector(c, producer->open_bias_channels, data->shape.rank())) {
      std::vector<float> values(c.floats.begin(), c.floats.end());
      im.add_computed_param(producer->params + ".bias", Shape({producer->open_bias_channels}), std::move(values));
      for (auto& kv : producer->attrs) {
        if (kv.first == "bias") kv.second = boolean(true);
      }
      producer->open_bias_channels = 0;
      im.set_output(0, *data);
      return Status::Ok();
    }
  }
  return im.unsupported_here(
      "Add of an activation and a constant is imported only as the bias of the Conv, "
      "MatMul or Gemm right before it (one value per channel)");
}

namespace {
bool is_graph_output(Importer& im, const std::string& name) {
  for (const onnx::ValueInfoProto& out : im.file().graph().output())
    if (out.name() == name) return true;
  return false;
}
}  // namespace

// Mul of two activations: `mul`, the [N, C, 1, 1] operand (squeeze-and-excitation's scale,
// which torchvision writes first: scale * input) second. x * Sigmoid(x) and x * HardSigmoid(x)
// (torch's SiLU, and Hardswish before opset 14), where the Mul alone reads the Sigmoid, turn
// that layer into silu or hardswish.
Status convert_mul_layer(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({}));
  WINFER_ASSIGN_OR_RETURN(const Value* a, im.input(0));
  WINFER_ASSIGN_OR_RETURN(const Value* b, im.input(1));
  if (a->kind != Value::Kind::kData || b->kind != Value::Kind::kData) {
    for (int i : {0, 1}) {  // a Pad or a shuffle in progress: data_input says why not
      const Value* v = i == 0 ? a : b;
      if (v->kind == Value::Kind::kPadded || v->kind == Value::Kind::kShuffle) return im.data_input(i).status();
    }
    return im.unsupported_here("Mul of an activation and a constant (winfer imports Mul of two activations)");
  }
  for (int i : {0, 1}) {
    const Value* gate = i == 0 ? a : b;
    const Value* x = i == 0 ? b : a;
    Layer* producer = im.producer_of(gate->tensor);
    if (producer == nullptr || producer->inputs.size() != 1 || producer->inputs[0] != x->tensor) continue;
    if (im.consumers(im.node().input(i)) != 1 || is_graph_output(im, im.node().input(i))) continue;
    if (producer->op != "sigmoid" && producer->op != "hardsigmoid") continue;
    producer->op = producer->op == "sigmoid" ? "silu" : "hardswish";
    im.set_output(0, *gate);
    return Status::Ok();
  }
  const Shape& sa = a->shape;
  const Shape& sb = b->shape;
  const bool b_scales_a = sa.rank() == 4 && sb == Shape{sa.n(), sa.c(), 1, 1};
  const bool a_scales_b = sb.rank() == 4 && sa == Shape{sb.n(), sb.c(), 1, 1};
  if (sa != sb && !b_scales_a && !a_scales_b) {
    return im.unsupported_here("Mul of " + sa.to_string() + " and " + sb.to_string() +
                               ": winfer multiplies tensors of one shape, or [N, C, H, W] by [N, C, 1, 1]");
  }
  Layer layer;
  layer.op = "mul";
  if (a_scales_b && sa != sb) return im.emit(std::move(layer), {b->tensor, a->tensor});
  return im.emit(std::move(layer), {a->tensor, b->tensor});
}

Status convert_concat_layer(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"axis"}));
  std::vector<std::string> inputs;
  int rank = 0;
  for (int i = 0; i < im.input_count(); ++i) {
    WINFER_ASSIGN_OR_RETURN(const Value* v, im.data_input(i));
    inputs.push_back(v->tensor);
    rank = v->shape.rank();
  }
  int64_t axis = im.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis != 1)
    return im.unsupported_here("Concat along axis " + std::to_string(axis) + " (winfer concatenates channels)");
  if (inputs.size() == 1) {
    WINFER_ASSIGN_OR_RETURN(const Value* v, im.data_input(0));
    im.set_output(0, *v);
    return Status::Ok();
  }
  Layer layer;
  layer.op = "concat";
  layer.attrs = {{"dim", number(1)}};
  return im.emit(std::move(layer), inputs);
}

// Slice of a channel range [b, e) of an activation: one output of a split of the channels. The
// Slices of the other parts (ShuffleNet's chunk(2) exports as two Slices) reuse the same split.
Status convert_slice_layer(Importer& im) {
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.data_input(0));
  if (im.opset() < 10) return im.unsupported_here("Slice before opset 10 on activations");
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> starts, im.ints_input(1, "starts"));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> ends, im.ints_input(2, "ends"));
  std::vector<int64_t> axes = {0}, steps = {1};
  if (im.has_input(3)) {
    WINFER_ASSIGN_OR_RETURN(axes, im.ints_input(3, "axes"));
  }
  if (im.has_input(4)) {
    WINFER_ASSIGN_OR_RETURN(steps, im.ints_input(4, "steps"));
  }
  const int rank = x->shape.rank();
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1) {
    return im.unsupported_here("Slice of activations along several axes (winfer imports a range of channels)");
  }
  const int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
  if (axis != 1 || steps[0] != 1) {
    return im.unsupported_here("Slice of activations along axis " + std::to_string(axis) + " with step " +
                               std::to_string(steps[0]) + " (winfer imports a range of channels, step 1)");
  }
  const int64_t c = x->shape[1];
  int64_t b = starts[0] < 0 ? starts[0] + c : starts[0];
  int64_t e = ends[0] < 0 ? ends[0] + c : ends[0];
  b = std::clamp<int64_t>(b, 0, c);
  e = std::clamp<int64_t>(e, b, c);
  if (b == e) return im.unsupported_here("an empty Slice of the channels");
  if (b == 0 && e == c) {
    im.set_output(0, *x);
    return Status::Ok();
  }
  auto& splits = im.channel_splits();
  for (auto it = splits.lower_bound(x->tensor); it != splits.upper_bound(x->tensor); ++it) {
    const std::vector<int64_t>& bounds = it->second.bounds;
    for (size_t p = 0; p + 1 < bounds.size(); ++p) {
      if (bounds[p] == b && bounds[p + 1] == e) {
        const std::string tensor = it->second.layer + ":" + std::to_string(p);
        im.set_output(0, data_value(tensor, im.tensor_shape(tensor)));
        return Status::Ok();
      }
    }
  }
  std::vector<int64_t> bounds = {0};
  for (int64_t v : {b, e, c}) {
    if (v > bounds.back()) bounds.push_back(v);
  }
  std::vector<int64_t> sizes;
  for (size_t p = 0; p + 1 < bounds.size(); ++p) sizes.push_back(bounds[p + 1] - bounds[p]);
  const int part = b == 0 ? 0 : 1;
  Layer layer;
  layer.name = im.new_layer_name();
  layer.op = "split";
  layer.attrs = {{"sizes", numbers(sizes)}, {"dim", number(1)}};
  const std::string name = layer.name;
  // The split's outputs are the node's outputs 0..n-1 for emit(); the Slice has one output, so
  // emit() fills the first and the right part is then chosen.
  WINFER_RETURN_IF_ERROR(im.emit(std::move(layer), {x->tensor}, static_cast<int>(sizes.size())));
  splits.insert({x->tensor, ChannelSplit{name, bounds}});
  const std::string tensor = name + ":" + std::to_string(part);
  im.set_output(0, data_value(tensor, im.tensor_shape(tensor)));
  return Status::Ok();
}

// Reshape of activations: the flatten of [N, C, H, W] to [N, C*H*W], the identity, or a step of
// a channel shuffle ([N, C, H, W] -> [N, g, C/g, H, W], and back after the Transpose).
Status convert_reshape_layer(Importer& im) {
  WINFER_RETURN_IF_ERROR(im.check_attrs({"allowzero"}));
  WINFER_ASSIGN_OR_RETURN(const Value* x, im.input(0));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> target, im.ints_input(1, "shape"));
  if (x->kind != Value::Kind::kData && x->kind != Value::Kind::kShuffle) {
    WINFER_RETURN_IF_ERROR(im.data_input(0).status());
  }
  // The shape the data has now: a shuffle in progress is [N, g, C/g, H, W] (transposed: [N, C/g, g, H, W]).
  std::vector<int64_t> dims = x->shape.dims();
  if (x->kind == Value::Kind::kShuffle) {
    const int64_t g = x->groups, per = x->shape[1] / x->groups;
    dims = {x->shape[0], x->transposed ? per : g, x->transposed ? g : per, x->shape[2], x->shape[3]};
  }
  int64_t count = 1, known = 1, infer_at = -1;
  for (int64_t d : dims) count *= d;
  const bool allow_zero = im.attr_int("allowzero", 0) != 0;
  bool too_large = false;  // the target's known dims multiply past the data's count
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == 0 && !allow_zero) target[d] = d < dims.size() ? dims[d] : 0;
    if (target[d] == -1) {
      if (infer_at >= 0) return im.invalid_here("two -1 dims in the target shape");
      infer_at = int64_t(d);
    } else if (target[d] < 0) {
      return im.invalid_here("a negative dim " + std::to_string(target[d]) + " in the target shape");
    } else if (target[d] > 0 && known > count / target[d]) {
      too_large = true;
    } else {
      known *= target[d];
    }
  }
  if (infer_at >= 0 && known > 0) target[infer_at] = count / known;
  if (too_large) {
    return im.invalid_here("cannot reshape " + Shape(dims).to_string() + " to " + numbers(target).to_string());
  }
  int64_t product = 1;
  for (int64_t d : target) product *= d;  // no overflow: the factors checked above multiply to at most count
  if (product != count) {
    return im.invalid_here("cannot reshape " + Shape(dims).to_string() + " to " + numbers(target).to_string());
  }
  const std::string shape_text = Shape(dims).to_string() + " to " + numbers(target).to_string();
  if (x->kind == Value::Kind::kShuffle) {
    if (x->transposed && target == x->shape.dims()) {
      Layer layer;
      layer.op = "channel_shuffle";
      layer.attrs = {{"groups", number(x->groups)}};
      return im.emit(std::move(layer), {x->tensor});
    }
    return im.unsupported_here("Reshape " + shape_text + " inside a channel shuffle");
  }
  if (target == dims) {
    im.set_output(0, *x);
    return Status::Ok();
  }
  if (dims.size() == 4 && target.size() == 2 && target[0] == dims[0]) {
    Layer layer;
    layer.op = "flatten";
    layer.attrs = {{"start_dim", number(1)}};
    return im.emit(std::move(layer), {x->tensor});
  }
  if (dims.size() == 4 && target.size() == 5 && target[0] == dims[0] && target[1] * target[2] == dims[1] &&
      target[3] == dims[2] && target[4] == dims[3] && target[1] > 1) {
    Value v = *x;
    v.kind = Value::Kind::kShuffle;
    v.groups = target[1];
    v.transposed = false;
    im.set_output(0, v);
    return Status::Ok();
  }
  return im.unsupported_here("Reshape " + shape_text +
                             "; winfer imports reshapes that flatten [N, C, H, W] to [N, C*H*W] or shuffle channels");
}

void add_layer_ops(ConverterTable& table) {
  table["Conv"] = convert_conv;
  table["Pad"] = convert_pad;
  table["Relu"] = convert_relu;
  table["Clip"] = convert_clip;
  table["Sigmoid"] = convert_sigmoid;
  table["HardSigmoid"] = convert_hardsigmoid;
  table["HardSwish"] = convert_hardswish;
  table["MaxPool"] = convert_maxpool;
  table["AveragePool"] = convert_averagepool;
  table["GlobalAveragePool"] = convert_global_average_pool;
  table["ReduceMean"] = convert_reduce_mean;
  table["Flatten"] = convert_flatten;
  table["Gemm"] = convert_gemm;
  table["MatMul"] = convert_matmul;
  table["BatchNormalization"] = convert_batchnorm;
  table["Softmax"] = convert_softmax;
  table["Split"] = convert_split;
  table["Transpose"] = convert_transpose;
}

}  // namespace winfer::onnx_import
