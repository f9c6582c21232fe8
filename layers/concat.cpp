#include "layers/concat.h"

#include "kernels/cpu/channel_ops.h"

#include "layers/channel_rows.h"

namespace winfer {
namespace {

class ConcatKernel : public Kernel {
 public:
  ConcatKernel(int64_t rows, std::vector<int64_t> channels)
      : rows_(rows), channels_(std::move(channels)), sources_(channels_.size()) {}
  // An input whose storage is its own channel slice of the output (the session placed it there
  // and its producer wrote it with the output's pixel stride: docs/MEMORY.md, "Concat without
  // copies") is in place already and not copied.
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    int64_t offset = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      sources_[i] = in[i]->data() == out[0]->data() + offset ? nullptr : in[i]->data();
      offset += channels_[i];
    }
    concat_channels_nhwc(rows_, static_cast<int>(in.size()), sources_.data(), channels_.data(), out[0]->data(),
                         threads);
  }

 private:
  int64_t rows_;
  std::vector<int64_t> channels_;  // dim 1 of each input
  // Sized once so that running allocates nothing. A kernel belongs to one session, which runs
  // one inference at a time, so this scratch is never shared between two runs.
  mutable std::vector<const float*> sources_;
};

class ConcatOp : public Op {
 public:
  const char* type() const override { return "concat"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    const Shape& first = inputs[0];
    WINFER_RETURN_IF_ERROR(expect_rank_2_or_4(first, "input 0"));
    Shape out = first;
    out[1] = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      WINFER_RETURN_IF_ERROR(check_compatible(first, inputs[i], i));
      out[1] += inputs[i][1];
    }
    *outputs = {out};
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                          const CompileOptions&) const override {
    std::vector<int64_t> channels;
    for (const Shape& s : inputs) channels.push_back(s[1]);
    return std::unique_ptr<Kernel>(new ConcatKernel(channel_rows(inputs[0]), std::move(channels)));
  }

 private:
  // Input i may differ from input 0 only in dim 1.
  static Status check_compatible(const Shape& first, const Shape& other, size_t i) {
    const std::string prefix =
        "input " + std::to_string(i) + " " + other.to_string() + " does not match input 0 " + first.to_string();
    if (other.rank() != first.rank()) return shape_mismatch(prefix + ": the ranks differ");
    for (int d = 0; d < first.rank(); ++d) {
      if (d != 1 && other[d] != first[d]) return shape_mismatch(prefix + ": only dim 1 may differ");
    }
    return Status::Ok();
  }
};

}  // namespace

Result<std::unique_ptr<Op>> create_concat(const Attrs& attrs) {
  int64_t dim = 1;
  WINFER_RETURN_IF_ERROR(attrs.get_int("dim", &dim, 1));
  if (dim != 1) {
    return unsupported("attribute 'dim' must be 1 (channels), got " + std::to_string(dim));
  }
  return std::unique_ptr<Op>(new ConcatOp());
}

}  // namespace winfer
