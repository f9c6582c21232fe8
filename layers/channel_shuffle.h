// channel_shuffle: ShuffleNet's nn.ChannelShuffle(groups) on NCHW input,
// x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, C, H, W). After the rule shuffle_split
// (engine/src/rewrites/shuffle_split.cpp) it also splits its result along the channels, as the
// split it absorbed did: one output per piece.
#pragma once

#include <memory>
#include <vector>

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

  // The rule shuffle_split's mutator: from now on the shuffled tensor is split into pieces of
  // these channel counts, one output each (the absorbed split's outputs, in order). False,
  // nothing changed, when this shuffle already splits or a count is below 1.
  bool absorb_split(std::vector<int64_t> piece_channels);
  // The pieces' channel counts; empty: one output, the whole shuffled tensor.
  const std::vector<int64_t>& split_pieces() const { return pieces_; }

 private:
  int64_t groups_;
  std::vector<int64_t> pieces_;
};

Result<std::unique_ptr<Op>> create_channel_shuffle(const Attrs& attrs);

}  // namespace winfer
