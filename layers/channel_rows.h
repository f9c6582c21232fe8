// Helpers for ops that treat a tensor as rows of channels. In the CPU layout a rank-4 NCHW
// tensor is stored NHWC and a rank-2 [N,F] tensor row-major, so both are "rows" of C (or F)
// contiguous floats: one channel kernel (concat, split, softmax, ...) serves either rank.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "winfer/shape.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {

// Number of rows of dim-1 elements: N*H*W for rank 4, N for rank 2.
inline int64_t channel_rows(const Shape& s) { return s.rank() == 4 ? s.n() * s.h() * s.w() : s[0]; }

// Ops whose channel axis is dim 1 of a 2-D [N,F] or 4-D NCHW tensor.
inline Status expect_rank_2_or_4(const Shape& shape, const std::string& what) {
  if (shape.rank() == 2 || shape.rank() == 4) return Status::Ok();
  return shape_mismatch(what + " must be 2-D [N,F] or 4-D NCHW, got " + shape.to_string());
}

// Copies in -> out. The memory planner may give both the same storage (an in-place
// identity), in which case there is nothing to do.
inline void copy_unless_aliased(const Tensor& in, Tensor& out) {
  if (in.data() == out.data()) return;
  std::memcpy(out.data(), in.data(), in.bytes());
}

}  // namespace winfer
