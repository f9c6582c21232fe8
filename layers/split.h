// split: divides dim 1 (channels of NCHW, features of [N,F]) into consecutive pieces, given
// by exactly one of
//   chunks: PyTorch torch.chunk(x, chunks, 1): pieces of ceil(C / chunks), the last smaller;
//           it must yield exactly `chunks` pieces (an error otherwise, see split.cpp);
//   sizes:  torch.split(x, sizes, 1) with a list of piece sizes that sums to C.
#pragma once

#include <memory>

#include "engine/src/op.h"

namespace winfer {

Result<std::unique_ptr<Op>> create_split(const Attrs& attrs);
// Number of outputs, known before shapes are (the registry's OpInfo::num_outputs). Never
// fails: returns 1 on invalid attributes, which create_split then reports.
int split_output_count(const Attrs& attrs);

}  // namespace winfer
