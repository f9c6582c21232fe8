#include "apps/winfer/input_size.h"

#include <cstdlib>

namespace winfer::cli {

const char* const kSizeHelp =
    "Image size HxW of the session's input, e.g. 160x224 (default: the model's); any size the model's layers "
    "admit";

namespace {

// A whole decimal number in 1..max, or -1.
int64_t parse_dim(const std::string& text, int64_t max) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  const int64_t value = std::strtoll(text.c_str(), nullptr, 10);
  return value >= 1 && value <= max ? value : -1;
}

}  // namespace

Result<std::vector<int64_t>> parse_image_size(const std::string& text, const std::string& flag) {
  const size_t x = text.find_first_of("xX");
  const int64_t h = x == std::string::npos ? -1 : parse_dim(text.substr(0, x), Model::kMaxInputDim);
  const int64_t w = x == std::string::npos ? -1 : parse_dim(text.substr(x + 1), Model::kMaxInputDim);
  if (h < 1 || w < 1) {
    return invalid_argument(flag + " '" + text + "': expected HEIGHTxWIDTH, e.g. 160x224, each 1..16777216");
  }
  return std::vector<int64_t>{h, w};
}

Result<std::vector<int64_t>> input_shape_for(const Model& model, int64_t batch, const std::string& size) {
  if (size.empty()) {
    if (batch <= 0) return std::vector<int64_t>{};
    std::vector<int64_t> shape = model.input_shape().dims();
    shape[0] = batch;
    return shape;
  }
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> hw, parse_image_size(size));
  if (model.input_shape().rank() != 4) {
    return invalid_argument("--size " + size + ": " + model.path() + " takes an input of shape " +
                            model.input_shape().to_string() + ", not an image [N,C,H,W]; --size is for image models");
  }
  std::vector<int64_t> shape = model.input_shape().dims();
  if (batch > 0) shape[0] = batch;
  shape[2] = hw[0];
  shape[3] = hw[1];
  return shape;
}

double flops_at(const Model& model, const Shape& input) {
  const double declared = double(model.input_shape().numel());
  return declared > 0 ? double(model.total_flops()) * double(input.numel()) / declared : 0.0;
}

}  // namespace winfer::cli
