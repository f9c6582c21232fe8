// Element-wise kernels. Each output element depends only on the same element of the inputs,
// so running in place (out == in, out == a or out == b) is safe. Activations are applied as a
// clamp (see cpu_common.h) so the loops stay branch-free and vectorise.
#include "kernels/cpu/elementwise.h"

#include "kernels/cpu/cpu_common.h"

namespace winfer {

void activation_inplace_or_copy(const float* in, float* out, int64_t count, Activation act, int threads) {
  if (act == Activation::kNone && in == out) return;
  const cpu::Clamp clip = cpu::activation_clamp(act);
  cpu::parallel_chunks(count, 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = cpu::clamp(in[i], clip);
  });
}

void add(const float* a, const float* b, float* out, int64_t count, Activation act, int threads) {
  const cpu::Clamp clip = cpu::activation_clamp(act);
  cpu::parallel_chunks(count, 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = cpu::clamp(a[i] + b[i], clip);
  });
}

void scale_shift_channels_nhwc(const float* in, const float* scale, const float* shift, float* out, int64_t pixels,
                               int64_t channels, Activation act, int threads) {
  const cpu::Clamp clip = cpu::activation_clamp(act);
  cpu::parallel_chunks(pixels, channels, threads, [&](int64_t begin, int64_t end) {
    for (int64_t px = begin; px < end; ++px) {
      const float* x = in + px * channels;
      float* y = out + px * channels;
      for (int64_t c = 0; c < channels; ++c) y[c] = cpu::clamp(x[c] * scale[c] + shift[c], clip);
    }
  });
}

}  // namespace winfer
