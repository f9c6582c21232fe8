// Small helpers shared by the layers: shape checks and attribute parsing for spatial ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/src/attrs.h"
#include "kernels/common/conv_params.h"
#include "winfer/shape.h"
#include "winfer/status.h"

namespace winfer {

// "input must be 4-D NCHW, got [1,3,4]".
Status expect_rank(const Shape& shape, int rank, const std::string& what);
// Fails unless value >= minimum: "attribute 'stride' must be >= 1, got 0".
Status expect_at_least(const std::string& key, int64_t value, int64_t minimum);

// kernel_size / stride / dilation: an int or [h, w].
Status read_hw(const Attrs& attrs, const std::string& key, int64_t* h, int64_t* w);
Status read_hw(const Attrs& attrs, const std::string& key, int64_t* h, int64_t* w, int64_t fallback_h,
               int64_t fallback_w);

struct Padding {
  int64_t top = 0, left = 0, bottom = 0, right = 0;
};
// padding: int (all sides), [ph, pw] (symmetric) or [top, left, bottom, right].
Status read_padding(const Attrs& attrs, const std::string& key, Padding* pad);

// Output extent of a sliding window (PyTorch's formula; ceil_mode drops a last window that
// would start inside the right padding). Returns < 1 when the window does not fit.
int64_t pooled_extent(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t kernel, int64_t stride, int64_t dilation,
                      bool ceil_mode);

// The fusion mutator of a layer whose kernel applies one activation to its output (called by
// the rules in engine/src/rewrites/): sets *slot to `act` unless it holds one already.
inline bool set_fused_activation(Activation* slot, Activation act) {
  if (*slot != Activation::kNone) return false;
  *slot = act;
  return true;
}

// Parameter count helper.
inline int64_t numel_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace winfer
