#include "engine/src/param_sources.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/src/core/file_io.h"

namespace winfer {
namespace {

Status check_shape(const std::string& what, const Shape& got, const Shape& expected) {
  if (got == expected) return Status::Ok();
  return shape_mismatch(what + " has shape " + got.to_string() + ", expected " + expected.to_string());
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// FNV-1a: a stable hash of the parameter name (std::hash may differ between libraries).
uint64_t stable_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Status SafeTensorsParamSource::get(const std::string& name, const Shape& expected, Tensor* out) {
  const SafeTensor* t = file_->find(name);
  if (t == nullptr) return not_found("weights file '" + file_->path() + "' has no tensor '" + name + "'");
  const std::string what = "tensor '" + name + "' in '" + file_->path() + "'";
  if (t->dtype != "F32") return invalid_argument(what + " has dtype " + t->dtype + ", expected F32");
  WINFER_RETURN_IF_ERROR(check_shape(what, t->shape, expected));
  *out = allocate_weight(expected);  // every element is written below
  // Read from the file, not through its mapping (SafeTensorsFile::copy_data), so the weights are
  // not held twice while loading; byte copies, since data offsets need not be 4-byte aligned.
  return file_->copy_data(*t, out->data());
}

Status InlineParamSource::get(const std::string& name, const Shape& expected, Tensor* out) {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) return not_found("model file '" + file_ + "' has no inline tensor '" + name + "'");
  const std::string what = file_ + ":" + std::to_string(it->second.line) + ": inline tensor '" + name + "'";
  WINFER_RETURN_IF_ERROR(check_shape(what, it->second.shape, expected));
  *out = allocate_weight(expected);  // every element is written below
  std::memcpy(out->data(), it->second.data.data(), out->bytes());
  return Status::Ok();
}

Status RandomParamSource::get(const std::string& name, const Shape& expected, Tensor* out) {
  std::mt19937_64 rng(seed_ ^ stable_hash(name));
  double low = -0.1, high = 0.1;
  if (ends_with(name, ".weight") && expected.rank() >= 2 && expected[0] > 0) {
    const double fan_in = static_cast<double>(expected.numel() / expected[0]);
    high = std::sqrt(6.0 / std::max(fan_in, 1.0));
    low = -high;
  } else if (ends_with(name, ".weight") || ends_with(name, ".running_var")) {
    low = 0.9;
    high = 1.1;
  }
  *out = allocate_weight(expected);  // every element is written below
  // Uniform from the top 24 bits: identical on every platform (std distributions are not).
  const double scale = (high - low) / double(1 << 24);
  float* data = out->data();
  for (int64_t i = 0; i < out->numel(); ++i) data[i] = static_cast<float>(low + double(rng() >> 40) * scale);
  return Status::Ok();
}

Status ModelParamSource::get(const std::string& name, const Shape& expected, Tensor* out) {
  if (random_) return random_->get(name, expected, out);
  if (inline_ && inline_->has(name)) return inline_->get(name, expected, out);
  if (file_) return file_->get(name, expected, out);
  if (inline_ && !inline_->empty()) return inline_->get(name, expected, out);  // names the miss
  return not_found("parameter '" + name + "' is needed but '" + model_file_ +
                   "' names no weights: pass --weights FILE.safetensors or --random-weights SEED");
}

}  // namespace winfer
