// Concat and split copy one channel slice per launch (one launch per input/output: a handful per
// layer, and no device-side array of pointers to upload). Channel shuffle gathers each output
// channel from its source; in place, a block first stages the whole pixel row in shared memory.
#include "kernels/cuda/channel_ops.h"

#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

// out[p][out_offset + c] = in[p][in_offset + c] for p < pixels, c < width.
__global__ void copy_channel_slice_kernel(const float* in, int64_t in_row, int64_t in_offset, float* out,
                                          int64_t out_row, int64_t out_offset, int64_t pixels, int64_t width) {
  const int64_t count = pixels * width;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t p = i / width, c = i % width;
    out[p * out_row + out_offset + c] = in[p * in_row + in_offset + c];
  }
}

// Output channel o = j*g + i reads input channel i*(C/g) + j.
__device__ __forceinline__ int64_t shuffle_source(int64_t o, int64_t groups, int64_t per_group) {
  return (o % groups) * per_group + o / groups;
}

__global__ void channel_shuffle_kernel(const float* in, float* out, int64_t pixels, int64_t channels, int64_t groups) {
  const int64_t count = pixels * channels, per_group = channels / groups;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t p = i / channels, o = i % channels;
    out[i] = in[p * channels + shuffle_source(o, groups, per_group)];
  }
}

// In place: block b permutes pixels b, b + gridDim.x, ... Every read of a pixel happens before
// the barrier, every write after it, and no other block touches that pixel.
__global__ void channel_shuffle_inplace_kernel(float* data, int64_t pixels, int64_t channels, int64_t groups) {
  __shared__ float row[kMaxInPlaceShuffleChannels];
  WINFER_EMU_SHARED(row);
  const int64_t per_group = channels / groups;
  for (int64_t p = blockIdx.x; p < pixels; p += gridDim.x) {
    float* pixel = data + p * channels;
    for (int64_t c = threadIdx.x; c < channels; c += blockDim.x) row[c] = pixel[c];
    __syncthreads();
    for (int64_t o = threadIdx.x; o < channels; o += blockDim.x) pixel[o] = row[shuffle_source(o, groups, per_group)];
    __syncthreads();  // the row buffer is refilled by the next pixel
  }
}

// One launch of copy_channel_slice_kernel; nothing to do for an empty slice.
Status copy_channel_slice(const char* what, const float* in, int64_t in_row, int64_t in_offset, float* out,
                          int64_t out_row, int64_t out_offset, int64_t pixels, int64_t width, cudaStream_t stream) {
  if (pixels * width == 0) return Status();
  if (!in || !out) return invalid_argument(std::string(what) + ": null tensor pointer");
  return launch(what, grid_stride_config(pixels * width), stream, copy_channel_slice_kernel, in, in_row, in_offset, out,
                out_row, out_offset, pixels, width);
}

// The sum of `count` channel counts (the concatenated row width).
Status total_width(const char* what, int64_t pixels, int count, const int64_t* channels, int64_t* width) {
  if (pixels < 0 || count < 0 || (count > 0 && !channels))
    return invalid_argument(std::string(what) + ": bad arguments");
  *width = 0;
  for (int i = 0; i < count; ++i) {
    if (channels[i] < 0) return invalid_argument(std::string(what) + ": negative channel count");
    *width += channels[i];
  }
  return Status();
}

}  // namespace

Status concat_channels_nhwc(int64_t pixels, int num_inputs, const float* const* inputs, const int64_t* channels,
                            float* out, cudaStream_t stream) {
  int64_t width = 0;
  WINFER_CUDA_RETURN_IF_ERROR(total_width("concat", pixels, num_inputs, channels, &width));
  if (num_inputs > 0 && !inputs) return invalid_argument("concat: null input list");
  int64_t offset = 0;
  for (int i = 0; i < num_inputs; ++i) {
    WINFER_CUDA_RETURN_IF_ERROR(
        copy_channel_slice("concat", inputs[i], channels[i], 0, out, width, offset, pixels, channels[i], stream));
    offset += channels[i];
  }
  return Status();
}

Status split_channels_nhwc(int64_t pixels, const float* in, int num_outputs, const int64_t* channels,
                           float* const* outputs, cudaStream_t stream) {
  int64_t width = 0;
  WINFER_CUDA_RETURN_IF_ERROR(total_width("split", pixels, num_outputs, channels, &width));
  if (num_outputs > 0 && !outputs) return invalid_argument("split: null output list");
  int64_t offset = 0;
  for (int i = 0; i < num_outputs; ++i) {
    WINFER_CUDA_RETURN_IF_ERROR(
        copy_channel_slice("split", in, width, offset, outputs[i], channels[i], 0, pixels, channels[i], stream));
    offset += channels[i];
  }
  return Status();
}

Status channel_shuffle_nhwc(int64_t pixels, int64_t channels, int64_t groups, const float* in, float* out,
                            cudaStream_t stream) {
  if (pixels < 0 || channels < 0 || groups < 1 || channels % groups != 0)
    return invalid_argument("channel_shuffle: channels must be a multiple of groups >= 1");
  if (pixels * channels == 0) return Status();
  if (!in || !out) return invalid_argument("channel_shuffle: null tensor pointer");
  if (in != out)
    return launch("channel_shuffle", grid_stride_config(pixels * channels), stream, channel_shuffle_kernel, in, out,
                  pixels, channels, groups);
  if (channels > kMaxInPlaceShuffleChannels)
    return invalid_argument("channel_shuffle: in place supports at most " + std::to_string(kMaxInPlaceShuffleChannels) +
                            " channels, got " + std::to_string(channels));
  const LaunchConfig config{dim3(static_cast<unsigned>(min64(pixels, kMaxGridStrideBlocks))), dim3(kBlockThreads)};
  return launch("channel_shuffle (in place)", config, stream, channel_shuffle_inplace_kernel, out, pixels, channels,
                groups);
}

}  // namespace cuda
}  // namespace winfer
