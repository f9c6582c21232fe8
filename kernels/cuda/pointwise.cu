// Element-wise activations and products: grid-stride loops, one element per thread and
// iteration (coalesced), as in elementwise.cu.
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/pointwise.h"

namespace winfer {
namespace cuda {
namespace {

__device__ __forceinline__ float hardsigmoid_numerator(float x) {  // min(max(x + 3, 0), 6), NaN kept
  float t = x + 3.f;
  t = t < 0.f ? 0.f : t;
  return t > 6.f ? 6.f : t;
}

__global__ void pointwise_kernel(const float* in, float* out, int64_t count, PointwiseFn fn) {
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const float x = in[i];
    float y;
    switch (fn) {
      case PointwiseFn::kSigmoid: y = 1.f / (1.f + expf(-x)); break;
      case PointwiseFn::kHardSigmoid: y = hardsigmoid_numerator(x) / 6.f; break;
      case PointwiseFn::kHardSwish: y = x * hardsigmoid_numerator(x) / 6.f; break;
      default: y = x / (1.f + expf(-x)); break;  // kSilu
    }
    out[i] = y;
  }
}

__global__ void mul_kernel(const float* a, const float* b, float* out, int64_t count) {
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) out[i] = a[i] * b[i];
}

__global__ void scale_channels_kernel(const float* in, const float* scale, float* out, int64_t count,
                                      int64_t image_size, int64_t channels) {
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    out[i] = in[i] * scale[(i / image_size) * channels + i % channels];
  }
}

Status check_count(const char* what, int64_t count, bool pointers_set) {
  if (count < 0) return invalid_argument(std::string(what) + ": negative element count");
  if (count > 0 && !pointers_set) return invalid_argument(std::string(what) + ": null tensor pointer");
  return Status();
}

}  // namespace

Status pointwise_activation(const float* in, float* out, int64_t count, PointwiseFn fn, cudaStream_t stream) {
  WINFER_CUDA_RETURN_IF_ERROR(check_count(pointwise_fn_name(fn), count, in && out));
  return launch(pointwise_fn_name(fn), grid_stride_config(count), stream, pointwise_kernel, in, out, count, fn);
}

Status mul(const float* a, const float* b, float* out, int64_t count, cudaStream_t stream) {
  WINFER_CUDA_RETURN_IF_ERROR(check_count("mul", count, a && b && out));
  return launch("mul", grid_stride_config(count), stream, mul_kernel, a, b, out, count);
}

Status scale_channels_nhwc(const float* in, const float* scale, float* out, int64_t batch, int64_t pixels,
                           int64_t channels, cudaStream_t stream) {
  if (batch < 0 || pixels < 0 || channels < 0) return invalid_argument("scale_channels: negative size");
  const int64_t count = batch * pixels * channels;
  WINFER_CUDA_RETURN_IF_ERROR(check_count("scale_channels", count, in && scale && out));
  return launch("scale_channels", grid_stride_config(count), stream, scale_channels_kernel, in, scale, out, count,
                pixels * channels, channels);
}

}  // namespace cuda
}  // namespace winfer
