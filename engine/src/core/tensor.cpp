#include "winfer/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/cpu/layout.h"

namespace winfer {

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kNCHW: return "NCHW";
    case Layout::kNHWC: return "NHWC";
    case Layout::kPlain: return "plain";
  }
  return "?";
}

Tensor Tensor::allocate(const Shape& shape, Layout layout) {
  Tensor t;
  t.shape_ = shape;
  t.layout_ = layout;
  // Round up to the alignment so aligned_alloc's size rule holds, and never ask for 0 bytes.
  size_t bytes = static_cast<size_t>(shape.numel()) * sizeof(float);
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (bytes == 0) bytes = kAlignment;
  void* raw = std::aligned_alloc(kAlignment, bytes);
  if (raw == nullptr) throw std::bad_alloc();
  std::memset(raw, 0, bytes);
  t.storage_ = std::shared_ptr<float>(static_cast<float*>(raw), [](float* p) { std::free(p); });
  t.data_ = t.storage_.get();
  return t;
}

Tensor Tensor::view(float* data, const Shape& shape, Layout layout) {
  Tensor t;
  t.shape_ = shape;
  t.layout_ = layout;
  t.data_ = data;
  return t;
}

Tensor Tensor::reshaped(const Shape& shape, Layout layout) const {
  Tensor t = *this;
  t.shape_ = shape;
  t.layout_ = layout;
  return t;
}

Tensor Tensor::to_layout(Layout layout) const {
  if (empty()) return Tensor();
  Tensor out = allocate(shape_, layout);
  const bool four_d = shape_.rank() == 4;
  if (four_d && layout_ == Layout::kNCHW && layout == Layout::kNHWC) {
    nchw_to_nhwc(shape_.n(), shape_.c(), shape_.h(), shape_.w(), data_, out.data(), 1);
  } else if (four_d && layout_ == Layout::kNHWC && layout != Layout::kNHWC) {
    nhwc_to_nchw(shape_.n(), shape_.c(), shape_.h(), shape_.w(), data_, out.data(), 1);
  } else {
    std::memcpy(out.data(), data_, bytes());
  }
  return out;
}

}  // namespace winfer
