// The INT8 convolution shared by conv2d_int8 and linear_int8 (a linear layer is a 1x1
// convolution over N pixels): packing the s8 weights once with the requantization of the
// layer (kernels/cpu/conv_s8.h's contract), and the CPU kernel that runs im2win, indirect or
// depthwise on u8 NHWC tensors, with a fused residual (u8, its own scale) or max pooling.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/src/op.h"
#include "engine/src/quantization.h"
#include "kernels/common/activation.h"
#include "kernels/common/pool_params.h"

namespace winfer {

// What a quantized model file gives an INT8 layer (engine/src/quant_model.h), OIHW order.
struct Int8LayerWeights {
  std::vector<int8_t> weight;       // [Co][Cin/groups][Kh][Kw]
  std::vector<float> weight_scale;  // [Co]
  std::vector<int32_t> bias;        // [Co] at input_scale * weight_scale; empty: no bias
};

// The u8 grids around an INT8 layer.
struct Int8LayerQuant {
  quant::TensorQuant input, output;
  std::optional<quant::TensorQuant> residual;  // a fused add's second operand
};

// Weights packed for conv_s8 (im2win and indirect share them) or its depthwise kernel, with
// the folded bias and the float32 multipliers M[oc] = s_x * s_w[oc] / s_y.
struct Int8PackedConv {
  Tensor blob;  // u8, 64-byte aligned
  bool depthwise = false;
  int32_t lo = 0, hi = 255;  // the output clamp: the fused activation
};

// Packs for the convolution shape p (only its channels, groups and kernel size matter).
// Errors say what is out of range (a multiplier, a too-deep K for int32).
Result<Int8PackedConv> pack_int8_conv(const ConvParams& p, const Int8LayerWeights& weights, const Int8LayerQuant& quant,
                                      Activation activation);

// The output clamp [lo, hi] of u8 grid `out` for a fused activation (none: the whole range).
void int8_activation_clamp(const quant::TensorQuant& out, Activation activation, int32_t* lo, int32_t* hi);

// The CPU kernel for params p: "im2win" (default) or "indirect" as the session's algorithm
// asks, depthwise layers their own kernel; `pool` a fused max pooling of the convolution's
// output (computed in the workspace); inputs (x[, residual]) and the output u8 NHWC.
std::unique_ptr<Kernel> make_int8_conv_kernel(const ConvParams& p, const Int8PackedConv& packed,
                                              const Int8LayerQuant& quant, const std::optional<PoolParams>& pool,
                                              const CompileOptions& options, const std::string& fused_note);

}  // namespace winfer
