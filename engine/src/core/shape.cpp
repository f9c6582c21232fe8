#include "winfer/shape.h"

#include <sstream>

namespace winfer {

Result<Shape> Shape::make(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    if (d < 0) {
      return invalid_argument("dimension " + std::to_string(i) + " of " + Shape(dims).to_string() + " is negative");
    }
    if (d != 0 && count > kMaxElements / d) {
      return invalid_argument("shape " + Shape(dims).to_string() + " has more than 2^40 elements");
    }
    count *= d;
  }
  return Shape(dims);
}

int64_t Shape::numel() const {
  int64_t count = 1;
  for (int64_t d : dims_) count *= d;
  return count;
}

std::string Shape::to_string() const {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < dims_.size(); ++i) out << (i ? "," : "") << dims_[i];
  out << ']';
  return out.str();
}

}  // namespace winfer
