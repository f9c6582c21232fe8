#include "layers/layer_util.h"

namespace winfer {

Status expect_rank(const Shape& shape, int rank, const std::string& what) {
  if (shape.rank() == rank) return Status::Ok();
  std::string expected = rank == 4 ? "4-D NCHW" : std::to_string(rank) + "-D";
  return shape_mismatch(what + " must be " + expected + ", got " + shape.to_string());
}

Status expect_at_least(const std::string& key, int64_t value, int64_t minimum) {
  if (value >= minimum) return Status::Ok();
  return invalid_argument("attribute '" + key + "' must be >= " + std::to_string(minimum) + ", got " +
                          std::to_string(value));
}

Status read_hw(const Attrs& attrs, const std::string& key, int64_t* h, int64_t* w) {
  std::vector<int64_t> v;
  WINFER_RETURN_IF_ERROR(attrs.get_ints(key, &v, {1, 2}));
  *h = v[0];
  *w = v.size() == 2 ? v[1] : v[0];
  return Status::Ok();
}

Status read_hw(const Attrs& attrs, const std::string& key, int64_t* h, int64_t* w, int64_t fallback_h,
               int64_t fallback_w) {
  if (!attrs.has(key)) {
    *h = fallback_h;
    *w = fallback_w;
    return Status::Ok();
  }
  return read_hw(attrs, key, h, w);
}

Status read_padding(const Attrs& attrs, const std::string& key, Padding* pad) {
  std::vector<int64_t> v;
  WINFER_RETURN_IF_ERROR(attrs.get_ints(key, &v, {1, 2, 4}, {0}));
  if (v.size() == 1) {
    *pad = {v[0], v[0], v[0], v[0]};
  } else if (v.size() == 2) {
    *pad = {v[0], v[1], v[0], v[1]};
  } else {
    *pad = {v[0], v[1], v[2], v[3]};
  }
  for (int64_t p : v) WINFER_RETURN_IF_ERROR(expect_at_least(key, p, 0));
  return Status::Ok();
}

int64_t pooled_extent(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t kernel, int64_t stride, int64_t dilation,
                      bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // PyTorch: in ceil mode the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

}  // namespace winfer
