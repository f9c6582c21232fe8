// Pooling: one thread per output element (n, oh, ow, c) with c fastest, so a warp reads a run of
// consecutive channels of each input pixel of the window and writes a run of the output.
#include "kernels/cuda/pooling.h"

#include <cmath>

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

// Output element i -> (n, oh, ow, c).
struct OutputIndex {
  int64_t n, oh, ow, c;
};
__device__ __forceinline__ OutputIndex decompose(int64_t i, int64_t channels, int64_t out_h, int64_t out_w) {
  OutputIndex o;
  o.c = i % channels;
  int64_t rest = i / channels;
  o.ow = rest % out_w;
  rest /= out_w;
  o.oh = rest % out_h;
  o.n = rest / out_h;
  return o;
}

__global__ void maxpool_kernel(PoolParams p, const float* in, float* out) {
  const int64_t count = p.batch * p.out_h * p.out_w * p.channels;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const OutputIndex o = decompose(i, p.channels, p.out_h, p.out_w);
    const float* image = in + o.n * p.in_h * p.in_w * p.channels + o.c;
    float best = -INFINITY;
    for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
      const int64_t ih = o.oh * p.stride_h - p.pad_top + kh * p.dilation_h;
      if (ih < 0 || ih >= p.in_h) continue;
      for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
        const int64_t iw = o.ow * p.stride_w - p.pad_left + kw * p.dilation_w;
        if (iw < 0 || iw >= p.in_w) continue;
        const float v = image[(ih * p.in_w + iw) * p.channels];
        best = (v > best || v != v) ? v : best;  // v != v: a NaN tap wins, as in PyTorch
      }
    }
    out[i] = best;
  }
}

// PyTorch's AvgPool2d: the window [h0, h0 + k) is first clipped to the padded input (its size is
// the count_include_pad divisor), then to the input (the taps summed, and the other divisor).
__global__ void avgpool_kernel(PoolParams p, bool count_include_pad, const float* in, float* out) {
  const int64_t count = p.batch * p.out_h * p.out_w * p.channels;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const OutputIndex o = decompose(i, p.channels, p.out_h, p.out_w);
    int64_t h0 = o.oh * p.stride_h - p.pad_top, w0 = o.ow * p.stride_w - p.pad_left;
    int64_t h1 = min64(h0 + p.kernel_h, p.in_h + p.pad_top), w1 = min64(w0 + p.kernel_w, p.in_w + p.pad_left);
    const int64_t padded_size = (h1 - h0) * (w1 - w0);
    h0 = max64(h0, 0);
    w0 = max64(w0, 0);
    h1 = min64(h1, p.in_h);
    w1 = min64(w1, p.in_w);
    if (h0 >= h1 || w0 >= w1) {  // window entirely in the padding: PyTorch gives 0
      out[i] = 0.f;
      continue;
    }
    const float* image = in + o.n * p.in_h * p.in_w * p.channels + o.c;
    float sum = 0.f;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) sum += image[(ih * p.in_w + iw) * p.channels];
    const int64_t divisor = count_include_pad ? padded_size : (h1 - h0) * (w1 - w0);
    out[i] = sum / static_cast<float>(divisor);
  }
}

struct AdaptiveShape {
  int64_t batch, channels, in_h, in_w, out_h, out_w;
};

__global__ void adaptive_avgpool_kernel(AdaptiveShape s, const float* in, float* out) {
  const int64_t count = s.batch * s.out_h * s.out_w * s.channels;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const OutputIndex o = decompose(i, s.channels, s.out_h, s.out_w);
    const int64_t h0 = o.oh * s.in_h / s.out_h, h1 = ceil_div((o.oh + 1) * s.in_h, s.out_h);
    const int64_t w0 = o.ow * s.in_w / s.out_w, w1 = ceil_div((o.ow + 1) * s.in_w, s.out_w);
    const float* image = in + o.n * s.in_h * s.in_w * s.channels + o.c;
    float sum = 0.f;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) sum += image[(ih * s.in_w + iw) * s.channels];
    out[i] = sum / static_cast<float>((h1 - h0) * (w1 - w0));
  }
}

bool valid(const PoolParams& p) {
  return p.batch >= 0 && p.channels >= 0 && p.in_h >= 1 && p.in_w >= 1 && p.out_h >= 0 && p.out_w >= 0 &&
         p.kernel_h >= 1 && p.kernel_w >= 1 && p.stride_h >= 1 && p.stride_w >= 1 && p.pad_top >= 0 &&
         p.pad_left >= 0 && p.dilation_h >= 1 && p.dilation_w >= 1;
}

Status check(const char* what, bool ok, int64_t out_count, const float* in, float* out) {
  if (!ok) return invalid_argument(std::string(what) + ": invalid pooling parameters");
  if (out_count > 0 && (!in || !out)) return invalid_argument(std::string(what) + ": null tensor pointer");
  return Status();
}

}  // namespace

Status maxpool2d_nhwc(const PoolParams& p, const float* in, float* out, cudaStream_t stream) {
  const int64_t count = p.batch * p.out_h * p.out_w * p.channels;
  WINFER_CUDA_RETURN_IF_ERROR(check("maxpool2d", valid(p), count, in, out));
  return launch("maxpool2d", grid_stride_config(count), stream, maxpool_kernel, p, in, out);
}

// Dilation is ignored: PyTorch's AvgPool2d has none.
Status avgpool2d_nhwc(const PoolParams& p, bool count_include_pad, const float* in, float* out, cudaStream_t stream) {
  const int64_t count = p.batch * p.out_h * p.out_w * p.channels;
  WINFER_CUDA_RETURN_IF_ERROR(check("avgpool2d", valid(p), count, in, out));
  return launch("avgpool2d", grid_stride_config(count), stream, avgpool_kernel, p, count_include_pad, in, out);
}

Status adaptive_avgpool2d_nhwc(int64_t batch, int64_t channels, int64_t in_h, int64_t in_w, int64_t out_h,
                               int64_t out_w, const float* in, float* out, cudaStream_t stream) {
  const AdaptiveShape s{batch, channels, in_h, in_w, out_h, out_w};
  const bool ok = batch >= 0 && channels >= 0 && in_h >= 1 && in_w >= 1 && out_h >= 1 && out_w >= 1;
  const int64_t count = batch * out_h * out_w * channels;
  WINFER_CUDA_RETURN_IF_ERROR(check("adaptive_avgpool2d", ok, count, in, out));
  return launch("adaptive_avgpool2d", grid_stride_config(count), stream, adaptive_avgpool_kernel, s, in, out);
}

}  // namespace cuda
}  // namespace winfer
