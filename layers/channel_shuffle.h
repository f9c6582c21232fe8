// channel_shuffle: ShuffleNet's nn.ChannelShuffle(groups) on NCHW input,
// x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, C, H, W).
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

class ChannelShuffleOp : public Op {
 public:
  explicit ChannelShuffleOp(int64_t groups) : groups_(groups) {}
  const char* type() const override { return "channel_shuffle"; }

  Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const override;
  Result<std::unique_ptr<Kernel>> compile(const std::vector<Shape>& inputs, const std::vector<Shape>& outputs,
                                          const CompileOptions& options) const override;

  int64_t groups() const { return groups_; }

 private:
  int64_t groups_;
};

Result<std::unique_ptr<Op>> create_channel_shuffle(const Attrs& attrs);

}  // namespace winfer
