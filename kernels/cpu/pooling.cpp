// Pooling on NHWC tensors with PyTorch's semantics. Every output pixel reduces a window of
// input pixels, each a contiguous row of C channels, so the inner loops run over channels
// (vectorised) and the window bounds are computed once per output pixel. Work is split over
// output rows (n, oh).
#include "kernels/cpu/pooling.h"

#include <algorithm>
#include <limits>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/maxpool_rows.h"

namespace winfer {
namespace {

// out[0, channels) = max over the window's in-bounds taps. As PyTorch: padding never wins,
// a NaN tap wins (the result is NaN), and a window with no in-bounds tap gives -inf.
// One output row per call: the portable loop, for machines without AVX2 (AVX2 and AVX-512 run
// maxpool_rows.h's, compiled per ISA with a vector max, which the vector extensions cannot spell).
void max_row_generic(const PoolParams& p, const float* in_image, int64_t oh, float* out_row) {
  using V = cpu::Vec<4>;
  typedef int32_t I __attribute__((vector_size(sizeof(V))));
  constexpr int kLanes = 4;
  const int64_t c_total = p.channels;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  int64_t kh0, kh1;
  cpu::valid_taps(oh * p.stride_h - p.pad_top, p.dilation_h, p.kernel_h, p.in_h, &kh0, &kh1);
  for (int64_t ow = 0; ow < p.out_w; ++ow) {
    float* out = out_row + ow * c_total;
    int64_t kw0, kw1;
    cpu::valid_taps(ow * p.stride_w - p.pad_left, p.dilation_w, p.kernel_w, p.in_w, &kw0, &kw1);
    const int64_t ih0 = oh * p.stride_h - p.pad_top, iw0 = ow * p.stride_w - p.pad_left;
    int64_t c = 0;
    for (; c + kLanes <= c_total; c += kLanes) {
      V m = cpu::broadcast<kLanes>(neg_inf);
      for (int64_t kh = kh0; kh < kh1; ++kh) {
        const float* row = in_image + (ih0 + kh * p.dilation_h) * p.in_w * c_total + c;
        for (int64_t kw = kw0; kw < kw1; ++kw) {
          const V x = cpu::load<kLanes>(row + (iw0 + kw * p.dilation_w) * c_total);
          // m = (x > m || isnan(x)) ? x : m, as bit operations.
          const I take = (x > m) | (x != x);
          m = reinterpret_cast<V>((reinterpret_cast<I>(x) & take) | (reinterpret_cast<I>(m) & ~take));
        }
      }
      cpu::store<kLanes>(out + c, m);
    }
    for (; c < c_total; ++c) {
      float m = neg_inf;
      for (int64_t kh = kh0; kh < kh1; ++kh) {
        const float* row = in_image + (ih0 + kh * p.dilation_h) * p.in_w * c_total + c;
        for (int64_t kw = kw0; kw < kw1; ++kw) {
          const float x = row[(iw0 + kw * p.dilation_w) * c_total];
          m = (x > m || x != x) ? x : m;
        }
      }
      out[c] = m;
    }
  }
}

// out_row[ow][0, channels) = sum over the in-bounds taps of output pixel (oh, ow)'s window /
// divisor (PyTorch AvgPool2d):
//   hstart = oh*s - pad, hend = min(hstart + k, in_h + pad)   -> pool_size (with padding)
//   then clip [hstart, hend) to [0, in_h)                        -> the taps summed
// The divisor is pool_size with count_include_pad, else the clipped count. PyTorch's padding
// is symmetric; with only pad_top/pad_left given, pad_top (pad_left) plays that role. One
// output row per call, compiled per ISA (cpu_common.h), the sums of kLanes channels in a
// register over the taps in (kh, kw) order: pixel by pixel in the baseline ISA, Inception-v3's
// 3x3 poolings took 3% of its time at batch 1 (session 41).
template <int kLanes>
WINFER_ALWAYS_INLINE inline void avg_row_body(const PoolParams& p, bool count_include_pad, const float* in_image,
                                              int64_t oh, float* out_row) {
  using V = cpu::Vec<kLanes>;
  const int64_t c_total = p.channels;
  int64_t h0 = oh * p.stride_h - p.pad_top;
  int64_t h1 = std::min(h0 + p.kernel_h, p.in_h + p.pad_top);
  const int64_t pool_h = h1 - h0;
  h0 = std::max<int64_t>(h0, 0);
  h1 = std::min(h1, p.in_h);
  for (int64_t ow = 0; ow < p.out_w; ++ow) {
    float* out = out_row + ow * c_total;
    int64_t w0 = ow * p.stride_w - p.pad_left;
    int64_t w1 = std::min(w0 + p.kernel_w, p.in_w + p.pad_left);
    const int64_t pool_w = w1 - w0;
    w0 = std::max<int64_t>(w0, 0);
    w1 = std::min(w1, p.in_w);
    if (h0 >= h1 || w0 >= w1) {  // window entirely in the padding: PyTorch gives 0
      std::fill(out, out + c_total, 0.f);
      continue;
    }
    // A true division (not a reciprocal multiply), as PyTorch does, to match it to the last bit.
    const float divisor = static_cast<float>(count_include_pad ? pool_h * pool_w : (h1 - h0) * (w1 - w0));
    const float* first = in_image + (h0 * p.in_w + w0) * c_total;
    int64_t c = 0;
    for (; c + kLanes <= c_total; c += kLanes) {
      V sum{};
      for (int64_t ih = h0; ih < h1; ++ih) {
        const float* x = first + (ih - h0) * p.in_w * c_total + c;
        for (int64_t iw = w0; iw < w1; ++iw, x += c_total) sum += cpu::load<kLanes>(x);
      }
      cpu::store<kLanes>(out + c, sum / cpu::broadcast<kLanes>(divisor));
    }
    for (; c < c_total; ++c) {
      float sum = 0.f;
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = w0; iw < w1; ++iw) sum += first[((ih - h0) * p.in_w + (iw - w0)) * c_total + c];
      out[c] = sum / divisor;
    }
  }
}

WINFER_TARGET_AVX512 void avg_row_avx512(const PoolParams& p, bool count_include_pad, const float* in_image, int64_t oh,
                                         float* out_row) {
  avg_row_body<16>(p, count_include_pad, in_image, oh, out_row);
}
WINFER_TARGET_AVX2 void avg_row_avx2(const PoolParams& p, bool count_include_pad, const float* in_image, int64_t oh,
                                     float* out_row) {
  avg_row_body<8>(p, count_include_pad, in_image, oh, out_row);
}
void avg_row_generic(const PoolParams& p, bool count_include_pad, const float* in_image, int64_t oh, float* out_row) {
  avg_row_body<4>(p, count_include_pad, in_image, oh, out_row);
}

// Runs pixel_fn(in_image, oh, ow, out_pixel) for every output pixel, split over output rows.
template <typename PixelFn>
void for_each_output_pixel(int64_t batch, int64_t channels, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                           int64_t work_per_pixel, const float* in, float* out, int threads, PixelFn pixel_fn) {
  const int64_t rows = batch * out_h;
  const int nt = cpu::threads_for_work(threads, rows * out_w * work_per_pixel * channels);
  cpu::parallel_pieces(nt, rows, cpu::pieces_for(nt, rows, rows * out_w * work_per_pixel * channels),
                       [&](int64_t first, int64_t last, int) {
                         for (int64_t r = first; r < last; ++r) {
                           const int64_t n = r / out_h, oh = r % out_h;
                           const float* in_image = in + n * in_h * in_w * channels;
                           float* out_row = out + r * out_w * channels;
                           for (int64_t ow = 0; ow < out_w; ++ow) pixel_fn(in_image, oh, ow, out_row + ow * channels);
                         }
                       });
}

// Global average pooling (a 1x1 output): the channel means of `pixels` rows of `channels`
// floats, for channels [c0, c1). The generic loop above keeps its running sums in the output
// (a load, an add and a store per pixel and vector, each add waiting for the store before it)
// and runs in the baseline ISA: EfficientNet-B0's squeeze-and-excitation pools took 4% of its
// time at batch 8. Here the sums of up to 4 vectors of channels stay in registers over every
// pixel, in two chains (even and odd pixels) so that an add does not wait for the one before
// it; one pass over the image per 4 vectors. The channels past the last whole vector are summed
// one at a time. Blocks are whole vectors, so each channel's order of additions depends on the
// ISA and the pixels only, never on the blocks or the threads.
template <int kLanes, int kVectors>
WINFER_ALWAYS_INLINE inline void channel_means_block(const float* x, int64_t pixels, int64_t channels, float* out) {
  using V = cpu::Vec<kLanes>;
  V even[kVectors] = {}, odd[kVectors] = {};
  int64_t i = 0;
  for (; i + 2 <= pixels; i += 2, x += 2 * channels) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      even[v] += cpu::load<kLanes>(x + v * kLanes);
      odd[v] += cpu::load<kLanes>(x + channels + v * kLanes);
    }
  }
  // A true division, as PyTorch's mean does.
  const V divisor = cpu::broadcast<kLanes>(static_cast<float>(pixels));
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) {
    if (i < pixels) even[v] += cpu::load<kLanes>(x + v * kLanes);
    cpu::store<kLanes>(out + v * kLanes, (even[v] + odd[v]) / divisor);
  }
}

template <int kLanes>
WINFER_ALWAYS_INLINE inline void channel_means_body(const float* image, int64_t pixels, int64_t channels, int64_t c0,
                                                    int64_t c1, float* out) {
  int64_t c = c0;
  for (; c + 4 * kLanes <= c1; c += 4 * kLanes) channel_means_block<kLanes, 4>(image + c, pixels, channels, out + c);
  switch ((c1 - c) / kLanes) {
    case 3: channel_means_block<kLanes, 3>(image + c, pixels, channels, out + c); break;
    case 2: channel_means_block<kLanes, 2>(image + c, pixels, channels, out + c); break;
    case 1: channel_means_block<kLanes, 1>(image + c, pixels, channels, out + c); break;
    default: break;
  }
  c += (c1 - c) / kLanes * kLanes;
  for (; c < c1; ++c) {
    float sum = 0.f;
    for (int64_t i = 0; i < pixels; ++i) sum += image[i * channels + c];
    out[c] = sum / static_cast<float>(pixels);
  }
}

WINFER_TARGET_AVX512 void channel_means_avx512(const float* image, int64_t pixels, int64_t channels, int64_t c0,
                                               int64_t c1, float* out) {
  channel_means_body<16>(image, pixels, channels, c0, c1, out);
}
WINFER_TARGET_AVX2 void channel_means_avx2(const float* image, int64_t pixels, int64_t channels, int64_t c0, int64_t c1,
                                           float* out) {
  channel_means_body<8>(image, pixels, channels, c0, c1, out);
}
void channel_means_generic(const float* image, int64_t pixels, int64_t channels, int64_t c0, int64_t c1, float* out) {
  channel_means_body<4>(image, pixels, channels, c0, c1, out);
}

// Every image's channel means, split over (image, block of channels): blocks of 64 channels, or
// fewer where that leaves a thread without a block (one image of 32 channels on 2 threads).
void global_avgpool_nhwc(int64_t batch, int64_t channels, int64_t pixels, const float* in, float* out, int threads) {
  auto* means = channel_means_generic;
  switch (cpu::cpu_isa()) {
    case cpu::Isa::kAvx512: means = channel_means_avx512; break;
    case cpu::Isa::kAvx2: means = channel_means_avx2; break;
    case cpu::Isa::kGeneric: break;
  }
  const int nt = cpu::threads_for_work(threads, batch * pixels * channels);
  int64_t block = 64;
  while (block > 16 && batch * cpu::ceil_div(channels, block) < nt) block /= 2;
  const int64_t blocks = cpu::ceil_div(channels, block), items = batch * blocks;
  cpu::parallel_pieces(
      nt, items, cpu::pieces_for(nt, items, batch * pixels * channels), [&](int64_t first, int64_t last, int) {
        for (int64_t item = first; item < last; ++item) {
          const int64_t n = item / blocks, c0 = item % blocks * block;
          means(in + n * pixels * channels, pixels, channels, c0, std::min(channels, c0 + block), out + n * channels);
        }
      });
}

}  // namespace

void maxpool2d_nhwc(const PoolParams& p, const float* in, float* out, int threads) {
  cpu::MaxPoolRowFn row_fn = nullptr;
  switch (cpu::cpu_isa()) {
    case cpu::Isa::kAvx512: row_fn = cpu::max_pool_row_avx512(); break;
    case cpu::Isa::kAvx2: row_fn = cpu::max_pool_row_avx2(); break;
    case cpu::Isa::kGeneric: break;
  }
  if (row_fn == nullptr) row_fn = max_row_generic;
  const int64_t rows = p.batch * p.out_h;
  const int nt = cpu::threads_for_work(threads, rows * p.out_w * p.kernel_h * p.kernel_w * p.channels);
  cpu::parallel_pieces(nt, rows, cpu::pieces_for(nt, rows, rows * p.out_w * p.kernel_h * p.kernel_w * p.channels),
                       [&](int64_t first, int64_t last, int) {
                         for (int64_t r = first; r < last; ++r) {
                           const int64_t n = r / p.out_h, oh = r % p.out_h;
                           row_fn(p, in + n * p.in_h * p.in_w * p.channels, oh, out + r * p.out_w * p.channels);
                         }
                       });
}

// Dilation is ignored: PyTorch's AvgPool2d has none.
void avgpool2d_nhwc(const PoolParams& p, bool count_include_pad, const float* in, float* out, int threads) {
  auto* row_fn = avg_row_generic;
  switch (cpu::cpu_isa()) {
    case cpu::Isa::kAvx512: row_fn = avg_row_avx512; break;
    case cpu::Isa::kAvx2: row_fn = avg_row_avx2; break;
    case cpu::Isa::kGeneric: break;
  }
  const int64_t rows = p.batch * p.out_h, work = rows * p.out_w * p.kernel_h * p.kernel_w * p.channels;
  const int nt = cpu::threads_for_work(threads, work);
  cpu::parallel_pieces(nt, rows, cpu::pieces_for(nt, rows, work), [&](int64_t first, int64_t last, int) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t n = r / p.out_h, oh = r % p.out_h;
      row_fn(p, count_include_pad, in + n * p.in_h * p.in_w * p.channels, oh, out + r * p.out_w * p.channels);
    }
  });
}

void adaptive_avgpool2d_nhwc(int64_t batch, int64_t channels, int64_t in_h, int64_t in_w, int64_t out_h, int64_t out_w,
                             const float* in, float* out, int threads) {
  if (out_h == 1 && out_w == 1) return global_avgpool_nhwc(batch, channels, in_h * in_w, in, out, threads);
  if (in_h % out_h == 0 && in_w % out_w == 0) {
    // Even bins (VGG's 7x7 -> 7x7, 14x14 -> 7x7): an average pooling with kernel = stride = in/out
    // and no padding, whose windows are these bins, through its per-ISA rows.
    PoolParams p;
    p.batch = batch;
    p.channels = channels;
    p.in_h = in_h;
    p.in_w = in_w;
    p.out_h = out_h;
    p.out_w = out_w;
    p.kernel_h = p.stride_h = in_h / out_h;
    p.kernel_w = p.stride_w = in_w / out_w;
    return avgpool2d_nhwc(p, /*count_include_pad=*/false, in, out, threads);
  }
  // Bin i over n inputs and m outputs: [floor(i*n/m), ceil((i+1)*n/m)). Bins may overlap when
  // n is not a multiple of m (e.g. 5 -> 3: [0,2) [1,4) [3,5)).
  auto bin_start = [](int64_t i, int64_t n, int64_t m) { return (i * n) / m; };
  auto bin_end = [](int64_t i, int64_t n, int64_t m) { return cpu::ceil_div((i + 1) * n, m); };
  const int64_t bin_area = cpu::ceil_div(in_h, out_h) * cpu::ceil_div(in_w, out_w) + 1;
  for_each_output_pixel(batch, channels, in_h, in_w, out_h, out_w, bin_area, in, out, threads,
                        [&](const float* image, int64_t oh, int64_t ow, float* o) {
                          const int64_t h0 = bin_start(oh, in_h, out_h), h1 = bin_end(oh, in_h, out_h);
                          const int64_t w0 = bin_start(ow, in_w, out_w), w1 = bin_end(ow, in_w, out_w);
                          std::fill(o, o + channels, 0.f);
                          for (int64_t ih = h0; ih < h1; ++ih)
                            for (int64_t iw = w0; iw < w1; ++iw) {
                              const float* x = image + (ih * in_w + iw) * channels;
                              for (int64_t c = 0; c < channels; ++c) o[c] += x[c];
                            }
                          const float divisor = static_cast<float>((h1 - h0) * (w1 - w0));
                          for (int64_t c = 0; c < channels; ++c) o[c] /= divisor;
                        });
}

}  // namespace winfer
