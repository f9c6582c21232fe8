// The element-wise activations that are not a clamp (sigmoid, hardsigmoid, hardswish, silu):
// vocabulary shared by their layer (layers/pointwise_activation.h) and its CPU and CUDA kernels.
// Unlike `Activation` (activation.h) they are not a clamp in the store's registers: a convolution
// that absorbed one (rule conv_pointwise) applies it in a pass over its output after the
// convolution, on the CPU and CUDA alike.
#pragma once

namespace winfer {

// PyTorch's definitions (torch.nn.Sigmoid, Hardsigmoid, Hardswish, SiLU):
//   sigmoid(x)     = 1 / (1 + exp(-x))
//   hardsigmoid(x) = min(max(x + 3, 0), 6) / 6
//   hardswish(x)   = x * min(max(x + 3, 0), 6) / 6
//   silu(x)        = x / (1 + exp(-x))   (= x * sigmoid(x))
enum class PointwiseFn { kSigmoid, kHardSigmoid, kHardSwish, kSilu };

// The op type of each: "sigmoid", "hardsigmoid", "hardswish", "silu".
inline const char* pointwise_fn_name(PointwiseFn fn) {
  switch (fn) {
    case PointwiseFn::kSigmoid: return "sigmoid";
    case PointwiseFn::kHardSigmoid: return "hardsigmoid";
    case PointwiseFn::kHardSwish: return "hardswish";
    case PointwiseFn::kSilu: return "silu";
  }
  return "?";
}

}  // namespace winfer
