#include "engine/src/quantization.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace winfer {
namespace quant {

TensorQuant choose_activation_params(float lo, float hi) {
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  TensorQuant q;
  const double range = double(hi) - double(lo);
  if (!(range > 0) || !std::isfinite(range)) return q;  // all zeros: any scale is exact
  q.scale = static_cast<float>(range / (kActivationMax - kActivationMin));
  if (!(q.scale > 0)) q.scale = std::numeric_limits<float>::min();  // a range below float's resolution
  const double zero = std::nearbyint(-double(lo) / q.scale);
  q.zero_point = static_cast<int>(std::clamp(zero, double(kActivationMin), double(kActivationMax)));
  return q;
}

void fake_quantize(const float* in, float* out, int64_t count, const TensorQuant& q) {
  const float zero = static_cast<float>(q.zero_point);
  for (int64_t i = 0; i < count; ++i) out[i] = q.scale * (static_cast<float>(quantize_u8(in[i], q)) - zero);
}

void fake_quantize(float* data, int64_t count, const TensorQuant& q) { fake_quantize(data, data, count, q); }

void quantize_weights(const float* w, int64_t rows, int64_t per_row, std::vector<int8_t>* q,
                      std::vector<float>* scales) {
  q->assign(static_cast<size_t>(rows * per_row), 0);
  scales->assign(static_cast<size_t>(rows), 1.0f);
  for (int64_t o = 0; o < rows; ++o) {
    const float* row = w + o * per_row;
    float max_abs = 0;
    for (int64_t i = 0; i < per_row; ++i) max_abs = std::max(max_abs, std::fabs(row[i]));
    if (!(max_abs > 0)) continue;  // an all-zero channel: q = 0 at scale 1
    const float scale = max_abs / kWeightMax;
    (*scales)[o] = scale;
    for (int64_t i = 0; i < per_row; ++i) {
      const float v = std::clamp(std::nearbyint(row[i] / scale), float(-kWeightMax), float(kWeightMax));
      (*q)[o * per_row + i] = static_cast<int8_t>(v);
    }
  }
}

std::vector<int32_t> quantize_bias(const float* b, int64_t rows, float input_scale, const std::vector<float>& scales) {
  std::vector<int32_t> q(static_cast<size_t>(rows));
  for (int64_t o = 0; o < rows; ++o) {
    const double v = std::nearbyint(double(b[o]) / (double(input_scale) * double(scales[o])));
    q[o] = static_cast<int32_t>(
        std::clamp(v, double(std::numeric_limits<int32_t>::min()), double(std::numeric_limits<int32_t>::max())));
  }
  return q;
}

bool parse_method(const std::string& name, Method* method) {
  if (name == "minmax") {
    *method = Method::kMinMax;
  } else if (name == "percentile") {
    *method = Method::kPercentile;
  } else if (name == "entropy") {
    *method = Method::kEntropy;
  } else {
    return false;
  }
  return true;
}

const char* method_name(Method method) {
  switch (method) {
    case Method::kMinMax: return "minmax";
    case Method::kPercentile: return "percentile";
    case Method::kEntropy: return "entropy";
  }
  return "?";
}

void TensorStats::observe_range(const float* data, int64_t count) {
  if (count <= 0) return;
  float lo = count_ ? min_ : data[0], hi = count_ ? max_ : data[0];
  for (int64_t i = 0; i < count; ++i) {
    lo = std::min(lo, data[i]);
    hi = std::max(hi, data[i]);
  }
  min_ = lo;
  max_ = hi;
  count_ += count;
}

float TensorStats::abs_max() const { return std::max(std::fabs(min_), std::fabs(max_)); }

void TensorStats::observe_histogram(const float* data, int64_t count) {
  if (histogram_.empty()) histogram_.assign(kHistogramBins, 0.0);
  const float top = abs_max();
  if (!(top > 0)) {
    zeros_ += static_cast<double>(count);
    return;
  }
  const float per_unit = kHistogramBins / top;
  for (int64_t i = 0; i < count; ++i) {
    const float a = std::fabs(data[i]);
    if (a == 0) {
      zeros_ += 1.0;
      continue;
    }
    // Values beyond the range of the first pass (none when both passes see the same data) go to
    // the last bin, as TensorRT's outliers do.
    const int bin = a >= top ? kHistogramBins - 1 : static_cast<int>(a * per_unit);
    histogram_[std::min(std::max(bin, 0), kHistogramBins - 1)] += 1.0;
  }
}

void TensorStats::range(Method method, double percentile, float* lo, float* hi) const {
  *lo = min_;
  *hi = max_;
  double total = 0;
  for (double h : histogram_) total += h;
  if (method == Method::kMinMax || histogram_.empty() || !(abs_max() > 0) || total <= 0) return;
  double threshold = 0;
  if (method == Method::kPercentile) {
    std::vector<double> with_zeros = histogram_;
    with_zeros[0] += zeros_;
    threshold = percentile_threshold(with_zeros, bin_width(), percentile);
  } else {
    // A tensor with negative values spends half of its 256 levels on each side.
    threshold = entropy_threshold(histogram_, bin_width(), min_ < 0 ? 128 : 255);
  }
  const float t = static_cast<float>(threshold);
  *lo = std::max(min_, -t);
  *hi = std::min(max_, t);
}

double percentile_threshold(const std::vector<double>& histogram, double bin_width, double percentile) {
  double total = 0;
  for (double h : histogram) total += h;
  if (total <= 0) return 0;
  const double target = total * std::clamp(percentile, 0.0, 100.0) / 100.0;
  double below = 0;
  for (size_t i = 0; i < histogram.size(); ++i) {
    if (below + histogram[i] >= target && histogram[i] > 0) {
      const double fraction = (target - below) / histogram[i];
      return (double(i) + fraction) * bin_width;
    }
    below += histogram[i];
  }
  return double(histogram.size()) * bin_width;
}

double entropy_threshold(const std::vector<double>& histogram, double bin_width, int levels) {
  const int bins = static_cast<int>(histogram.size());
  if (bins <= levels) return double(bins) * bin_width;
  std::vector<double> beyond(bins + 1, 0.0);  // beyond[i]: the mass of bins i..end
  for (int i = bins - 1; i >= 0; --i) beyond[i] = beyond[i + 1] + histogram[i];
  double best_kl = std::numeric_limits<double>::infinity();
  int best = bins;
  std::vector<double> p(bins), q(bins);
  for (int i = levels; i <= bins; ++i) {
    // P: the histogram cut at i, the clipped mass folded into its last bin (what clipping does).
    std::copy(histogram.begin(), histogram.begin() + i, p.begin());
    p[i - 1] += beyond[i];
    // Q: the histogram cut at i, without the clipped mass, merged into `levels` bins, each spread
    // evenly over the bins of P it came from that are not empty (what 8 bits can say of it).
    double p_total = 0, q_total = 0;
    for (int j = 0; j < levels; ++j) {
      const int start = static_cast<int>(int64_t(j) * i / levels);
      const int end = static_cast<int>(int64_t(j + 1) * i / levels);
      double sum = 0;
      int nonzero = 0;
      for (int k = start; k < end; ++k) {
        sum += histogram[k];
        nonzero += p[k] > 0;
      }
      for (int k = start; k < end; ++k) q[k] = p[k] > 0 ? sum / nonzero : 0.0;
    }
    for (int k = 0; k < i; ++k) {
      p_total += p[k];
      q_total += q[k];
    }
    if (p_total <= 0 || q_total <= 0) continue;
    // KL(P || Q) of the normalised distributions; a bin of P that Q left empty (its mass was
    // all clipped) counts as a tiny probability rather than an infinite divergence.
    constexpr double kFloor = 1e-12;
    double kl = 0;
    for (int k = 0; k < i; ++k) {
      if (p[k] <= 0) continue;
      const double pk = p[k] / p_total, qk = std::max(q[k] / q_total, kFloor);
      kl += pk * std::log(pk / qk);
    }
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return (double(best) + 0.5) * bin_width;
}

}  // namespace quant
}  // namespace winfer
