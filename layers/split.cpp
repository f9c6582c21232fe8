#include "layers/split.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <string>

#include "kernels/cpu/channel_ops.h"

#include "layers/channel_rows.h"
#include "layers/layer_util.h"

namespace winfer {
namespace {

// Upper bound on the number of pieces (also the longest accepted `sizes` list).
constexpr size_t kMaxPieces = 256;

struct SplitAttrs {
  int64_t chunks = 0;          // > 0 when given
  std::vector<int64_t> sizes;  // non-empty when given
};

// Attrs::get_ints accepts lists of listed lengths only; `sizes` may have any length, so all
// lengths up to kMaxPieces are allowed and the (long) "expected" text of a failure is
// replaced by a short one.
Status read_sizes(const Attrs& attrs, std::vector<int64_t>* sizes) {
  std::vector<size_t> lengths(kMaxPieces);
  std::iota(lengths.begin(), lengths.end(), size_t{1});
  Status s = attrs.get_ints("sizes", sizes, lengths);
  if (s.ok() || s.code() == ErrorCode::kNotFound) return s;
  const std::string& m = s.message();
  const size_t got = m.find(", got ");
  return invalid_argument("attribute 'sizes': expected a list of at most " + std::to_string(kMaxPieces) + " integers" +
                          (got == std::string::npos ? std::string() : m.substr(got)));
}

Status read_split_attrs(const Attrs& attrs, SplitAttrs* out) {
  SplitAttrs a;
  int64_t dim = 1;
  WINFER_RETURN_IF_ERROR(attrs.get_int("dim", &dim, 1));
  if (dim != 1) return unsupported("attribute 'dim' must be 1 (channels), got " + std::to_string(dim));
  const bool has_chunks = attrs.has("chunks");
  const bool has_sizes = attrs.has("sizes");
  if (has_chunks == has_sizes) {
    // Read both (if present) so that neither is also reported as an unknown attribute.
    (void)attrs.get_int("chunks", &a.chunks, 0);
    (void)read_sizes(attrs, &a.sizes);
    return invalid_argument(has_chunks ? "give either attribute 'chunks' or 'sizes', not both"
                                       : "missing attribute 'chunks' or 'sizes' (exactly one is required)");
  }
  if (has_chunks) {
    WINFER_RETURN_IF_ERROR(attrs.get_int("chunks", &a.chunks));
    WINFER_RETURN_IF_ERROR(expect_at_least("chunks", a.chunks, 1));
    if (a.chunks > static_cast<int64_t>(kMaxPieces)) {
      return invalid_argument("attribute 'chunks' must be at most " + std::to_string(kMaxPieces) + ", got " +
                              std::to_string(a.chunks));
    }
  } else {
    WINFER_RETURN_IF_ERROR(read_sizes(attrs, &a.sizes));
    for (int64_t size : a.sizes) WINFER_RETURN_IF_ERROR(expect_at_least("sizes", size, 1));
  }
  *out = a;
  return Status::Ok();
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

// torch.chunk's piece sizes for `channels` split in `chunks`: ceil(C / chunks) each, the
// last one what is left. This can give fewer pieces than asked (chunk(5 channels, 4) gives
// 2,2,1), which a graph with a fixed number of outputs cannot accept.
Status chunk_sizes(int64_t channels, int64_t chunks, std::vector<int64_t>* sizes) {
  const int64_t piece = (channels + chunks - 1) / chunks;
  sizes->clear();
  for (int64_t start = 0; start < channels; start += piece) sizes->push_back(std::min(piece, channels - start));
  if (static_cast<int64_t>(sizes->size()) == chunks) return Status::Ok();
  return shape_mismatch("chunks = " + std::to_string(chunks) + " of " + std::to_string(channels) +
                        " channels: PyTorch's chunk makes pieces of ceil(" + std::to_string(channels) + "/" +
                        std::to_string(chunks) + ") = " + std::to_string(piece) + " channels, which gives " +
                        std::to_string(sizes->size()) + " pieces (" + join(*sizes) + "), not " +
                        std::to_string(chunks) + "; use 'sizes' instead");
}

class SplitKernel : public Kernel {
 public:
  SplitKernel(int64_t rows, std::vector<int64_t> sizes)
      : rows_(rows), sizes_(std::move(sizes)), strides_(sizes_.size(), 0) {}
  // Any piece may be a channel slice of a concat's output (docs/MEMORY.md, "Concat without
  // copies"): ShuffleNet's first half goes straight into its unit's concat.
  bool supports_output_pixel_stride(int output) const override {
    return output >= 0 && output < static_cast<int>(strides_.size());
  }
  void set_output_pixel_stride(int output, int64_t floats) override { strides_[output] = floats; }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    // On the stack: a session allocates nothing while it runs (at most kMaxPieces outputs).
    std::array<float*, kMaxPieces> targets;
    for (size_t i = 0; i < out.size(); ++i) targets[i] = out[i]->data();
    split_channels_strided_nhwc(rows_, in[0]->data(), static_cast<int>(out.size()), sizes_.data(), targets.data(),
                                strides_.data(), threads);
  }

 private:
  int64_t rows_;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;  // per piece: its pixel stride, 0 = dense
};

class SplitOp : public Op {
 public:
  explicit SplitOp(const SplitAttrs& a) : attrs_(a) {}
  const char* type() const override { return "split"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override {
    const Shape& in = inputs[0];
    WINFER_RETURN_IF_ERROR(expect_rank_2_or_4(in, "input"));
    std::vector<int64_t> sizes;
    WINFER_RETURN_IF_ERROR(piece_sizes(in, &sizes));
    outputs->clear();
    for (int64_t size : sizes) {
      Shape piece = in;
      piece[1] = size;
      outputs->push_back(piece);
    }
    return Status::Ok();
  }
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions&) const override {
    std::vector<int64_t> sizes;
    for (const Shape& s : outputs) sizes.push_back(s[1]);
    return std::unique_ptr<Kernel>(new SplitKernel(channel_rows(inputs[0]), std::move(sizes)));
  }

 private:
  Status piece_sizes(const Shape& in, std::vector<int64_t>* sizes) const {
    if (attrs_.chunks > 0) return chunk_sizes(in[1], attrs_.chunks, sizes);
    const int64_t total = std::accumulate(attrs_.sizes.begin(), attrs_.sizes.end(), int64_t{0});
    if (total != in[1]) {
      return shape_mismatch("attribute 'sizes' [" + join(attrs_.sizes) + "] sums to " + std::to_string(total) +
                            ", but input " + in.to_string() + " has " + std::to_string(in[1]) + " channels");
    }
    *sizes = attrs_.sizes;
    return Status::Ok();
  }

  SplitAttrs attrs_;
};

}  // namespace

Result<std::unique_ptr<Op>> create_split(const Attrs& attrs) {
  SplitAttrs a;
  WINFER_RETURN_IF_ERROR(read_split_attrs(attrs, &a));
  return std::unique_ptr<Op>(new SplitOp(a));
}

int split_output_count(const Attrs& attrs) {
  SplitAttrs a;
  if (!read_split_attrs(attrs, &a).ok()) return 1;
  return a.chunks > 0 ? static_cast<int>(a.chunks) : static_cast<int>(a.sizes.size());
}

}  // namespace winfer
