// channel_shuffle: ShuffleNet's nn.ChannelShuffle(groups) on NCHW input,
// x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, C, H, W).
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_channel_shuffle(const Attrs& attrs);

}  // namespace winfer
