#include "kernels/cpu/conv_common.h"

#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace cpu {

int64_t ghwio_weight_floats(const ConvParams& p) {
  return p.groups * p.kernel_h * p.kernel_w * p.in_channels_per_group() * p.out_channels_per_group();
}

void pack_weights_ghwio(const ConvParams& p, const float* weight_oihw, float* packed) {
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const int64_t kh = p.kernel_h, kw = p.kernel_w;
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t o = 0; o < cog; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t x = 0; x < kw; ++x) {
            const float w = weight_oihw[(((g * cog + o) * cg + c) * kh + y) * kw + x];
            packed[(((g * kh + y) * kw + x) * cg + c) * cog + o] = w;
          }
}

void bias_residual_activation_rows(float* out, int64_t pixels, int64_t channels, const float* bias,
                                   const float* residual, Activation act, int threads) {
  if (bias == nullptr && residual == nullptr && act == Activation::kNone) return;
  const Clamp clip = activation_clamp(act);
  const int nt = threads_for_work(threads, pixels * channels / 4);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t px = 0; px < pixels; ++px) {
    float* row = out + px * channels;
    const float* res = residual != nullptr ? residual + px * channels : nullptr;
    // bias first, then the residual: the order of the unfused conv-then-add, so that fusing
    // does not change the rounding.
    if (bias != nullptr && res != nullptr)
      for (int64_t c = 0; c < channels; ++c) row[c] = clamp((row[c] + bias[c]) + res[c], clip);
    else if (bias != nullptr)
      for (int64_t c = 0; c < channels; ++c) row[c] = clamp(row[c] + bias[c], clip);
    else if (res != nullptr)
      for (int64_t c = 0; c < channels; ++c) row[c] = clamp(row[c] + res[c], clip);
    else
      for (int64_t c = 0; c < channels; ++c) row[c] = clamp(row[c], clip);
  }
}

void add_residual(const ConvParams& p, const float* residual, float* output, Activation act, int threads) {
  if (residual == nullptr) return;
  bias_residual_activation_rows(output, p.batch * p.out_h() * p.out_w(), p.out_channels, nullptr, residual, act,
                                threads);
}

}  // namespace cpu
}  // namespace winfer
