// Tensor: float32 data with a logical shape and a storage layout.
//
// The graph's semantics (and everything a user passes in or gets out) are NCHW as in PyTorch.
// The CPU backend stores 4-D activations channels-last (NHWC) because its fast convolutions
// (im2win's window tensor, the indirection buffer, im2row GEMM) read whole pixel rows of C
// channels; conversion happens only at the graph's input and output.
#pragma once

#include <cstddef>
#include <memory>

#include "winfer/shape.h"

namespace winfer {

enum class Layout {
  kNCHW,   // rank 4, PyTorch order
  kNHWC,   // rank 4, channels-last
  kPlain,  // any rank, row-major in logical order (rank-2 features, weights, ...)
};
const char* layout_name(Layout layout);

class Tensor {
 public:
  static constexpr size_t kAlignment = 64;

  Tensor() = default;

  // Owning, 64-byte aligned, zero-filled storage.
  static Tensor allocate(const Shape& shape, Layout layout = Layout::kPlain);
  // Non-owning view of memory the caller keeps alive.
  static Tensor view(float* data, const Shape& shape, Layout layout = Layout::kPlain);

  const Shape& shape() const { return shape_; }
  Layout layout() const { return layout_; }
  float* data() { return data_; }
  const float* data() const { return data_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * sizeof(float); }
  bool empty() const { return data_ == nullptr; }

  // Same storage, new logical shape with the same element count (no data movement).
  Tensor reshaped(const Shape& shape, Layout layout) const;
  // A copy in another layout (NCHW <-> NHWC for rank 4; a plain copy otherwise).
  Tensor to_layout(Layout layout) const;

 private:
  Shape shape_;
  Layout layout_ = Layout::kPlain;
  std::shared_ptr<float> storage_;  // null for views
  float* data_ = nullptr;
};

}  // namespace winfer
