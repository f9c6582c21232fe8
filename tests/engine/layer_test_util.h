// Helpers for the layer tests: build an op from a few attributes through the real registry,
// feed it parameters from a map, run it on NCHW data the way the CPU backend would (rank-4
// tensors converted to NHWC storage, everything else plain), and compare its output with a
// float64 reference (layer_reference.h, shared with the op checker).
//
// The layout conversions here are written out on purpose instead of calling the kernels'
// nchw_to_nhwc/nhwc_to_nchw: flatten uses those, and a test must not share code with what
// it checks.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/src/attrs.h"
#include "engine/src/op.h"
#include "engine/src/op_registry.h"
#include "kernels/cpu/conv_algorithm.h"
#include "layer_reference.h"
#include "winfer/shape.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {
namespace layer_test {

// ---- attributes -------------------------------------------------------------------------

inline AttrValue int_attr(int64_t v) { return AttrValue::scalar(std::to_string(v)); }
inline AttrValue text_attr(const std::string& v) { return AttrValue::scalar(v); }
inline AttrValue bool_attr(bool v) { return AttrValue::scalar(v ? "true" : "false"); }
inline AttrValue ints_attr(std::initializer_list<int64_t> values) {
  std::vector<std::string> items;
  for (int64_t v : values) items.push_back(std::to_string(v));
  return AttrValue::list(std::move(items));
}

using AttrList = std::vector<std::pair<std::string, AttrValue>>;

inline Attrs make_attrs(const AttrList& list) {
  Attrs attrs;
  for (const auto& kv : list) attrs.set(kv.first, kv.second);
  return attrs;
}

// ---- ops --------------------------------------------------------------------------------

// Creates an op through the built-in registry, as the model loader does. Also fails when the
// factory left an attribute unread (the loader would report it as unknown).
inline Result<std::unique_ptr<Op>> try_create_op(const std::string& type, const AttrList& list) {
  const auto* info = builtin_op_registry().find(type);
  if (info == nullptr) return not_found("no op '" + type + "' in the registry");
  Attrs attrs = make_attrs(list);
  Result<std::unique_ptr<Op>> op = info->create(attrs);
  if (op.ok() && !attrs.unread_keys().empty()) {
    return internal_error("factory of '" + type + "' did not read attribute '" + attrs.unread_keys()[0] + "'");
  }
  return op;
}

// The error message of a factory that must fail ("" when it unexpectedly succeeded).
inline std::string create_error(const std::string& type, const AttrList& list) {
  Result<std::unique_ptr<Op>> op = try_create_op(type, list);
  return op.ok() ? std::string() : op.status().message();
}

inline std::unique_ptr<Op> make_op(const std::string& type, const AttrList& list = {}) {
  Result<std::unique_ptr<Op>> op = try_create_op(type, list);
  INFO("creating ", type, ": ", op.status().to_string());
  REQUIRE(op.ok());
  return std::move(op).value();
}

// The error message of infer_shapes ("" when it unexpectedly succeeded).
inline std::string shape_error(const Op& op, const std::vector<Shape>& inputs) {
  std::vector<Shape> outputs;
  Status s = op.infer_shapes(inputs, &outputs);
  return s.ok() ? std::string() : s.message();
}

// ---- parameters -------------------------------------------------------------------------

// A ParamSource backed by a map, with the real source's checks and messages.
class MapParams : public ParamSource {
 public:
  void add(const std::string& name, const HostTensor& t) { tensors_[name] = t; }
  const HostTensor& at(const std::string& name) const { return tensors_.at(name); }
  // Adds a random tensor and returns it.
  const HostTensor& add_random(const std::string& name, const Shape& shape, float scale = 1.f, float offset = 0.f) {
    tensors_[name] = random_tensor(shape, scale, offset);
    return tensors_[name];
  }

  Status get(const std::string& name, const Shape& expected, Tensor* out) override {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) return not_found("missing parameter '" + name + "'");
    const HostTensor& t = it->second;
    if (t.shape != expected) {
      return shape_mismatch("parameter '" + name + "' has shape " + t.shape.to_string() + ", expected " +
                            expected.to_string());
    }
    *out = Tensor::allocate(t.shape);
    std::copy(t.data.begin(), t.data.end(), out->data());
    return Status::Ok();
  }

 private:
  std::map<std::string, HostTensor> tensors_;
};

// Infers shapes and loads the op's parameters (named "<prefix>.<param>"); REQUIREs success.
inline std::vector<Shape> prepare(Op& op, const std::vector<Shape>& inputs, MapParams& params,
                                  const std::string& prefix = "p") {
  std::vector<Shape> outputs;
  Status s = op.infer_shapes(inputs, &outputs);
  INFO("infer_shapes: ", s.to_string());
  REQUIRE(s.ok());
  s = op.load_params(prefix, inputs, params);
  INFO("load_params: ", s.to_string());
  REQUIRE(s.ok());
  return outputs;
}

// ---- layouts ----------------------------------------------------------------------------

// Logical data -> CPU storage (NHWC for rank 4).
inline Tensor to_storage(const HostTensor& t) {
  const Shape& s = t.shape;
  if (s.rank() != 4) {
    Tensor out = Tensor::allocate(s, Layout::kPlain);
    std::copy(t.data.begin(), t.data.end(), out.data());
    return out;
  }
  Tensor out = Tensor::allocate(s, Layout::kNHWC);
  const int64_t C = s.c(), HW = s.h() * s.w();
  for (int64_t n = 0; n < s.n(); ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < HW; ++p) out.data()[(n * HW + p) * C + c] = t.data[(n * C + c) * HW + p];
  return out;
}

// CPU storage -> logical data.
inline HostTensor from_storage(const Tensor& t) {
  const Shape& s = t.shape();
  HostTensor out{s, std::vector<float>(static_cast<size_t>(s.numel()))};
  if (s.rank() != 4) {
    std::copy(t.data(), t.data() + s.numel(), out.data.begin());
    return out;
  }
  const int64_t C = s.c(), HW = s.h() * s.w();
  for (int64_t n = 0; n < s.n(); ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < HW; ++p) out.data[(n * C + c) * HW + p] = t.data()[(n * HW + p) * C + c];
  return out;
}

// ---- running ----------------------------------------------------------------------------

struct RunOptions {
  const ConvAlgorithm* conv_algorithm = nullptr;  // null: "direct"
  int threads = 1;
  std::string* describe = nullptr;  // receives Kernel::describe()
};

// Compiles and runs a prepared op (see prepare()) on logical inputs; returns logical outputs.
// Outputs start as NaN so that an element the kernel never writes cannot pass.
inline std::vector<HostTensor> run_op(const Op& op, const std::vector<HostTensor>& inputs,
                                      const RunOptions& options = {}) {
  std::vector<Shape> in_shapes, out_shapes;
  for (const HostTensor& t : inputs) in_shapes.push_back(t.shape);
  Status s = op.infer_shapes(in_shapes, &out_shapes);
  INFO("infer_shapes: ", s.to_string());
  REQUIRE(s.ok());

  CompileOptions compile_options;
  compile_options.conv_algorithm =
      options.conv_algorithm != nullptr ? options.conv_algorithm : find_conv_algorithm("direct");
  compile_options.threads = options.threads;
  REQUIRE(compile_options.conv_algorithm != nullptr);
  Result<std::unique_ptr<Kernel>> kernel = op.compile(in_shapes, out_shapes, compile_options);
  INFO("compile: ", kernel.status().to_string());
  REQUIRE(kernel.ok());
  if (options.describe != nullptr) *options.describe = kernel.value()->describe();

  std::vector<Tensor> in_storage, out_storage;
  for (const HostTensor& t : inputs) in_storage.push_back(to_storage(t));
  for (const Shape& shape : out_shapes) {
    Tensor t = Tensor::allocate(shape, shape.rank() == 4 ? Layout::kNHWC : Layout::kPlain);
    std::fill(t.data(), t.data() + t.numel(), std::numeric_limits<float>::quiet_NaN());
    out_storage.push_back(t);
  }
  // The workspace is 64-byte aligned like the planner's arena offsets.
  const size_t workspace_floats = (kernel.value()->workspace_bytes() + sizeof(float) - 1) / sizeof(float);
  Tensor workspace;
  if (workspace_floats > 0) workspace = Tensor::allocate(Shape{static_cast<int64_t>(workspace_floats)});

  std::vector<const Tensor*> in_ptrs;
  std::vector<Tensor*> out_ptrs;
  for (const Tensor& t : in_storage) in_ptrs.push_back(&t);
  for (Tensor& t : out_storage) out_ptrs.push_back(&t);
  kernel.value()->run(in_ptrs, out_ptrs, workspace.empty() ? nullptr : workspace.data(), options.threads);

  std::vector<HostTensor> outputs;
  for (const Tensor& t : out_storage) outputs.push_back(from_storage(t));
  return outputs;
}

// Single input, single output, no parameters: create, run, return.
inline HostTensor run_simple(const std::string& type, const AttrList& attrs, const HostTensor& input,
                             const RunOptions& options = {}) {
  std::unique_ptr<Op> op = make_op(type, attrs);
  MapParams none;
  prepare(*op, {input.shape}, none);
  return run_op(*op, {input}, options)[0];
}

// ---- comparing --------------------------------------------------------------------------

// |actual - expected| <= tol * (1 + |expected|) everywhere (NaN fails). One CHECK per call,
// naming the worst element, so a broken kernel does not print thousands of lines.
inline void check_close(const HostTensor& actual, const RefTensor& expected, double tol, const std::string& what = "") {
  INFO(what);
  REQUIRE(actual.shape == expected.shape);
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    const double a = actual.data[i], e = expected.data[i];
    const double excess = std::fabs(a - e) / (tol * (1 + std::fabs(e)));
    if (!(excess <= 1.0)) {
      ++bad;
      if (worst < 0 || !(excess <= worst_excess)) {
        worst = static_cast<int64_t>(i);
        worst_excess = std::isnan(excess) ? std::numeric_limits<double>::infinity() : excess;
      }
    }
  }
  if (bad > 0) {
    const size_t w = static_cast<size_t>(worst);
    FAIL_CHECK(bad << " of " << actual.data.size() << " elements differ; worst at " << index_text(actual.shape, worst)
                   << ": got " << actual.data[w] << ", expected " << expected.data[w] << " (tol " << tol << ")");
  }
}

inline void check_close(const HostTensor& actual, const HostTensor& expected, double tol,
                        const std::string& what = "") {
  check_close(actual, to_ref(expected), tol, what);
}

// Tolerances: data movement must be exact; sums of a few hundred float products agree with
// float64 to a few 1e-6 relative to their magnitude.
constexpr double kExact = 1e-7;
constexpr double kSumTol = 2e-5;

}  // namespace layer_test
}  // namespace winfer
