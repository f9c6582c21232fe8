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

// dst[2j] = a[j], dst[2j + 1] = b[j] for j < pairs: two kLanes-float vectors in, their lanes
// interleaved into two out (vpermt2ps on AVX-512), narrower vectors and single floats for the tail.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void interleave_pairs(const float* __restrict a, const float* __restrict b,
                                                  float* __restrict dst, int64_t pairs) {
  using cpu::load;
  using cpu::store;
  using cpu::Vec;
  int64_t j = 0;
  if constexpr (kLanes >= 16) {
    for (; j + 16 <= pairs; j += 16) {
      const Vec<16> x = load<16>(a + j), y = load<16>(b + j);
      store<16>(dst + 2 * j, __builtin_shufflevector(x, y, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
      store<16>(dst + 2 * j + 16,
                __builtin_shufflevector(x, y, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31));
    }
  }
  if constexpr (kLanes >= 8) {
    for (; j + 8 <= pairs; j += 8) {
      const Vec<8> x = load<8>(a + j), y = load<8>(b + j);
      store<8>(dst + 2 * j, __builtin_shufflevector(x, y, 0, 8, 1, 9, 2, 10, 3, 11));
      store<8>(dst + 2 * j + 8, __builtin_shufflevector(x, y, 4, 12, 5, 13, 6, 14, 7, 15));
    }
  }
  for (; j + 4 <= pairs; j += 4) {
    const Vec<4> x = load<4>(a + j), y = load<4>(b + j);
    store<4>(dst + 2 * j, __builtin_shufflevector(x, y, 0, 4, 1, 5));
    store<4>(dst + 2 * j + 4, __builtin_shufflevector(x, y, 2, 6, 3, 7));
  }
  for (; j < pairs; ++j) {
    dst[2 * j] = a[j];
    dst[2 * j + 1] = b[j];
  }
}

// dst[0, count) = the shuffled row's channels [first, first + count): shuffled channel k is input
// channel (k % g) * (C/g) + k / g. Two groups from an even channel interleave the two halves'
// runs from first / 2.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void shuffled_range(const float* __restrict src, float* __restrict dst, int64_t groups,
                                                int64_t per_group, int64_t first, int64_t count) {
  if (groups == 2 && first % 2 == 0) {
    const float* a = src + first / 2;
    interleave_pairs<kLanes>(a, src + per_group + first / 2, dst, count / 2);
    if (count % 2 != 0) dst[count - 1] = a[count / 2];
    return;
  }
  int64_t i = first % groups, j = first / groups;
  for (int64_t k = 0; k < count; ++k) {
    dst[k] = src[i * per_group + j];
    if (++i == groups) {
      i = 0;
      ++j;
    }
  }
}

struct ShuffleSplitArgs {
  int64_t groups, per_group, width;
  const float* in;
  int num_outputs;
  const int64_t* channels;
  float* const* outputs;
  const int64_t* out_strides;
};

// Pixels [begin, end) of channel_shuffle_split_nhwc, compiled per ISA (cpu_common.h).
template <int kLanes>
WINFER_ALWAYS_INLINE inline void shuffle_split_pixels(const ShuffleSplitArgs& a, int64_t begin, int64_t end) {
  for (int64_t px = begin; px < end; ++px) {
    const float* src = a.in + px * a.width;
    int64_t first = 0;
    for (int i = 0; i < a.num_outputs; ++i) {
      const int64_t stride = a.out_strides[i] > 0 ? a.out_strides[i] : a.channels[i];
      shuffled_range<kLanes>(src, a.outputs[i] + px * stride, a.groups, a.per_group, first, a.channels[i]);
      first += a.channels[i];
    }
  }
}
WINFER_TARGET_AVX512 void shuffle_split_pixels_avx512(const ShuffleSplitArgs& a, int64_t begin, int64_t end) {
  shuffle_split_pixels<16>(a, begin, end);
}
WINFER_TARGET_AVX2 void shuffle_split_pixels_avx2(const ShuffleSplitArgs& a, int64_t begin, int64_t end) {
  shuffle_split_pixels<8>(a, begin, end);
}
void shuffle_split_pixels_generic(const ShuffleSplitArgs& a, int64_t begin, int64_t end) {
  shuffle_split_pixels<4>(a, begin, end);
}
using ShuffleSplitFn = void (*)(const ShuffleSplitArgs&, int64_t, int64_t);
ShuffleSplitFn shuffle_split_pixels_for_isa() {
  switch (cpu::cpu_isa()) {
    case cpu::Isa::kAvx512: return shuffle_split_pixels_avx512;
    case cpu::Isa::kAvx2: return shuffle_split_pixels_avx2;
    case cpu::Isa::kGeneric: break;
  }
  return shuffle_split_pixels_generic;
}

}  // namespace

// out channel j*g + i <- in channel i*(C/g) + j. Viewing the input row as a (g x C/g) matrix,
// the output row is its transpose, so the loop reads input rows contiguously: the one-piece case
// of channel_shuffle_split_nhwc. In place (in == out), each pixel is first copied to a per-chunk
// scratch row (for callers outside a session: ChannelShuffleOp never runs in place).
void channel_shuffle_nhwc(int64_t pixels, int64_t channels, int64_t groups, const float* in, float* out, int threads) {
  const int64_t dense = 0;
  if (in != out) return channel_shuffle_split_nhwc(pixels, groups, in, 1, &channels, &out, &dense, threads);
  auto* fn = shuffle_split_pixels_for_isa();
  cpu::parallel_chunks(pixels, channels, threads, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(static_cast<size_t>(channels));
    for (int64_t px = begin; px < end; ++px) {
      float* dst = out + px * channels;
      std::memcpy(scratch.data(), dst, static_cast<size_t>(channels) * sizeof(float));
      // The row's copy as a one-pixel input, shuffled back into place.
      const ShuffleSplitArgs row{groups, channels / groups, channels, scratch.data(), 1, &channels, &dst, &dense};
      fn(row, 0, 1);
    }
  });
}

void channel_shuffle_split_nhwc(int64_t pixels, int64_t groups, const float* in, int num_outputs,
                                const int64_t* channels, float* const* outputs, const int64_t* out_strides,
                                int threads) {
  int64_t width = 0;
  for (int i = 0; i < num_outputs; ++i) width += channels[i];
  const ShuffleSplitArgs args{groups, width / groups, width, in, num_outputs, channels, outputs, out_strides};
  auto* fn = shuffle_split_pixels_for_isa();
  cpu::parallel_chunks(pixels, width, threads, [&](int64_t begin, int64_t end) { fn(args, begin, end); });
}

}  // namespace winfer
