// Shape: the logical dimensions of a tensor. 4-D activations are NCHW as in PyTorch, whatever
// the backend's storage layout (see Tensor::layout()).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "winfer/status.h"

namespace winfer {

class Shape {
 public:
  // Upper bound on the element count of any tensor (2^40 floats = 4 TiB): anything larger is a
  // corrupt or hostile model, and rejecting it early keeps products of dims from overflowing.
  static constexpr int64_t kMaxElements = int64_t(1) << 40;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  // Validating constructor: every dim >= 0 and the element count <= kMaxElements.
  static Result<Shape> make(const std::vector<int64_t>& dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const;

  // NCHW accessors for rank-4 shapes.
  int64_t n() const { return dims_[0]; }
  int64_t c() const { return dims_[1]; }
  int64_t h() const { return dims_[2]; }
  int64_t w() const { return dims_[3]; }

  std::string to_string() const;  // "[1,3,224,224]"
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace winfer
