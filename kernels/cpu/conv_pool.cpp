#include "kernels/cpu/conv_pool.h"

#include <algorithm>
#include <cstring>

namespace winfer {

// VGG16 conv1_2 with the default: 8 pooled rows = 16 rows of 224 x 64 floats, 896 KiB.
ConvPool::ConvPool(const ConvAlgorithm& algorithm, const ConvParams& conv, const PoolParams& pool,
                   int64_t band_bytes)
    : algorithm_(algorithm), conv_(conv), pool_(pool) {
  const int64_t row_bytes = conv_.out_w() * conv_.out_channels * int64_t{sizeof(float)};
  pooled_rows_per_band_ = std::clamp<int64_t>(band_bytes / (row_bytes * pool_.stride_h), 1, pool_.out_h);
  int64_t rows = 0, workspace = 0;
  for_each_band([&](const Band& b) {
    rows = std::max(rows, b.r1 - b.r0);
    if (b.r1 > b.kept) {
      workspace = std::max<int64_t>(workspace, algorithm_.workspace_bytes(rows_problem(b.kept, b.r1)));
    }
  });
  // Rounded to 64 bytes: the algorithm's workspace after the band keeps the arena's alignment.
  band_floats_ = static_cast<size_t>((rows * conv_.out_w() * conv_.out_channels + 15) / 16 * 16);
  conv_workspace_floats_ = static_cast<size_t>((workspace + sizeof(float) - 1) / sizeof(float));
}

// f(band) for one image's groups of pooled rows, in order.
template <class F>
void ConvPool::for_each_band(F f) const {
  const int64_t ho = conv_.out_h();
  // Convolution rows pooled row ph reads: [first_row(ph), end_row(ph)), within [0, Ho).
  const auto window_start = [&](int64_t ph) { return ph * pool_.stride_h - pool_.pad_top; };
  const auto first_row = [&](int64_t ph) { return std::max<int64_t>(0, window_start(ph)); };
  const auto end_row = [&](int64_t ph) {
    return std::min(ho, window_start(ph) + (pool_.kernel_h - 1) * pool_.dilation_h + 1);
  };
  int64_t computed_end = 0;  // convolution rows [.., computed_end) are in the buffer
  for (int64_t ph0 = 0; ph0 < pool_.out_h; ph0 += pooled_rows_per_band_) {
    const int64_t ph1 = std::min(pool_.out_h, ph0 + pooled_rows_per_band_);
    Band b;
    b.ph0 = ph0;
    b.ph1 = ph1;
    b.r0 = first_row(ph0);
    b.r1 = std::max(b.r0, end_row(ph1 - 1));
    b.kept = std::clamp(computed_end, b.r0, b.r1);
    f(b);
    computed_end = std::max(computed_end, b.r1);
  }
}

ConvParams ConvPool::rows_problem(int64_t a, int64_t b) const {
  ConvParams p = conv_;
  p.batch = 1;
  // Input rows the output rows [a, b) read, with what lies outside the image as padding.
  const int64_t top = a * conv_.stride_h - conv_.pad_top;
  const int64_t bottom = (b - 1) * conv_.stride_h - conv_.pad_top + (conv_.kernel_h - 1) * conv_.dilation_h + 1;
  const int64_t ih0 = std::max<int64_t>(0, top), ih1 = std::min(conv_.in_h, bottom);
  p.in_h = ih1 - ih0;
  p.pad_top = ih0 - top;
  p.pad_bottom = bottom - ih1;
  return p;
}

void ConvPool::run(const float* input_nhwc, const float* packed, const float* bias, float* output_nhwc,
                   void* workspace, Activation act, int threads) const {
  float* band = static_cast<float*>(workspace);
  void* conv_workspace = conv_workspace_floats_ > 0 ? band + band_floats_ : nullptr;
  const int64_t row_floats = conv_.out_w() * conv_.out_channels;
  const int64_t in_row_floats = conv_.in_w * conv_.in_channels;
  const int64_t out_image_floats = pool_.out_h * pool_.out_w * pool_.channels;
  for (int64_t n = 0; n < conv_.batch; ++n) {
    const float* image = input_nhwc + n * conv_.in_h * in_row_floats;
    int64_t buffer_r0 = 0;  // convolution row held in the buffer's first row
    for_each_band([&](const Band& b) {
      // Rows shared with the previous group move to the top.
      if (b.kept > b.r0) {
        std::memmove(band, band + (b.r0 - buffer_r0) * row_floats,
                     static_cast<size_t>((b.kept - b.r0) * row_floats) * sizeof(float));
      }
      buffer_r0 = b.r0;
      if (b.r1 > b.kept) {
        const ConvParams rows = rows_problem(b.kept, b.r1);
        const int64_t ih0 = std::max<int64_t>(0, b.kept * conv_.stride_h - conv_.pad_top);
        algorithm_.run(rows, image + ih0 * in_row_floats, packed, bias, band + (b.kept - b.r0) * row_floats,
                       conv_workspace, act, threads);
      }
      PoolParams pool = pool_;
      pool.batch = 1;
      pool.in_h = b.r1 - b.r0;
      pool.out_h = b.ph1 - b.ph0;
      pool.pad_top = b.r0 - (b.ph0 * pool_.stride_h - pool_.pad_top);
      maxpool2d_nhwc(pool, band, output_nhwc + n * out_image_floats + b.ph0 * pool_.out_w * pool_.channels, threads);
    });
  }
}

}  // namespace winfer
