// INT8 quantization arithmetic shared by `winfer quantize` (engine/src/quantize.cpp), the loader of
// quantized models (engine/src/quant_model.cpp) and the INT8 kernels' tests: one contract,
// written once (docs/MODEL_FORMAT.md, "Quantized models").
//
//   activations: u8 per tensor, asymmetric   x_real = scale * (q - zero_point), q in [0, 255]
//   weights:     s8 per output channel, symmetric   w_real = scale[oc] * q, q in [-127, 127]
//   bias:        s32 at scale input_scale * weight_scale[oc]
//   accumulate in int32, requantize to the next tensor's (scale, zero_point); a fused ReLU is the
//   clamp at that tensor's zero point.
//
// Calibration: the range [lo, hi] of an activation tensor is chosen from what the FP32 model
// produced on calibration images, by one of three methods:
//   minmax      the observed minimum and maximum;
//   percentile  |x| clipped at the given percentile of |x| (e.g. 99.99), from a histogram;
//   entropy     |x| clipped at the threshold whose 8-bit quantized histogram has the least
//               Kullback-Leibler divergence from the observed one (TensorRT's calibration, as
//               described in Migacz, "8-bit Inference with TensorRT", GTC 2017).
// The range always contains 0, so that 0 (padding, ReLU) is exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "winfer/status.h"

namespace winfer {
namespace quant {

constexpr int kActivationMin = 0, kActivationMax = 255;  // u8
constexpr int kWeightMax = 127;                          // s8, symmetric: [-127, 127]

// Per-tensor u8 parameters of an activation tensor.
struct TensorQuant {
  float scale = 1.0f;
  int zero_point = 0;
};

// The u8 parameters covering [lo, hi] (widened to contain 0): scale = (hi - lo) / 255,
// zero_point = round(-lo / scale) clamped to [0, 255]. A tensor that is all zeros gets scale 1.
TensorQuant choose_activation_params(float lo, float hi);

// q = clamp(round(x / scale) + zero_point, 0, 255) (round half to even, as the CPU's conversion).
inline int quantize_u8(float x, const TensorQuant& q);
// x -> scale * (quantize_u8(x) - zero_point): the value the INT8 pipeline carries for x.
void fake_quantize(float* data, int64_t count, const TensorQuant& q);
void fake_quantize(const float* in, float* out, int64_t count, const TensorQuant& q);

// Symmetric per-output-channel s8 weights: rows = output channels, each `per_row` values.
// scale[o] = max|w[o]| / 127 (1 for an all-zero row); q = clamp(round(w / scale[o]), -127, 127).
void quantize_weights(const float* w, int64_t rows, int64_t per_row, std::vector<int8_t>* q,
                      std::vector<float>* scales);
// bias_q[o] = round(b[o] / (input_scale * weight_scale[o])), saturated to int32.
std::vector<int32_t> quantize_bias(const float* b, int64_t rows, float input_scale, const std::vector<float>& scales);

enum class Method { kMinMax, kPercentile, kEntropy };
// "minmax", "percentile", "entropy"; false for anything else.
bool parse_method(const std::string& name, Method* method);
const char* method_name(Method method);

// The statistics of one activation tensor over the calibration images, gathered in two passes:
// observe_range() on every batch (min, max), then, once the range is final, observe_histogram()
// on every batch again: a histogram of |x| with kHistogramBins bins over [0, max(|min|, |max|)].
// Exact zeros (ReLU's, padding's) are counted apart: they are exact whatever the scale, so the
// entropy method leaves them out (a spike at 0 would otherwise pull its threshold down to the
// smallest candidate); the percentile counts them.
class TensorStats {
 public:
  static constexpr int kHistogramBins = 2048;
  void observe_range(const float* data, int64_t count);
  void observe_histogram(const float* data, int64_t count);

  bool seen() const { return count_ > 0; }
  float min() const { return min_; }
  float max() const { return max_; }
  float abs_max() const;
  const std::vector<double>& histogram() const { return histogram_; }  // without exact zeros
  double zeros() const { return zeros_; }
  // The width of a histogram bin.
  double bin_width() const { return abs_max() / kHistogramBins; }

  // The clipping range [*lo, *hi] by `method` (percentile: `percentile` in (0, 100]); the
  // histogram methods fall back to minmax when no histogram was gathered or all values are 0.
  void range(Method method, double percentile, float* lo, float* hi) const;

 private:
  float min_ = 0, max_ = 0;
  int64_t count_ = 0;
  std::vector<double> histogram_;
  double zeros_ = 0;  // exact zeros, left out of the histogram (exact at any scale)
};

// The smallest t with at least `percentile` % of the histogram's mass in [0, t] (linear within a
// bin). histogram[i] counts values in [i * bin_width, (i + 1) * bin_width).
double percentile_threshold(const std::vector<double>& histogram, double bin_width, double percentile);
// TensorRT's entropy calibration on a histogram of |x|: for each candidate threshold i (in bins,
// from `levels` to the histogram's size), the reference P is the histogram cut at i with the
// mass beyond added to its last bin, and Q is the histogram cut at i (without that mass) merged
// into `levels` bins and expanded back over P's non-empty bins; the threshold (i + 0.5) *
// bin_width of the smallest KL(P || Q) wins.
double entropy_threshold(const std::vector<double>& histogram, double bin_width, int levels);

}  // namespace quant

inline int quant::quantize_u8(float x, const TensorQuant& q) {
  const float v = std::nearbyint(x / q.scale) + static_cast<float>(q.zero_point);
  if (!(v > kActivationMin)) return kActivationMin;  // NaN too
  return v > kActivationMax ? kActivationMax : static_cast<int>(v);
}

}  // namespace winfer
