// One interface for every CUDA convolution algorithm: the counterpart of
// kernels/cpu/conv_algorithm.h, so that the engine can treat both backends alike. Tensors are
// channels-last, as on the CPU (docs/CUDA.md explains the choice):
//   input  [N][H][W][C]            device memory
//   output [N][Ho][Wo][Co]         device memory
//   weight [Co][C/groups][Kh][Kw]  (PyTorch OIHW), given to pack_weights() on the host once
//
// Differences from the CPU interface, all because of the device:
//   * pack_weights() writes host memory; the caller uploads the packed weights once.
//   * run() takes a Context (stream, library handles) instead of a thread count and returns a
//     Status: every launch and library call is checked. Work is queued on ctx.stream and may
//     still be running when run() returns.
//   * tune(): a choice that depends on the device is made once per ConvParams before
//     workspace_bytes() and run() are asked (cuDNN: cudnnFindConvolutionForwardAlgorithm, whose
//     winner decides the workspace). Our own kernels have nothing to tune.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "kernels/common/conv_params.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;

  virtual const char* name() const = 0;
  // Shape support only; needs no device.
  virtual bool supports(const ConvParams& p) const = 0;
  // Whether a user may choose it for a session (SessionOptions::conv_algorithm); false for one a
  // layer takes because of its shape (depthwise), as on the CPU.
  virtual bool user_selectable() const { return true; }
  // Device-dependent choices for p, made once and cached (thread-safe). Default: nothing to do.
  virtual Status tune(const Context& /*ctx*/, const ConvParams& /*p*/) const { return Status(); }
  // Device scratch memory run() needs (bytes), for exactly these params (batch included). For an
  // algorithm that tunes, valid after tune(p) succeeded.
  virtual size_t workspace_bytes(const ConvParams& p) const = 0;
  // Size of the algorithm's own weight layout (bytes).
  virtual size_t packed_weight_bytes(const ConvParams& p) const = 0;
  // Rearranges OIHW weights (host) into `packed` (host, packed_weight_bytes(p) bytes).
  virtual void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const = 0;
  // output = act(conv(input, weights) + bias), queued on ctx.stream. bias may be null. workspace
  // has workspace_bytes(p) bytes (may be null when that is 0). All pointers are device memory.
  virtual Status run(const Context& ctx, const ConvParams& p, const float* input_nhwc, const float* packed,
                     const float* bias, float* output_nhwc, void* workspace, Activation act) const = 0;
};

// Every algorithm of this build, in a fixed order: "direct", "im2col", "depthwise", "im2win",
// then "cudnn" when cuDNN was found at build time.
const std::vector<const ConvAlgorithm*>& conv_algorithms();
// nullptr when no algorithm has that name.
const ConvAlgorithm* find_conv_algorithm(std::string_view name);

}  // namespace cuda
}  // namespace winfer
