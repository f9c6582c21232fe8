// Fully connected layer (sgemm against the row-major [O][K] weight, i.e. B transposed) and a
// numerically stable row softmax.
#include "kernels/cpu/linear.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/conv_common.h"  // bias_activation_rows
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/gemm.h"

namespace winfer {

// Threads split the larger of rows and out_features into contiguous ranges, each multiplied
// by a single-threaded sgemm (one thread pool, as in conv_im2col.cpp).
void linear(const float* in, const float* weight, const float* bias, float* out, int64_t rows,
            int64_t in_features, int64_t out_features, Activation act, int threads) {
  gemm_set_threads(1);
  const bool split_rows = rows >= out_features;
  const int64_t extent = split_rows ? rows : out_features;
  const int nt = static_cast<int>(
      std::min<int64_t>(cpu::threads_for_work(threads, rows * in_features * out_features), extent));
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int t = omp_get_thread_num(), team = omp_get_num_threads();
    const int64_t first = extent * t / team, count = extent * (t + 1) / team - first;
    if (count > 0 && split_rows) {
      sgemm(false, true, count, out_features, in_features, 1.f, in + first * in_features, in_features,
            weight, in_features, 0.f, out + first * out_features, out_features);
      cpu::bias_activation_rows(out + first * out_features, count, out_features, bias, act, 1);
    } else if (count > 0) {
      sgemm(false, true, rows, count, in_features, 1.f, in, in_features, weight + first * in_features,
            in_features, 0.f, out + first, out_features);
      for (int64_t r = 0; r < rows; ++r)
        cpu::bias_activation_rows(out + r * out_features + first, 1, count, bias ? bias + first : nullptr, act, 1);
    }
  }
}

// out = exp(x - max) / sum(exp(x - max)): every exponent is <= 0, so nothing overflows
// whatever the inputs' magnitude, and the largest term is exactly 1, so the sum is >= 1.
// In place (out == in) is allowed. The sum is accumulated in double to keep long rows exact.
void softmax_rows(const float* in, float* out, int64_t rows, int64_t cols, int threads) {
  cpu::parallel_chunks(rows, cols * 8, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* x = in + r * cols;
      float* y = out + r * cols;
      float max_value = -INFINITY;
      for (int64_t c = 0; c < cols; ++c) max_value = std::fmax(max_value, x[c]);
      double sum = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        y[c] = std::exp(x[c] - max_value);
        sum += y[c];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t c = 0; c < cols; ++c) y[c] *= inv;
    }
  });
}

}  // namespace winfer
