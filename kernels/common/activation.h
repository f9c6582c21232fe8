// The activations fused into kernels' epilogues (convolution, linear, add, batch norm) and the
// element-wise relu/relu6 ops: vocabulary shared by the CPU and CUDA kernels and the layers.
#pragma once

namespace winfer {

// Activation fused into a kernel's epilogue.
enum class Activation { kNone, kRelu, kRelu6 };
const char* activation_name(Activation a);

inline float apply_activation(float v, Activation a) {
  if (a == Activation::kRelu) return v > 0.f ? v : 0.f;
  if (a == Activation::kRelu6) return v < 0.f ? 0.f : (v > 6.f ? 6.f : v);
  return v;
}

}  // namespace winfer
