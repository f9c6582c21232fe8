#include "layers/int8_conv.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/conv_s8.h"
#include "kernels/cpu/maxpool_u8.h"

namespace winfer {
namespace {

constexpr size_t kAlign = 64;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// M = s_x * s_w / s_y computed in double and rounded once to float32 (conv_s8.h).
float multiplier(float in_scale, float weight_scale, float out_scale) {
  return static_cast<float>(double(in_scale) * double(weight_scale) / double(out_scale));
}

enum class Int8Kind { kIm2win, kIndirect, kDepthwise };

const char* kind_name(Int8Kind kind) {
  switch (kind) {
    case Int8Kind::kIm2win: return "im2win";
    case Int8Kind::kIndirect: return "indirect";
    case Int8Kind::kDepthwise: return "depthwise";
  }
  return "?";
}

class Int8ConvKernel : public Kernel {
 public:
  Int8ConvKernel(const ConvParams& p, const Int8PackedConv& packed, const Int8LayerQuant& quant,
                 const std::optional<PoolParams>& pool, Int8Kind kind, int threads, std::string note)
      : p_(p), packed_(packed.blob), kind_(kind), pool_(pool), note_(std::move(note)) {
    if (quant.residual) {
      residual_.zero = quant.residual->zero_point;
      residual_.scale = static_cast<float>(double(quant.residual->scale) / double(quant.output.scale));
      residual_.pixel_stride = p.out_channels;
    }
    has_residual_ = quant.residual.has_value();
    conv_workspace_ = kind_ == Int8Kind::kIm2win ? aligned(cpu::s8_im2win_workspace_bytes(p_, threads)) : 0;
    // A fused pooling reads the convolution's whole u8 output from the workspace.
    pool_buffer_ = pool_ ? aligned(static_cast<size_t>(p_.batch * p_.out_h() * p_.out_w() * p_.out_channels)) : 0;
  }
  size_t workspace_bytes() const override { return conv_workspace_ + pool_buffer_; }
  size_t shared_weight_bytes() const override { return packed_.bytes(); }
  // The residual is read element by element just before the store of the same element.
  int in_place_input() const override { return has_residual_ && kind_ != Int8Kind::kDepthwise ? 1 : -1; }
  std::string describe() const override {
    return std::string("int8 ") + kind_name(kind_) + " (" + cpu::s8_isa_name(cpu::s8_isa()) + ")" +
           (note_.empty() ? "" : " " + note_);
  }
  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, void* workspace,
           int threads) const override {
    uint8_t* ws = static_cast<uint8_t*>(workspace);
    uint8_t* conv_out = pool_ ? ws + conv_workspace_ : out[0]->u8();
    const uint8_t* x = in[0]->u8();
    cpu::S8Residual residual = residual_;
    if (has_residual_) residual.data = in[1]->u8();
    const cpu::S8Residual* r = has_residual_ ? &residual : nullptr;
    switch (kind_) {
      case Int8Kind::kIm2win: cpu::s8_im2win_conv(p_, x, packed_.u8(), conv_out, ws, threads, r); break;
      case Int8Kind::kIndirect: cpu::s8_indirect_conv(p_, x, packed_.u8(), conv_out, threads, r); break;
      case Int8Kind::kDepthwise: cpu::s8_depthwise_conv(p_, x, packed_.u8(), conv_out, threads); break;
    }
    if (pool_) cpu::maxpool2d_nhwc_u8(*pool_, conv_out, out[0]->u8(), threads);
  }

 private:
  ConvParams p_;
  Tensor packed_;
  Int8Kind kind_;
  std::optional<PoolParams> pool_;
  std::string note_;
  cpu::S8Residual residual_;
  bool has_residual_ = false;
  size_t conv_workspace_ = 0, pool_buffer_ = 0;
};

}  // namespace

void int8_activation_clamp(const quant::TensorQuant& out, Activation activation, int32_t* lo, int32_t* hi) {
  *lo = quant::kActivationMin;
  *hi = quant::kActivationMax;
  if (activation == Activation::kRelu || activation == Activation::kRelu6) *lo = out.zero_point;
  if (activation == Activation::kRelu6) {
    const double six = std::nearbyint(6.0 / double(out.scale)) + out.zero_point;
    *hi = static_cast<int32_t>(std::min<double>(quant::kActivationMax, six));
  }
}

Result<Int8PackedConv> pack_int8_conv(const ConvParams& p, const Int8LayerWeights& weights, const Int8LayerQuant& quant,
                                      Activation activation) {
  const size_t co = static_cast<size_t>(p.out_channels);
  const size_t per = static_cast<size_t>(p.in_channels_per_group() * p.kernel_h * p.kernel_w);
  if (weights.weight.size() != co * per || weights.weight_scale.size() != co ||
      (!weights.bias.empty() && weights.bias.size() != co)) {
    return internal_error("INT8 weights of " + p.to_string() + " have the wrong sizes");
  }
  std::vector<float> mult(co);
  for (size_t o = 0; o < co; ++o) {
    mult[o] = multiplier(quant.input.scale, weights.weight_scale[o], quant.output.scale);
  }
  cpu::S8ConvQuant q;
  q.in_zero = quant.input.zero_point;
  q.out_zero = quant.output.zero_point;
  q.multiplier = mult.data();
  q.bias = weights.bias.empty() ? nullptr : weights.bias.data();
  int8_activation_clamp(quant.output, activation, &q.lo, &q.hi);
  Int8PackedConv packed;
  packed.depthwise = p.is_depthwise();
  packed.lo = q.lo;
  packed.hi = q.hi;
  try {
    const size_t bytes = packed.depthwise ? cpu::s8_depthwise_packed_bytes(p) : cpu::s8_conv_packed_bytes(p);
    packed.blob = Tensor::allocate(Shape{static_cast<int64_t>(bytes)}, Layout::kPlain, DType::kUInt8);
    if (packed.depthwise) {
      cpu::s8_pack_depthwise(p, weights.weight.data(), q, packed.blob.u8());
    } else {
      cpu::s8_pack_conv(p, weights.weight.data(), q, packed.blob.u8());
    }
  } catch (const std::invalid_argument& e) {
    return invalid_argument(e.what());
  }
  return packed;
}

std::unique_ptr<Kernel> make_int8_conv_kernel(const ConvParams& p, const Int8PackedConv& packed,
                                              const Int8LayerQuant& quant, const std::optional<PoolParams>& pool,
                                              const CompileOptions& options, const std::string& fused_note) {
  Int8Kind kind = Int8Kind::kIm2win;
  if (packed.depthwise) {
    kind = Int8Kind::kDepthwise;
  } else if (options.conv_algorithm != nullptr && std::string(options.conv_algorithm->name()) == "indirect") {
    kind = Int8Kind::kIndirect;
  }
  return std::make_unique<Int8ConvKernel>(p, packed, quant, pool, kind, std::max(1, options.threads), fused_note);
}

}  // namespace winfer
