// One interface for every CPU convolution algorithm (direct, im2col, depthwise, im2win,
// indirect). Tensors are channels-last:
//   input  [N][H][W][C]            (C = in_channels)
//   output [N][Ho][Wo][Co]
//   weight [Co][C/groups][Kh][Kw]  (PyTorch OIHW), given to pack_weights() once
// run() must be safe to call concurrently from several threads with distinct output/workspace.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/conv_params.h"

namespace winfer {

class ConvAlgorithm {
 public:
  virtual ~ConvAlgorithm() = default;

  virtual const char* name() const = 0;
  virtual bool supports(const ConvParams& p) const = 0;
  // Why a session should leave a shape this algorithm supports to the default (im2win)
  // because it would be slower there, or empty when it takes it. Only sessions ask (a layer's
  // note then says why); the algorithm itself still runs the shape when called.
  virtual std::string declines(const ConvParams& /*p*/) const { return {}; }
  // How run() computes this shape where it differs from the algorithm's usual path, for the
  // per-layer profile (e.g. im2win's "group sets"); empty otherwise.
  virtual std::string variant(const ConvParams& /*p*/) const { return {}; }
  // Whether a user may choose this algorithm for a whole session (SessionOptions::conv_algorithm,
  // LoadOptions::pack_for, `--conv`) and the autotuner times it. False for an algorithm a layer
  // takes because of its shape (depthwise: every depthwise layer, whatever the session asks);
  // such an algorithm is neither listed nor accepted as a choice.
  virtual bool user_selectable() const { return true; }
  // The fewest output rows a sub-problem of this layer should have when a banded run
  // (kernels/cpu/conv_bands.h: a convolution fused with the pooling or depthwise layer after it)
  // computes it a band of rows at a time, and the multiple of rows a band's size should be;
  // 1 and 1 where any band runs as fast per row as the whole layer. Winograd's tiles and
  // streamed weights make small bands slower (docs/PERFORMANCE.md, "Winograd under a pooling").
  struct BandRows {
    int64_t min_rows = 1, multiple = 1;
  };
  virtual BandRows band_rows(const ConvParams& /*whole*/) const { return {}; }
  // Scratch memory run() needs (bytes), for exactly these params (batch included).
  virtual size_t workspace_bytes(const ConvParams& p) const = 0;
  // Size of the algorithm's own weight layout (bytes).
  virtual size_t packed_weight_bytes(const ConvParams& p) const = 0;
  // Rearranges OIHW weights into `packed` (packed_weight_bytes(p) bytes, 64-byte aligned).
  // Packing may depend on the channels, kernel and groups, never on the batch or the spatial
  // size: a model packs once (LoadOptions::pack_for) for sessions of any batch.
  virtual void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const = 0;
  // Whether the packed weights go in 2 MiB pages (Tensor::allocate's huge_pages): for a packed
  // copy that run() sweeps whole and that is larger than the weights themselves.
  virtual bool packed_weights_in_huge_pages() const { return false; }
  // pack_weights into the weights' own storage, where the packed layout has exactly as many
  // floats as OIHW (so a model packing at load needs no second copy of its weights); returns
  // false, touching nothing, where it cannot.
  virtual bool pack_weights_in_place(const ConvParams& /*p*/, float* /*weights*/) const { return false; }
  // Whether unpack_weights can undo pack_weights (the packed layout is a permutation of the
  // weights plus zero padding). Lets a model keep only its packed weights and still give other
  // algorithms and devices the OIHW weights they pack from.
  virtual bool can_unpack_weights() const { return false; }
  // The inverse of pack_weights; only called where can_unpack_weights().
  virtual void unpack_weights(const ConvParams& /*p*/, const float* /*packed*/, float* /*weight_oihw*/) const {}
  // A per-input-channel scale folded into packed weights (rule channel_scale_conv: a
  // squeeze-and-excitation product run as the next convolution's weights instead of a pass
  // over its input): whether this layout for p has one row per input channel that
  // scale_packed_input_channels can scale. False by default.
  virtual bool scales_packed_input_channels(const ConvParams& /*p*/) const { return false; }
  // `scaled` (packed_weight_bytes(p) bytes) = the weights of conv(x * scale), scale[0,
  // in_channels), from `packed` (this algorithm's layout for p). Only where
  // scales_packed_input_channels(p).
  virtual void scale_packed_input_channels(const ConvParams& /*p*/, const float* /*packed*/, const float* /*scale*/,
                                           float* /*scaled*/) const {}
  // output = act(conv(input, weights) + bias + residual). bias may be null. residual (a
  // ResNet shortcut fused into the convolution) is null or has the output's shape and layout,
  // and must not overlap the output unless residual_may_alias_output() (then it may be it). workspace has
  // workspace_bytes(p) bytes (may be null when that is 0). threads >= 1.
  virtual void run(const ConvParams& p, const float* input_nhwc, const float* packed, const float* bias,
                   const float* residual_nhwc, float* output_nhwc, void* workspace, Activation act,
                   int threads) const = 0;
  // True when run() stays correct with residual_nhwc == output_nhwc: each output element reads
  // its own residual element just before writing it, and nothing else reads the residual (the
  // micro-kernel algorithms add it in the tile's store). Lets the planner put the output in the
  // residual's storage when the residual dies at this layer.
  virtual bool residual_may_alias_output() const { return false; }
  // True when run() honours ConvParams::out_pixel_stride (without a residual): it writes each
  // output pixel's out_channels floats at output_nhwc + pixel * out_stride() and touches
  // nothing between them. Lets a concat's input be written straight into its channel slice
  // of the concat's output (docs/MEMORY.md, "Concat without copies").
  virtual bool supports_output_stride() const { return false; }
  // The same without a residual.
  void run(const ConvParams& p, const float* input_nhwc, const float* packed, const float* bias, float* output_nhwc,
           void* workspace, Activation act, int threads) const {
    run(p, input_nhwc, packed, bias, nullptr, output_nhwc, workspace, act, threads);
  }
};

// Every registered algorithm, in a fixed order ("direct", "im2col", "depthwise", ...).
const std::vector<const ConvAlgorithm*>& conv_algorithms();
// nullptr when no algorithm has that name.
const ConvAlgorithm* find_conv_algorithm(std::string_view name);
// The user_selectable() ones, in the same order: what sessions accept and list as choices.
const std::vector<const ConvAlgorithm*>& selectable_conv_algorithms();

}  // namespace winfer
