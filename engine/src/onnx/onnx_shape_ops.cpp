// The shape computations exporters write around reshapes (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape, chunk sizes from Div and Slice...) folded to constants at import time,
// for the import shape (docs/MODEL_FORMAT.md, "ONNX"). Also Constant, Identity and Dropout.
// An operator whose inputs are not all constants is handed to its layer converter, or refused.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/src/onnx/onnx_importer.h"

namespace winfer::onnx_import {
namespace {

constexpr int64_t kMaxFoldedValues = int64_t(1) << 20;

// The element count of `dims`, which may come from the file: -1 when a dim is negative,
// saturating at INT64_MAX rather than overflowing.
int64_t product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  bool saturated = false;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d == 0) return 0;
    if (p > std::numeric_limits<int64_t>::max() / d) {
      saturated = true;
    } else {
      p *= d;
    }
  }
  return saturated ? std::numeric_limits<int64_t>::max() : p;
}

Value constant_value(Constant c) {
  Value v;
  v.kind = Value::Kind::kConstant;
  v.constant = std::move(c);
  return v;
}

Constant ints_constant(std::vector<int64_t> values, std::vector<int64_t> dims) {
  Constant c;
  c.dims = std::move(dims);
  c.ints = std::move(values);
  return c;
}

// An axis in [-rank, rank) made non-negative, or an error.
Result<int64_t> normalized_axis(Importer& im, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) {
    return im.invalid_here(what + " " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Axes of Unsqueeze/Squeeze/ReduceMean: an attribute before opset 13, an input from 13 on.
Result<std::vector<int64_t>> axes_of(Importer& im, int input_index) {
  if (im.has_attr("axes")) return im.attr_ints("axes", {});
  if (im.has_input(input_index)) return im.ints_input(input_index, "axes");
  return std::vector<int64_t>();
}

Status convert_constant(Importer& im) {
  const onnx::NodeProto& n = im.node();
  if (n.attribute_size() != 1) return im.invalid_here("a Constant has exactly one value attribute");
  const onnx::AttributeProto& a = n.attribute(0);
  Constant c;
  if (a.name() == "value") {
    // A tensor: possibly a weight (some exporters write weights as Constants). It is read like an
    // initializer, when a layer or a fold needs it.
    Value v;
    v.kind = Value::Kind::kInitializer;
    v.initializer = const_cast<onnx::TensorProto*>(&a.t());  // owned by the importer's ModelProto
    im.set_output(0, v);
    return Status::Ok();
  } else if (a.name() == "value_float") {
    c.floating = true;
    c.floats = {a.f()};
  } else if (a.name() == "value_floats") {
    c.floating = true;
    c.floats.assign(a.floats().begin(), a.floats().end());
    c.dims = {static_cast<int64_t>(c.floats.size())};
  } else if (a.name() == "value_int") {
    c.ints = {a.i()};
  } else if (a.name() == "value_ints") {
    c.ints.assign(a.ints().begin(), a.ints().end());
    c.dims = {static_cast<int64_t>(c.ints.size())};
  } else {
    return im.unsupported_here("Constant attribute '" + a.name() + "' is not supported");
  }
  im.set_output(0, constant_value(std::move(c)));
  return Status::Ok();
}

Status convert_identity(Importer& im) {
  WINFER_ASSIGN_OR_RETURN(const Value* v, im.input(0));
  Value copy = *v;
  im.set_output(0, copy);
  return Status::Ok();
}

Status convert_dropout(Importer& im) {
  // Inference: the identity. The mask output, if anything reads it, cannot be provided.
  if (im.node().output_size() > 1 && !im.node().output(1).empty() && im.consumers(im.node().output(1)) > 0) {
    return im.unsupported_here("its mask output is used; winfer imports Dropout as the identity (inference)");
  }
  return convert_identity(im);
}

Status convert_shape(Importer& im) {
  WINFER_ASSIGN_OR_RETURN(const Value* v, im.input(0));
  std::vector<int64_t> dims;
  if (v->kind == Value::Kind::kData) {
    dims = v->shape.dims();
  } else if (v->kind == Value::Kind::kConstant) {
    dims = v->constant.dims;
  } else if (v->kind == Value::Kind::kInitializer) {
    dims.assign(v->initializer->dims().begin(), v->initializer->dims().end());
  } else if (v->kind == Value::Kind::kPadded) {
    dims = v->shape.dims();
    dims[2] += v->pads[0] + v->pads[2];
    dims[3] += v->pads[1] + v->pads[3];
  } else {
    return im.unsupported_here("Shape of a channel shuffle's 5-D intermediate is not supported");
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = im.attr_int("start", 0), end = im.attr_int("end", rank);  // opset 15
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> values(dims.begin() + start, dims.begin() + end);
  const int64_t n = static_cast<int64_t>(values.size());
  im.set_output(0, constant_value(ints_constant(std::move(values), {n})));
  return Status::Ok();
}

Status convert_gather(Importer& im) {
  if (!im.all_inputs_constant()) {
    return im.unsupported_here("Gather on activations is not supported (only on shapes and constants)");
  }
  WINFER_ASSIGN_OR_RETURN(Constant data, im.constant_input(0, "data"));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> indices, im.ints_input(1, "indices"));
  WINFER_ASSIGN_OR_RETURN(Constant index_tensor, im.constant_input(1, "indices"));
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  if (rank == 0) return im.invalid_here("Gather on a scalar");
  WINFER_ASSIGN_OR_RETURN(int64_t axis, normalized_axis(im, im.attr_int("axis", 0), rank, "axis"));
  const int64_t outer = product({data.dims.begin(), data.dims.begin() + axis});
  const int64_t inner = product({data.dims.begin() + axis + 1, data.dims.end()});
  const int64_t extent = data.dims[axis];
  if (static_cast<double>(outer) * double(indices.size()) * double(inner) > double(kMaxFoldedValues)) {
    return im.unsupported_here("a folded constant over 2^20 values");
  }
  Constant out;
  out.floating = data.floating;
  out.dims.assign(data.dims.begin(), data.dims.begin() + axis);
  out.dims.insert(out.dims.end(), index_tensor.dims.begin(), index_tensor.dims.end());
  out.dims.insert(out.dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t index : indices) {
      if (index < -extent || index >= extent)
        return im.invalid_here("index " + std::to_string(index) + " out of range");
      if (index < 0) index += extent;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * extent + index) * inner + i;
        if (data.floating) {
          out.floats.push_back(data.floats[at]);
        } else {
          out.ints.push_back(data.ints[at]);
        }
      }
    }
  }
  im.set_output(0, constant_value(std::move(out)));
  return Status::Ok();
}

Status convert_unsqueeze(Importer& im) {
  if (!im.all_inputs_constant()) {
    return im.unsupported_here("Unsqueeze on activations is not supported (only on shapes and constants)");
  }
  WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(0, "data"));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(im, 1));
  const int64_t rank = static_cast<int64_t>(c.dims.size() + axes.size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : axes) {
    WINFER_ASSIGN_OR_RETURN(int64_t axis, normalized_axis(im, a, rank, "axis"));
    if (inserted[axis]) return im.invalid_here("axis " + std::to_string(a) + " is given twice");
    inserted[axis] = true;
  }
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(inserted[d] ? 1 : c.dims[next++]);
  c.dims = dims;
  im.set_output(0, constant_value(std::move(c)));
  return Status::Ok();
}

Status convert_squeeze(Importer& im) {
  if (!im.all_inputs_constant()) {
    return im.unsupported_here("Squeeze on activations is not supported (only on shapes and constants)");
  }
  WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(0, "data"));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> axes, axes_of(im, 1));
  const int64_t rank = static_cast<int64_t>(c.dims.size());
  std::vector<bool> removed(rank, axes.empty());
  for (int64_t a : axes) {
    WINFER_ASSIGN_OR_RETURN(int64_t axis, normalized_axis(im, a, rank, "axis"));
    removed[axis] = true;
  }
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (!removed[d] || c.dims[d] != 1) dims.push_back(c.dims[d]);
  }
  c.dims = dims;
  im.set_output(0, constant_value(std::move(c)));
  return Status::Ok();
}

Status convert_concat(Importer& im) {
  if (!im.all_inputs_constant()) return convert_concat_layer(im);
  std::vector<Constant> parts;
  for (int i = 0; i < im.input_count(); ++i) {
    WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(i, "input " + std::to_string(i)));
    parts.push_back(std::move(c));
  }
  if (parts.empty()) return im.invalid_here("Concat of nothing");
  const int64_t rank = static_cast<int64_t>(parts[0].dims.size());
  if (rank == 0) return im.invalid_here("Concat of scalars");
  WINFER_ASSIGN_OR_RETURN(int64_t axis, normalized_axis(im, im.attr_int("axis", 0), rank, "axis"));
  Constant out;
  out.floating = parts[0].floating;
  out.dims = parts[0].dims;
  out.dims[axis] = 0;
  for (const Constant& p : parts) {
    if (static_cast<int64_t>(p.dims.size()) != rank || p.floating != out.floating) {
      return im.invalid_here("Concat of constants of different ranks or types");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && p.dims[d] != out.dims[d]) return im.invalid_here("Concat of constants whose shapes differ");
    }
    out.dims[axis] += p.dims[axis];
    if (product(out.dims) > kMaxFoldedValues) return im.unsupported_here("a folded constant over 2^20 values");
  }
  const int64_t outer = product({out.dims.begin(), out.dims.begin() + axis});
  for (int64_t o = 0; o < outer; ++o) {
    for (const Constant& p : parts) {
      const int64_t block = product({p.dims.begin() + axis, p.dims.end()});
      for (int64_t i = 0; i < block; ++i) {
        if (out.floating) {
          out.floats.push_back(p.floats[o * block + i]);
        } else {
          out.ints.push_back(p.ints[o * block + i]);
        }
      }
    }
  }
  im.set_output(0, constant_value(std::move(out)));
  return Status::Ok();
}

Status convert_cast(Importer& im) {
  const int64_t to = im.attr_int("to", 0);
  const bool to_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE;
  const bool to_int = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32;
  if (!im.all_inputs_constant()) {
    WINFER_ASSIGN_OR_RETURN(const Value* v, im.data_input(0));
    if (to != onnx::TensorProto::FLOAT) {
      return im.unsupported_here("Cast of an activation to " + data_type_name(int32_t(to)) +
                                 " (winfer computes in float32)");
    }
    im.set_output(0, *v);  // float32 to float32
    return Status::Ok();
  }
  if (!to_float && !to_int) return im.unsupported_here("Cast to " + data_type_name(int32_t(to)) + " is not supported");
  WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(0, "input"));
  Constant out;
  out.dims = c.dims;
  out.floating = to_float;
  for (int64_t i = 0; i < c.size(); ++i) {
    if (to_float) {
      out.floats.push_back(to == onnx::TensorProto::FLOAT ? double(float(c.at(i))) : c.at(i));
    } else {
      if (c.floating && !(std::fabs(c.floats[i]) < 9.2e18)) {
        return im.invalid_here("Cast of " + std::to_string(c.floats[i]) + " to an integer");
      }
      out.ints.push_back(c.floating ? static_cast<int64_t>(c.floats[i]) : c.ints[i]);  // toward zero, as ONNX
    }
  }
  im.set_output(0, constant_value(std::move(out)));
  return Status::Ok();
}

// Element-wise arithmetic on constants, with NumPy broadcasting.
template <typename Operation>
Status fold_binary(Importer& im, Operation operation) {
  WINFER_ASSIGN_OR_RETURN(Constant a, im.constant_input(0, "A"));
  WINFER_ASSIGN_OR_RETURN(Constant b, im.constant_input(1, "B"));
  const size_t rank = std::max(a.dims.size(), b.dims.size());
  std::vector<int64_t> da(rank - a.dims.size(), 1), db(rank - b.dims.size(), 1), dims(rank);
  da.insert(da.end(), a.dims.begin(), a.dims.end());
  db.insert(db.end(), b.dims.begin(), b.dims.end());
  for (size_t d = 0; d < rank; ++d) {
    if (da[d] != db[d] && da[d] != 1 && db[d] != 1) return im.invalid_here("shapes do not broadcast");
    dims[d] = da[d] == 1 ? db[d] : da[d];
  }
  const int64_t count = product(dims);
  if (count > kMaxFoldedValues) return im.unsupported_here("a folded constant over 2^20 values");
  Constant out;
  out.dims = dims;
  out.floating = a.floating || b.floating;
  for (int64_t i = 0; i < count; ++i) {
    int64_t ia = 0, ib = 0, rest = i;
    int64_t stride_a = 1, stride_b = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t coord = rest % dims[d];
      rest /= dims[d];
      ia += (da[d] == 1 ? 0 : coord) * stride_a;
      ib += (db[d] == 1 ? 0 : coord) * stride_b;
      stride_a *= da[d];
      stride_b *= db[d];
    }
    if (out.floating) {
      out.floats.push_back(operation(a.at(ia), b.at(ib)));
    } else {
      int64_t value = 0;
      WINFER_RETURN_IF_ERROR(operation(im, a.ints[ia], b.ints[ib], &value));
      out.ints.push_back(value);
    }
  }
  im.set_output(0, constant_value(std::move(out)));
  return Status::Ok();
}

// One arithmetic operator for doubles and for int64 (whose division truncates, as ONNX's).
struct Arithmetic {
  char op;
  double operator()(double x, double y) const {
    switch (op) {
      case '+': return x + y;
      case '-': return x - y;
      case '*': return x * y;
      default: return x / y;
    }
  }
  Status operator()(Importer& im, int64_t x, int64_t y, int64_t* out) const {
    if (op == '/' && y == 0) return im.invalid_here("integer division by zero");
    bool overflow = false;
    switch (op) {
      case '+': overflow = __builtin_add_overflow(x, y, out); break;
      case '-': overflow = __builtin_sub_overflow(x, y, out); break;
      case '*': overflow = __builtin_mul_overflow(x, y, out); break;
      default:
        overflow = x == std::numeric_limits<int64_t>::min() && y == -1;
        if (!overflow) *out = x / y;
    }
    if (overflow)
      return im.invalid_here("integer overflow in " + std::to_string(x) + " " + op + " " + std::to_string(y));
    return Status::Ok();
  }
};

Status convert_add(Importer& im) {
  if (!im.all_inputs_constant()) return convert_add_layer(im);
  return fold_binary(im, Arithmetic{'+'});
}

Status convert_mul(Importer& im) {
  if (!im.all_inputs_constant()) return convert_mul_layer(im);
  return fold_binary(im, Arithmetic{'*'});
}

template <char kOp>
Status convert_arithmetic(Importer& im) {
  if (!im.all_inputs_constant()) {
    return im.unsupported_here(std::string(im.node().op_type()) +
                               " on activations is not supported (only on shapes and constants)");
  }
  return fold_binary(im, Arithmetic{kOp});
}

Status convert_constant_of_shape(Importer& im) {
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> dims, im.ints_input(0, "shape"));
  for (int64_t d : dims) {
    if (d < 0) return im.invalid_here("negative dim in shape");
  }
  const int64_t count = product(dims);
  if (count > kMaxFoldedValues) return im.unsupported_here("a folded constant over 2^20 values");
  Constant value;
  value.floating = true;
  value.floats = {0.0};
  if (const onnx::TensorProto* t = im.attr_tensor("value")) {
    if (t->data_type() == onnx::TensorProto::FLOAT || t->data_type() == onnx::TensorProto::DOUBLE) {
      WINFER_ASSIGN_OR_RETURN(value.floats, im.file().read_doubles(*t, "ConstantOfShape value"));
    } else {
      value.floating = false;
      WINFER_ASSIGN_OR_RETURN(value.ints, im.file().read_ints(*t, "ConstantOfShape value"));
    }
    if (value.size() != 1) return im.invalid_here("'value' must hold one value");
  }
  Constant out;
  out.dims = dims;
  out.floating = value.floating;
  if (value.floating) {
    out.floats.assign(size_t(count), value.floats[0]);
  } else {
    out.ints.assign(size_t(count), value.ints[0]);
  }
  im.set_output(0, constant_value(std::move(out)));
  return Status::Ok();
}

Status convert_range(Importer& im) {
  WINFER_ASSIGN_OR_RETURN(Constant start, im.constant_input(0, "start"));
  WINFER_ASSIGN_OR_RETURN(Constant limit, im.constant_input(1, "limit"));
  WINFER_ASSIGN_OR_RETURN(Constant delta, im.constant_input(2, "delta"));
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1 || delta.at(0) == 0) {
    return im.invalid_here("Range takes three scalars and a non-zero delta");
  }
  if (start.floating != limit.floating || start.floating != delta.floating) {
    return im.invalid_here("Range of start, limit and delta of different types");
  }
  const double count = std::max(std::ceil((limit.at(0) - start.at(0)) / delta.at(0)), 0.0);
  if (count > double(kMaxFoldedValues)) return im.unsupported_here("a folded constant over 2^20 values");
  Constant out;
  out.floating = start.floating;
  out.dims = {static_cast<int64_t>(count)};
  for (int64_t i = 0; i < int64_t(count); ++i) {
    if (out.floating) {
      out.floats.push_back(start.at(0) + double(i) * delta.at(0));
    } else {
      int64_t step = 0, value = 0;
      if (__builtin_mul_overflow(i, delta.ints[0], &step) || __builtin_add_overflow(start.ints[0], step, &value)) {
        return im.invalid_here("integer overflow in Range");
      }
      out.ints.push_back(value);
    }
  }
  im.set_output(0, constant_value(std::move(out)));
  return Status::Ok();
}

// Slice's starts/ends/axes/steps: attributes before opset 10, inputs after.
struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;
};

Status convert_slice(Importer& im) {
  if (!im.all_inputs_constant()) return convert_slice_layer(im);
  WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(0, "data"));
  SliceSpec s;
  if (im.opset() < 10) {
    s.starts = im.attr_ints("starts", {});
    s.ends = im.attr_ints("ends", {});
    s.axes = im.attr_ints("axes", {});
  } else {
    WINFER_ASSIGN_OR_RETURN(s.starts, im.ints_input(1, "starts"));
    WINFER_ASSIGN_OR_RETURN(s.ends, im.ints_input(2, "ends"));
    if (im.has_input(3)) {
      WINFER_ASSIGN_OR_RETURN(s.axes, im.ints_input(3, "axes"));
    }
    if (im.has_input(4)) {
      WINFER_ASSIGN_OR_RETURN(s.steps, im.ints_input(4, "steps"));
    }
  }
  const int64_t rank = static_cast<int64_t>(c.dims.size());
  if (s.axes.empty()) {
    for (size_t i = 0; i < s.starts.size(); ++i) s.axes.push_back(int64_t(i));
  }
  if (s.steps.empty()) s.steps.assign(s.starts.size(), 1);
  if (s.ends.size() != s.starts.size() || s.axes.size() != s.starts.size() || s.steps.size() != s.starts.size()) {
    return im.invalid_here("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> begin(rank, 0), step(rank, 1), extent = c.dims;
  for (size_t i = 0; i < s.starts.size(); ++i) {
    WINFER_ASSIGN_OR_RETURN(int64_t axis, normalized_axis(im, s.axes[i], rank, "axis"));
    if (s.steps[i] == 0) return im.invalid_here("Slice with step 0");
    // ONNX's clamping: [0, dim] for a positive step, [-1, dim - 1] for a negative one (the
    // exporters reverse pads with step -1 and end INT64_MIN).
    const int64_t dim = c.dims[axis], st = s.steps[i];
    int64_t b = s.starts[i] < 0 ? s.starts[i] + dim : s.starts[i];
    int64_t e = s.ends[i] < 0 ? (s.ends[i] < -dim ? -1 - (st > 0) : s.ends[i] + dim) : s.ends[i];
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    const int64_t count = st > 0 ? (e > b ? (e - b + st - 1) / st : 0) : (b > e ? (b - e - st - 1) / -st : 0);
    begin[axis] = b;
    step[axis] = st;
    extent[axis] = count;
  }
  Constant out;
  out.floating = c.floating;
  out.dims = extent;
  const int64_t count = product(extent);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, at = 0, stride = 1;
    for (int64_t d = rank; d-- > 0;) {
      const int64_t coord = begin[d] + (rest % extent[d]) * step[d];
      rest /= extent[d];
      at += coord * stride;
      stride *= c.dims[d];
    }
    if (out.floating) {
      out.floats.push_back(c.floats[at]);
    } else {
      out.ints.push_back(c.ints[at]);
    }
  }
  im.set_output(0, constant_value(std::move(out)));
  return Status::Ok();
}

Status convert_reshape(Importer& im) {
  if (!im.all_inputs_constant()) return convert_reshape_layer(im);
  WINFER_ASSIGN_OR_RETURN(Constant c, im.constant_input(0, "data"));
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> target, im.ints_input(1, "shape"));
  int64_t infer_at = -1;
  std::vector<int64_t> known_dims;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == 0) target[d] = d < c.dims.size() ? c.dims[d] : 0;
    if (target[d] == -1) {
      if (infer_at >= 0) return im.invalid_here("two -1 dims in the target shape");
      infer_at = int64_t(d);
    } else if (target[d] < 0) {
      return im.invalid_here("a negative dim in the target shape");
    } else {
      known_dims.push_back(target[d]);
    }
  }
  const int64_t known = product(known_dims);
  if (infer_at >= 0 && known > 0) target[infer_at] = c.size() / known;
  if (product(target) != c.size()) return im.invalid_here("Reshape of a constant to a different element count");
  c.dims = target;
  im.set_output(0, constant_value(std::move(c)));
  return Status::Ok();
}

}  // namespace

void add_shape_ops(ConverterTable& table) {
  table["Constant"] = convert_constant;
  table["Identity"] = convert_identity;
  table["Dropout"] = convert_dropout;
  table["Shape"] = convert_shape;
  table["Gather"] = convert_gather;
  table["Unsqueeze"] = convert_unsqueeze;
  table["Squeeze"] = convert_squeeze;
  table["Concat"] = convert_concat;
  table["Cast"] = convert_cast;
  table["Add"] = convert_add;
  table["Sub"] = convert_arithmetic<'-'>;
  table["Mul"] = convert_mul;
  table["Div"] = convert_arithmetic<'/'>;
  table["ConstantOfShape"] = convert_constant_of_shape;
  table["Range"] = convert_range;
  table["Slice"] = convert_slice;
  table["Reshape"] = convert_reshape;
}

}  // namespace winfer::onnx_import
