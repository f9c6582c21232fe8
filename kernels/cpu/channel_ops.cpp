// Channel-axis data movement on NHWC tensors: every pixel is a row of C floats, so concat,
// split and shuffle are per-row copies/permutations, independent across pixels (split over
// pixels between threads).
#include "kernels/cpu/channel_ops.h"

#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_common.h"

namespace winfer {

void concat_channels_nhwc(int64_t pixels, int num_inputs, const float* const* inputs, const int64_t* channels,
                          float* out, int threads) {
  int64_t width = 0, copied = 0;
  for (int i = 0; i < num_inputs; ++i) {
    width += channels[i];
    if (inputs[i] != nullptr) copied += channels[i];
  }
  if (copied == 0) return;
  cpu::parallel_chunks(pixels, copied, threads, [&](int64_t begin, int64_t end) {
    for (int64_t px = begin; px < end; ++px) {
      float* dst = out + px * width;
      for (int i = 0; i < num_inputs; ++i) {
        if (inputs[i] != nullptr) {
          std::memcpy(dst, inputs[i] + px * channels[i], static_cast<size_t>(channels[i]) * sizeof(float));
        }
        dst += channels[i];
      }
    }
  });
}

void split_channels_nhwc(int64_t pixels, const float* in, int num_outputs, const int64_t* channels,
                         float* const* outputs, int threads) {
  split_channels_strided_nhwc(pixels, in, num_outputs, channels, outputs, channels, threads);
}

void split_channels_strided_nhwc(int64_t pixels, const float* in, int num_outputs, const int64_t* channels,
                                 float* const* outputs, const int64_t* out_strides, int threads) {
  int64_t width = 0;
  for (int i = 0; i < num_outputs; ++i) width += channels[i];
  cpu::parallel_chunks(pixels, width, threads, [&](int64_t begin, int64_t end) {
    for (int64_t px = begin; px < end; ++px) {
      const float* src = in + px * width;
      for (int i = 0; i < num_outputs; ++i) {
        const int64_t stride = out_strides[i] > 0 ? out_strides[i] : channels[i];
        std::memcpy(outputs[i] + px * stride, src, static_cast<size_t>(channels[i]) * sizeof(float));
        src += channels[i];
      }
    }
  });
}

namespace {

// One pixel's row: dst[j*g + i] = src[i*(C/g) + j]. Two groups (ShuffleNetV2's) interleave two
// half rows, written in order: a loop GCC vectorizes. The general loop, which the compiler left
// scalar with its counters spilled to the stack, took 70-100 us per stage-3 shuffle of
// ShuffleNetV2 inside a run (16% of the network's time at 2 threads).
void shuffle_row(const float* __restrict src, float* __restrict dst, int64_t groups, int64_t per_group) {
  if (groups == 2) {
    const float* a = src;
    const float* b = src + per_group;
    for (int64_t j = 0; j < per_group; ++j) {
      dst[2 * j] = a[j];
      dst[2 * j + 1] = b[j];
    }
    return;
  }
  for (int64_t i = 0; i < groups; ++i)
    for (int64_t j = 0; j < per_group; ++j) dst[j * groups + i] = src[i * per_group + j];
}

}  // namespace

// out channel j*g + i <- in channel i*(C/g) + j. Viewing the input row as a (g x C/g) matrix,
// the output row is its transpose, so the loop reads input rows contiguously. In place
// (in == out) is allowed: each pixel is first copied to a per-chunk scratch row.
void channel_shuffle_nhwc(int64_t pixels, int64_t channels, int64_t groups, const float* in, float* out, int threads) {
  const int64_t per_group = channels / groups;
  cpu::parallel_chunks(pixels, channels, threads, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(in == out ? static_cast<size_t>(channels) : 0);
    for (int64_t px = begin; px < end; ++px) {
      const float* src = in + px * channels;
      float* dst = out + px * channels;
      if (in == out) {
        std::memcpy(scratch.data(), src, static_cast<size_t>(channels) * sizeof(float));
        src = scratch.data();
      }
      shuffle_row(src, dst, groups, per_group);
    }
  });
}

}  // namespace winfer
