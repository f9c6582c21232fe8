#include "layers/channel_shuffle.h"

#include <array>
#include <numeric>
#include <string>

#include "kernels/cpu/channel_ops.h"

#include "layers/layer_util.h"

namespace winfer {
namespace {

class ChannelShuffleKernel : public Kernel {
 public:
  ChannelShuffleKernel(const Shape& in, int64_t groups) : in_(in), groups_(groups) {}
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    channel_shuffle_nhwc(in_.n() * in_.h() * in_.w(), in_.c(), groups_, in[0]->data(), out[0]->data(), threads);
  }

 private:
  Shape in_;
  int64_t groups_;
};

// The shuffle and the split after it in one pass (kernels/cpu/channel_ops.h): ShuffleNetV2's
// unit ends in a shuffle whose output the next unit splits at once, and the two copies (each a
// read and a write of the unit's widest tensor) took 7% of its time at batch 8 on one thread
// (docs/PERFORMANCE.md, session 41).
class ChannelShuffleSplitKernel : public Kernel {
 public:
  // At most as many pieces as a split makes.
  static constexpr size_t kMaxPieces = 256;

  ChannelShuffleSplitKernel(const Shape& in, int64_t groups, std::vector<int64_t> pieces)
      : in_(in), groups_(groups), pieces_(std::move(pieces)), strides_(pieces_.size(), 0) {}
  // Any piece may be a channel slice of a concat's output (docs/MEMORY.md, "Concat without
  // copies"): ShuffleNetV2's first half goes straight into its unit's concat, as a split's does.
  bool supports_output_pixel_stride(int output) const override {
    return output >= 0 && output < static_cast<int>(strides_.size());
  }
  void set_output_pixel_stride(int output, int64_t floats) override { strides_[output] = floats; }
  std::string describe() const override { return "shuffle and split in one pass"; }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void*, int threads) const override {
    std::array<float*, kMaxPieces> targets;  // a session allocates nothing while it runs
    for (size_t i = 0; i < out.size(); ++i) targets[i] = out[i]->data();
    channel_shuffle_split_nhwc(in_.n() * in_.h() * in_.w(), groups_, in[0]->data(), static_cast<int>(out.size()),
                               pieces_.data(), targets.data(), strides_.data(), threads);
  }

 private:
  Shape in_;
  int64_t groups_;
  std::vector<int64_t> pieces_;
  std::vector<int64_t> strides_;  // per piece: its pixel stride, 0 = dense
};

}  // namespace

bool ChannelShuffleOp::absorb_split(std::vector<int64_t> piece_channels) {
  if (!pieces_.empty() || piece_channels.empty() || piece_channels.size() > ChannelShuffleSplitKernel::kMaxPieces)
    return false;
  for (int64_t c : piece_channels) {
    if (c < 1) return false;
  }
  pieces_ = std::move(piece_channels);
  return true;
}

Status ChannelShuffleOp::infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const {
  const Shape& in = inputs[0];
  WINFER_RETURN_IF_ERROR(expect_rank(in, 4, "input"));
  if (in.c() % groups_ != 0) {
    return shape_mismatch("input " + in.to_string() + " has " + std::to_string(in.c()) +
                          " channels, not divisible by groups = " + std::to_string(groups_));
  }
  if (pieces_.empty()) {
    *outputs = {in};
    return Status::Ok();
  }
  const int64_t total = std::accumulate(pieces_.begin(), pieces_.end(), int64_t{0});
  if (total != in.c()) {
    return shape_mismatch("input " + in.to_string() + " has " + std::to_string(in.c()) +
                          " channels, but the split fused into this shuffle makes pieces of " + std::to_string(total));
  }
  outputs->clear();
  for (int64_t c : pieces_) {
    Shape piece = in;
    piece[1] = c;
    outputs->push_back(piece);
  }
  return Status::Ok();
}

Result<std::unique_ptr<Kernel>> ChannelShuffleOp::compile(const std::vector<Shape>& inputs, const std::vector<Shape>&,
                                                          const CompileOptions&) const {
  if (!pieces_.empty()) return std::unique_ptr<Kernel>(new ChannelShuffleSplitKernel(inputs[0], groups_, pieces_));
  return std::unique_ptr<Kernel>(new ChannelShuffleKernel(inputs[0], groups_));
}

Result<std::unique_ptr<Op>> create_channel_shuffle(const Attrs& attrs) {
  int64_t groups = 0;
  WINFER_RETURN_IF_ERROR(attrs.get_int("groups", &groups));
  WINFER_RETURN_IF_ERROR(expect_at_least("groups", groups, 1));
  return std::unique_ptr<Op>(new ChannelShuffleOp(groups));
}

}  // namespace winfer
