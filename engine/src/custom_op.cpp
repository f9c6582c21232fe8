// Custom operators (winfer/custom_op.h): the embedder's CustomOp behind the engine's Op and
// Kernel interfaces, registered in the process's operator registry (op_registry.h).
#include "winfer/custom_op.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/src/attrs.h"
#include "engine/src/op_registry.h"
#include "kernels/cpu/layout.h"

namespace winfer {

bool CustomOpAttrs::has(const std::string& key) const { return attrs_->has(key); }
Status CustomOpAttrs::get_int(const std::string& key, int64_t* out) const { return attrs_->get_int(key, out); }
Status CustomOpAttrs::get_int(const std::string& key, int64_t* out, int64_t fallback) const {
  return attrs_->get_int(key, out, fallback);
}
Status CustomOpAttrs::get_float(const std::string& key, double* out, double fallback) const {
  return attrs_->get_float(key, out, fallback);
}
Status CustomOpAttrs::get_bool(const std::string& key, bool* out, bool fallback) const {
  return attrs_->get_bool(key, out, fallback);
}
Status CustomOpAttrs::get_string(const std::string& key, std::string* out, const std::string& fallback) const {
  return attrs_->get_string(key, out, fallback);
}
Status CustomOpAttrs::get_ints(const std::string& key, std::vector<int64_t>* out,
                               const std::vector<size_t>& allowed_sizes) const {
  return attrs_->get_ints(key, out, allowed_sizes);
}

namespace {

// NCHW scratch copies of a layer's rank-4 tensors, placed one after another in its workspace.
struct Scratch {
  std::vector<size_t> input_offset, output_offset;  // bytes; SIZE_MAX: used in place
  size_t bytes = 0;
};

constexpr size_t kInPlace = ~size_t(0);

size_t aligned(size_t bytes) { return (bytes + Tensor::kAlignment - 1) / Tensor::kAlignment * Tensor::kAlignment; }

Scratch plan_scratch(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs, Layout layout) {
  Scratch s;
  auto place = [&](const Shape& shape, std::vector<size_t>* offsets) {
    if (layout != Layout::kNCHW || shape.rank() != 4) return offsets->push_back(kInPlace);
    offsets->push_back(s.bytes);
    s.bytes += aligned(static_cast<size_t>(shape.numel()) * sizeof(float));
  };
  for (const Shape& shape : inputs) place(shape, &s.input_offset);
  for (const Shape& shape : outputs) place(shape, &s.output_offset);
  return s;
}

class CustomKernel : public Kernel {
 public:
  CustomKernel(std::shared_ptr<const CustomOp> op, const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
               Layout layout)
      : op_(std::move(op)),
        layout_(layout),
        scratch_(plan_scratch(inputs, outputs, layout)),
        in_views_(inputs.size()),
        out_views_(outputs.size()) {
    for (const Tensor& t : in_views_) in_ptrs_.push_back(&t);
    for (Tensor& t : out_views_) out_ptrs_.push_back(&t);
  }

  size_t workspace_bytes() const override { return scratch_.bytes; }
  std::string describe() const override { return layout_ == Layout::kNCHW ? "custom (NCHW)" : "custom (NHWC)"; }

  // The session's tensors are NHWC (rank 4) or plain; the op sees views in its own layout.
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void* workspace,
           int threads) const override {
    char* base = static_cast<char*>(workspace);
    for (size_t i = 0; i < in.size(); ++i) {
      in_views_[i] = view_of(*in[i], base, scratch_.input_offset[i]);
      if (scratch_.input_offset[i] != kInPlace) {
        const Shape& s = in[i]->shape();
        nhwc_to_nchw(s.n(), s.c(), s.h(), s.w(), in[i]->data(), in_views_[i].data(), threads);
      }
    }
    for (size_t i = 0; i < out.size(); ++i) out_views_[i] = view_of(*out[i], base, scratch_.output_offset[i]);
    CustomOpContext context;
    context.threads = threads;
    op_->run(in_ptrs_, out_ptrs_, context);
    for (size_t i = 0; i < out.size(); ++i) {
      if (scratch_.output_offset[i] != kInPlace) {
        const Shape& s = out[i]->shape();
        nchw_to_nhwc(s.n(), s.c(), s.h(), s.w(), out_views_[i].data(), out[i]->data(), threads);
      }
    }
  }

 private:
  // The tensor as the op sees it: the session's own (kInPlace) or its NCHW copy in the workspace.
  Tensor view_of(const Tensor& t, char* base, size_t offset) const {
    if (offset == kInPlace) {
      return Tensor::view(const_cast<float*>(t.data()), t.shape(),
                          t.shape().rank() == 4 ? Layout::kNHWC : Layout::kPlain);
    }
    return Tensor::view(reinterpret_cast<float*>(base + offset), t.shape(), Layout::kNCHW);
  }

  std::shared_ptr<const CustomOp> op_;
  Layout layout_;
  Scratch scratch_;
  // The views run() hands the op, rebuilt in place each run so that running allocates nothing
  // (a kernel belongs to one session, which runs one inference at a time).
  mutable std::vector<Tensor> in_views_, out_views_;
  std::vector<const Tensor*> in_ptrs_;
  std::vector<Tensor*> out_ptrs_;
};

// The engine's Op for one layer of a custom type.
class CustomOpAdapter : public Op {
 public:
  CustomOpAdapter(std::string type, std::shared_ptr<const CustomOp> op, int num_outputs, Layout layout)
      : type_(std::move(type)), op_(std::move(op)), num_outputs_(num_outputs), layout_(layout) {}

  const char* type() const override { return type_.c_str(); }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    outputs->clear();
    WINFER_RETURN_IF_ERROR(op_->infer_shapes(inputs, outputs));
    if (static_cast<int>(outputs->size()) != num_outputs_) {
      return internal_error("custom op '" + type_ + "': infer_shapes gave " + std::to_string(outputs->size()) +
                            " output shape(s), the op declares " + std::to_string(num_outputs_) +
                            " (CustomOpDefinition::num_outputs): a bug in the custom op");
    }
    for (const Shape& s : *outputs) {
      bool valid = s.rank() > 0;
      for (int d = 0; d < s.rank(); ++d) valid = valid && s[d] > 0;
      if (!valid) {
        return internal_error("custom op '" + type_ + "': infer_shapes gave the output shape " + s.to_string() +
                              "; every output needs at least one dimension, each >= 1: a bug in the custom op");
      }
    }
    return Status::Ok();
  }

  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions&) const override {
    return std::unique_ptr<Kernel>(new CustomKernel(op_, inputs, outputs, layout_));
  }

  int64_t flops(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs) const override {
    return op_->flops(inputs, outputs);
  }

 private:
  std::string type_;
  std::shared_ptr<const CustomOp> op_;
  int num_outputs_;
  Layout layout_;
};

bool is_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

Status check_definition(const CustomOpDefinition& d) {
  const std::string what = "register_custom_op('" + d.type + "'): ";
  if (!is_identifier(d.type)) {
    return invalid_argument(what + "the type must be a non-empty identifier (letters, digits, '_')");
  }
  if (!d.create) return invalid_argument(what + "create is empty: give the factory of the op");
  if (d.min_inputs < 1 || (d.max_inputs != -1 && d.max_inputs < d.min_inputs)) {
    return invalid_argument(what + "inputs must be min_inputs >= 1 and max_inputs >= min_inputs (or -1), got " +
                            std::to_string(d.min_inputs) + " and " + std::to_string(d.max_inputs));
  }
  if (d.num_outputs < 1) {
    return invalid_argument(what + "num_outputs must be >= 1, got " + std::to_string(d.num_outputs));
  }
  if (d.layout != Layout::kNCHW && d.layout != Layout::kNHWC) {
    return invalid_argument(what + "layout must be kNCHW or kNHWC, got " + layout_name(d.layout));
  }
  return Status::Ok();
}

}  // namespace

Status register_custom_op(const CustomOpDefinition& definition) {
  WINFER_RETURN_IF_ERROR(check_definition(definition));
  OpEntry entry;
  entry.type = definition.type;
  entry.min_inputs = definition.min_inputs;
  entry.max_inputs = definition.max_inputs;
  const int outputs = definition.num_outputs;
  entry.num_outputs = [outputs](const Attrs&) { return outputs; };
  const std::string type = definition.type;
  const Layout layout = definition.layout;
  auto create = definition.create;
  entry.create = [type, layout, outputs, create](const Attrs& attrs) -> Result<std::unique_ptr<Op>> {
    auto op = create(CustomOpAttrs(attrs));
    if (!op.ok()) return op.status();
    if (!op.value()) return internal_error("custom op '" + type + "': create returned a null op");
    std::shared_ptr<const CustomOp> shared(std::move(op).value());
    return std::unique_ptr<Op>(new CustomOpAdapter(type, std::move(shared), outputs, layout));
  };
  const Status added = op_registry().add_custom(std::move(entry));
  if (!added.ok()) return invalid_argument("register_custom_op('" + type + "'): " + added.message());
  return Status::Ok();
}

}  // namespace winfer
