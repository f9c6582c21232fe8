// What the engine asks of an op that runs a CPU convolution algorithm (the per-layer choice of
// conv_algorithm "auto", engine/src/conv_autotune.cpp), without knowing the layer's class:
// Op::conv() returns it, or null for ops that are not convolutions. The engine thus never
// includes layers/ (docs/ARCHITECTURE.md, "Folders and their rules").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/conv_params.h"
#include "winfer/shape.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {

class ConvAlgorithm;

class ConvCapability {
 public:
  virtual ~ConvCapability() = default;

  // The convolution for a given input shape (NCHW).
  virtual ConvParams params_for(const Shape& input) const = 0;
  // The OIHW weights (batch norm folded in), possibly unpacked from the layout they were packed
  // into at load; an error naming `user` (the algorithm asking) where that cannot be undone.
  virtual Result<Tensor> weight_oihw(const std::string& user) const = 0;
  virtual const Tensor& bias() const = 0;  // [Co]; empty when there is none
  virtual Activation activation() const = 0;
  // The CPU algorithm whose layout the weights were packed into at load (null: none): a kernel
  // compiled with it shares the model's packed weights.
  virtual const ConvAlgorithm* packed_for() const = 0;
  // True once an add was absorbed: inputs are then (x, residual), or (x, scale, residual) with
  // an input scale.
  virtual bool has_residual() const = 0;
  // True once a channel scale of the input was absorbed (rule channel_scale_conv): inputs (x,
  // scale[, residual]).
  virtual bool has_input_scale() const = 0;
  // The bytes of workspace the op's CPU kernel needs when its convolution runs `algorithm`
  // (with a fused pooling's or depthwise convolution's bands) in a session of `threads` threads.
  virtual size_t kernel_workspace_bytes(const ConvAlgorithm& algorithm, const std::vector<Shape>& inputs,
                                        const std::vector<Shape>& outputs, int threads) const = 0;
  // The bytes of an absorbed depthwise convolution's weights (0 when none): they do not depend
  // on the algorithm chosen for this one.
  virtual size_t absorbed_conv_weight_bytes() const = 0;

  // A grouped convolution (depthwise or not) this op absorbed, which its kernel runs after its
  // own band by band (a 1x1 -> grouped pair, kernels/cpu/conv_then_conv.h): the absorbed op, its
  // params for this op's `input` shape, and the algorithm it runs when this op runs `algorithm`
  // (the same one where it can: RegNet's grouped 3x3 runs indirect when its 1x1 does). What
  // "auto" times for this op is that pair. nullopt when nothing was absorbed.
  struct AbsorbedConv {
    const ConvCapability* op = nullptr;
    ConvParams params;
    const ConvAlgorithm* algorithm = nullptr;
  };
  virtual std::optional<AbsorbedConv> absorbed_conv(const ConvAlgorithm& algorithm, const Shape& input) const = 0;
};

}  // namespace winfer
