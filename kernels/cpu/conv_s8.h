// INT8 convolutions (issue 27, kernels): im2win, indirect and depthwise on quantized tensors,
// with bias, requantization and the activation fused into the micro-kernels' epilogue. The
// engine-facing interface: ConvParams, raw pointers and the plain structs below, no graph types.
//
// Arithmetic contract (what the quantizer must produce and what every ISA path computes, bit
// for bit):
//
//   activations  u8 per tensor with a zero point:  x_real = s_x * (q_x - z_x),  q_x in [0, 255]
//   weights      s8 per output channel, symmetric: w_real = s_w[oc] * q_w,     q_w in [-128, 127]
//   bias         int32 per output channel:         b_real = s_x * s_w[oc] * q_b
//                (the quantizer rounds b / (s_x * s_w[oc]) to nearest; the kernels never see a
//                float bias)
//   accumulator  int32:  acc[oc] = q_b[oc] + sum_k (q_x[k] - z_x) * q_w[oc][k]
//                (padding taps are real zeros: q_x = z_x there, contributing nothing)
//   output       u8:     q_y = clamp(round_half_even(float(acc) * M[oc]) + z_y, lo, hi)
//                with M[oc] = s_x * s_w[oc] / s_y given as float32 (the quantizer computes it in
//                double and rounds once to float32), float(acc) the int32 -> float32 conversion
//                (round to nearest even), one float32 multiply, rounded to the nearest integer
//                (ties to even; the product is first clamped to +-65536, which changes no result
//                since the final clamp is within [0, 255]), then + z_y and the integer clamp.
//                The activation is the clamp: none [0, 255]; ReLU [z_y, 255]; ReLU6
//                [z_y, min(255, z_y + round(6 / s_y))].
//   residual     (optional, im2win and indirect: ResNet's conv + add + ReLU in one pass) a u8
//                tensor of the output's shape, x_r = s_r * (q_r - z_r), added before the clamp:
//                  f   = fmaf(float(q_r - z_r), R, float(acc) * M[oc]),   R = s_r / s_y (float32)
//                  q_y = clamp(round_half_even(clamp(f, +-65536)) + z_y, lo, hi)
//                float(acc) * M[oc] rounded once to float32 as above, then one fused multiply-add
//                (q_r - z_r times R plus that product, rounded once): _mm512_fmadd_ps,
//                _mm256_fmadd_ps and std::fma compute the same float. The activation clamp
//                applies after the add: relu(conv + residual). s8_requantize_residual() below
//                is the reference; it calls std::fma with the product as a separate operand,
//                so no -ffp-contract setting can fuse anything else.
//
// Why a float32 multiplier and not gemmlowp's fixed-point multiplier and shift: the float epilogue
// is 3 instructions per 16 outputs on AVX-512 and 8 on AVX2 (convert, multiply, convert back;
// the clamp of the product and z_y are shared), against 6-8 for a rounding 32x32 -> 64-bit
// high multiply done on even and odd lanes, and IEEE binary32 makes it bit-exact across the
// SIMD paths and the scalar reference as long as the rounding mode is the default (MXCSR
// round-to-nearest; nothing in winfer changes it). The product is one rounding, so the result
// is the exact product's rounding to 24 bits: at most one unit off round(acc * M_exact) when
// |acc * M| >= 2^23, far outside [0, 255] after z_y, so within the clamp it is the exactly
// rounded value of acc * M (M itself being the float32 the quantizer stored).
//
// The zero-point term is folded into the bias once, when the weights are packed:
// bias'[oc] = q_b[oc] - z_x * sum_k q_w[oc][k], so that the inner loops are pure u8 x s8 dot
// products (VNNI vpdpbusd) over the raw q_x, padding filled with z_x. The accumulation is exact
// in int32 while K * 255 * 128 + |bias| < 2^31 (K = Kh * Kw * C/groups up to 65,536, checked at
// packing).
//
// Layouts: activations NHWC u8 (a pixel's channels contiguous; the output may be a channel
// slice of a wider tensor, ConvParams::out_pixel_stride, counted in bytes = channels), no
// alignment or padding required: nothing is read or written outside the tensors' bytes.
// Packed weights: s8_pack_conv() / s8_pack_depthwise() once per model, the same bytes for every
// ISA (VNNI, AVX2, scalar), see conv_s8.cpp and conv_depthwise_s8.cpp. Results do not depend on
// the thread count (each output is computed by the same kernel call whatever the split).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/common/conv_params.h"

namespace winfer {
namespace cpu {

// The residual added in the epilogue (see the contract above): u8 NHWC of the output's shape,
// channel oc of output pixel m (m counting over batch, rows and columns) at
// data[m * pixel_stride + oc]. It may be the output itself (data == output, pixel_stride ==
// the output's pixel stride): every output value reads its own residual value before it is
// written, and reads no other output value.
struct S8Residual {
  const uint8_t* data = nullptr;
  int64_t pixel_stride = 0;  // bytes between pixels, >= out_channels
  int32_t zero = 0;          // z_r, 0..255
  float scale = 0;           // R = s_r / s_y, finite
};

// The quantization of one convolution, given to packing.
struct S8ConvQuant {
  int32_t in_zero = 0;                // z_x, 0..255
  const float* multiplier = nullptr;  // [Co]: M[oc] = s_x * s_w[oc] / s_y, finite, >= 0
  const int32_t* bias = nullptr;      // [Co]: q_b, or null (no bias)
  int32_t out_zero = 0;               // z_y, 0..255
  int32_t lo = 0, hi = 255;           // output clamp, 0 <= lo <= hi <= 255 (the fused activation)
};

// The INT8 path the kernels take: the widest of VNNI (AVX-512 VNNI: vpdpbusd), AVX2 (vpmaddwd on
// widened values, exact) and the scalar code that the CPU runs and cpu_isa() allows
// (WINFER_ISA=avx2|generic or set_isa_cap_for_testing lower it like the FP32 kernels').
enum class S8Isa { kGeneric = 0, kAvx2 = 1, kVnni = 2 };
S8Isa s8_isa();
const char* s8_isa_name(S8Isa isa);

// Regular and grouped convolutions (im2win and indirect share the packed weights). Throws
// std::invalid_argument naming the problem when p is invalid, K is too deep for int32 or the
// quantization parameters are out of range.
size_t s8_conv_packed_bytes(const ConvParams& p);
void s8_pack_conv(const ConvParams& p, const int8_t* weight_oihw, const S8ConvQuant& q, void* packed);

// im2win: the window tensor holds R output rows' windows per thread (z_x in the padding).
// workspace_bytes depends on the thread count (one set of window rows per thread); 0 for 1x1
// convolutions (and Kh = 1 without padding) whose channels per group are a multiple of 4, which
// read the input in place.
// `residual` (null: none) is added in the epilogue.
size_t s8_im2win_workspace_bytes(const ConvParams& p, int threads);
void s8_im2win_conv(const ConvParams& p, const uint8_t* input_nhwc, const void* packed, uint8_t* output_nhwc,
                    void* workspace, int threads, const S8Residual* residual = nullptr);

// Indirect convolution: per tile of output pixels, one pointer per pixel and tap (built on the
// fly in the thread's stack or heap), padding taps pointing at a row of z_x. No workspace.
void s8_indirect_conv(const ConvParams& p, const uint8_t* input_nhwc, const void* packed, uint8_t* output_nhwc,
                      int threads, const S8Residual* residual = nullptr);

// Depthwise (groups == in_channels == out_channels): weights [C][1][Kh][Kw] OIHW s8.
size_t s8_depthwise_packed_bytes(const ConvParams& p);
void s8_pack_depthwise(const ConvParams& p, const int8_t* weight_oihw, const S8ConvQuant& q, void* packed);
void s8_depthwise_conv(const ConvParams& p, const uint8_t* input_nhwc, const void* packed, uint8_t* output_nhwc,
                       int threads);

// The epilogue of one output value (the scalar reference every path matches bit for bit).
inline uint8_t s8_requantize(int32_t acc, float multiplier, int32_t out_zero, int32_t lo, int32_t hi) {
  float f = static_cast<float>(acc) * multiplier;
  f = f < -65536.f ? -65536.f : f;
  f = f > 65536.f ? 65536.f : f;
  int32_t r = static_cast<int32_t>(__builtin_nearbyintf(f)) + out_zero;
  r = r < lo ? lo : r;
  r = r > hi ? hi : r;
  return static_cast<uint8_t>(r);
}

// The epilogue of one output value with a residual value q_r (the reference of every path):
// fmaf(float(q_r - z_r), R, float(acc) * M), then the clamps and rounding of s8_requantize.
// The product is a named float and the add is std::fma's: nothing is left for the compiler to
// contract.
inline uint8_t s8_requantize_residual(int32_t acc, float multiplier, int32_t residual, int32_t res_zero,
                                      float res_scale, int32_t out_zero, int32_t lo, int32_t hi) {
  const float product = static_cast<float>(acc) * multiplier;
  float f = std::fma(static_cast<float>(residual - res_zero), res_scale, product);
  f = f < -65536.f ? -65536.f : f;
  f = f > 65536.f ? 65536.f : f;
  int32_t r = static_cast<int32_t>(__builtin_nearbyintf(f)) + out_zero;
  r = r < lo ? lo : r;
  r = r > hi ? hi : r;
  return static_cast<uint8_t>(r);
}

}  // namespace cpu
}  // namespace winfer
