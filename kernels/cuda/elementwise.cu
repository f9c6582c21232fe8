// Element-wise kernels: one grid-stride loop each, one element per thread and iteration, so
// consecutive threads touch consecutive addresses (coalesced).
#include "kernels/cuda/elementwise.h"

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

__global__ void activation_kernel(const float* in, float* out, int64_t count, Clamp clip) {
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) out[i] = apply_clamp(in[i], clip);
}

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t count, Clamp clip) {
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) out[i] = apply_clamp(a[i] + b[i], clip);
}

__global__ void scale_shift_kernel(const float* in, const float* scale, const float* shift, float* out, int64_t count,
                                   int64_t channels, Clamp clip) {
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t c = i % channels;
    out[i] = apply_clamp(in[i] * scale[c] + shift[c], clip);
  }
}

__global__ void bias_activation_kernel(float* data, int64_t count, int64_t cols, const float* bias, Clamp clip) {
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const float v = bias ? data[i] + bias[i % cols] : data[i];
    data[i] = apply_clamp(v, clip);
  }
}

Status check_count(const char* what, int64_t count, bool pointers_set) {
  if (count < 0) return invalid_argument(std::string(what) + ": negative element count");
  if (count > 0 && !pointers_set) return invalid_argument(std::string(what) + ": null tensor pointer");
  return Status();
}

}  // namespace

Status activation_inplace_or_copy(const float* in, float* out, int64_t count, Activation act, cudaStream_t stream) {
  WINFER_CUDA_RETURN_IF_ERROR(check_count("activation", count, in && out));
  if (act == Activation::kNone && in == out) return Status();
  return launch("activation", grid_stride_config(count), stream, activation_kernel, in, out, count,
                activation_clamp(act));
}

Status add(const float* a, const float* b, float* out, int64_t count, Activation act, cudaStream_t stream) {
  WINFER_CUDA_RETURN_IF_ERROR(check_count("add", count, a && b && out));
  return launch("add", grid_stride_config(count), stream, add_kernel, a, b, out, count, activation_clamp(act));
}

Status scale_shift_channels_nhwc(const float* in, const float* scale, const float* shift, float* out, int64_t pixels,
                                 int64_t channels, Activation act, cudaStream_t stream) {
  if (pixels < 0 || channels < 0) return invalid_argument("scale_shift: negative size");
  const int64_t count = pixels * channels;
  WINFER_CUDA_RETURN_IF_ERROR(check_count("scale_shift", count, in && scale && shift && out));
  return launch("scale_shift", grid_stride_config(count), stream, scale_shift_kernel, in, scale, shift, out, count,
                channels, activation_clamp(act));
}

Status bias_activation_rows(float* data, int64_t rows, int64_t cols, const float* bias, Activation act,
                            cudaStream_t stream) {
  if (rows < 0 || cols < 0) return invalid_argument("bias_activation: negative size");
  if (!bias && act == Activation::kNone) return Status();
  const int64_t count = rows * cols;
  WINFER_CUDA_RETURN_IF_ERROR(check_count("bias_activation", count, data != nullptr));
  return launch("bias_activation", grid_stride_config(count), stream, bias_activation_kernel, data, count, cols, bias,
                activation_clamp(act));
}

}  // namespace cuda
}  // namespace winfer
