// The op checker's cases (op_check.h): every registered op type with its edge shapes, tiny so
// that all of them run in about a second on the CPU and a few under the CUDA emulator. Shared
// by tests/engine/op_check_test.cpp (CPU, every algorithm) and tests/engine_cuda/
// op_check_test.cpp (CUDA). A new op type needs cases here (op_check_test.cpp fails until it
// has some) and a reference in op_check.h's op_specs().
#pragma once

#include <vector>

#include "engine/op_check.h"

namespace winfer {
namespace op_check {

// A convolution of the layer tests' table (layer_reference.h).
inline OpCheck conv(const layer_test::ConvCase& k) {
  return OpCheck("conv2d")
      .attr("in_channels", k.c)
      .attr("out_channels", k.co)
      .attr("kernel_size", {k.kh, k.kw})
      .attr("stride", {k.sh, k.sw})
      .attr("dilation", {k.dh, k.dw})
      .attr("padding", {k.pt, k.pl, k.pb, k.pr})
      .attr("groups", k.groups)
      .attr("bias", k.bias)
      .input(Shape{k.n, k.c, k.h, k.w});
}

// kConvCases: batch 1-3, odd sizes, padding (asymmetric too), stride 2, dilation, groups,
// depthwise, 1x1, 1x3, 5x5, 7x7, kernel = input, more channels than one GEMM tile, winograd's.
inline std::vector<OpCheck> conv2d_cases() {
  std::vector<OpCheck> cases;
  for (const layer_test::ConvCase& k : layer_test::kConvCases) cases.push_back(conv(k));
  // The defaults (stride 1, no padding, dilation 1, groups 1, bias) and int attributes.
  cases.push_back(
      OpCheck("conv2d").attr("in_channels", 3).attr("out_channels", 2).attr("kernel_size", 2).input(Shape{2, 3, 5, 4}));
  return cases;
}

// A pooling window of the layer tests' tables (layer_reference.h); dilation for maxpool2d only.
inline OpCheck pool(const char* type, const layer_test::PoolCase& k) {
  OpCheck c(type);
  c.attr("kernel_size", {k.kh, k.kw}).attr("stride", {k.sh, k.sw}).attr("padding", {k.ph, k.pw});
  if (k.dh != 1 || k.dw != 1) c.attr("dilation", {k.dh, k.dw});
  return c.attr("ceil_mode", k.ceil_mode).input(k.input);
}

// kPoolCases: ResNet's 3x3 s2 p1, odd inputs, ceil_mode's three edges (into the padding, a
// window starting in it dropped, past the input), rectangular windows, 1x1, window = input.
inline std::vector<OpCheck> maxpool2d_cases() {
  std::vector<OpCheck> cases;
  // All-negative data too: a padding tap counted as 0 would then win the max.
  for (float offset : {0.f, -2.f}) {
    for (const layer_test::PoolCase& k : layer_test::kPoolCases)
      cases.push_back(pool("maxpool2d", k).data(1.f, offset));
    for (const layer_test::PoolCase& k : layer_test::kDilatedCases)
      cases.push_back(pool("maxpool2d", k).data(1.f, offset));
  }
  cases.push_back(OpCheck("maxpool2d").attr("kernel_size", 3).input(Shape{1, 2, 6, 7}));  // stride = kernel_size
  return cases;
}

inline std::vector<OpCheck> avgpool2d_cases() {
  std::vector<OpCheck> cases;
  for (bool include_pad : {true, false})
    for (const layer_test::PoolCase& k : layer_test::kPoolCases)
      cases.push_back(pool("avgpool2d", k).attr("count_include_pad", include_pad));
  // Defaults: stride = kernel_size, count_include_pad = true.
  cases.push_back(OpCheck("avgpool2d").attr("kernel_size", 3).attr("padding", 1).input(Shape{2, 3, 7, 5}));
  return cases;
}

inline std::vector<OpCheck> adaptive_avgpool2d_cases() {
  const auto adaptive = [](const Shape& input, int64_t oh, int64_t ow) {
    OpCheck c("adaptive_avgpool2d");
    if (oh == ow) return c.attr("output_size", oh).input(input);
    return c.attr("output_size", {oh, ow}).input(input);
  };
  return {
      adaptive(Shape{2, 3, 7, 5}, 3, 4),   // bins that overlap and differ in size
      adaptive(Shape{3, 4, 6, 6}, 1, 1),   // global average pooling
      adaptive(Shape{1, 2, 3, 2}, 5, 3),   // output larger than the input (repeated bins)
      adaptive(Shape{1, 3, 7, 7}, 7, 7),   // identity
      adaptive(Shape{2, 5, 10, 9}, 4, 2),  // non-divisible both ways
  };
}

inline std::vector<OpCheck> linear_cases() {
  const auto linear = [](int64_t rows, int64_t in, int64_t out, bool bias) {
    return OpCheck("linear")
        .attr("in_features", in)
        .attr("out_features", out)
        .attr("bias", bias)
        .input(Shape{rows, in});
  };
  return {linear(3, 17, 10, true), linear(1, 64, 5, false), linear(4, 1, 3, true), linear(2, 33, 65, true),
          linear(17, 9, 6, true)};  // 17 rows: past CUDA's one-warp-per-output limit (16)
}

inline std::vector<OpCheck> all_op_cases() {
  std::vector<OpCheck> cases;
  const auto append = [&cases](const std::vector<OpCheck>& more) {
    cases.insert(cases.end(), more.begin(), more.end());
  };
  append(conv2d_cases());
  append({OpCheck("batchnorm2d").attr("num_features", 5).attr("eps", "0.001").input(Shape{3, 5, 4, 7}).data(4.f),
          OpCheck("batchnorm2d").attr("num_features", 1).input(Shape{2, 1, 3, 3})});
  // Values beyond [-6, 6] so that both clamps of relu6 matter; 2-D inputs too.
  append({OpCheck("relu").input(Shape{3, 5, 4, 7}).data(9.f), OpCheck("relu").input(Shape{3, 11}).data(9.f),
          OpCheck("relu6").input(Shape{3, 5, 4, 7}).data(9.f), OpCheck("relu6").input(Shape{3, 11}).data(9.f)});
  // sigmoid/silu's saturation (|x| up to 20), hardsigmoid/hardswish's two clamps at -3 and 3.
  for (const char* type : {"sigmoid", "hardsigmoid", "hardswish", "silu"})
    append({OpCheck(type).input(Shape{3, 5, 4, 7}).data(20.f), OpCheck(type).input(Shape{2, 6, 3, 5}).data(4.f),
            OpCheck(type).input(Shape{3, 11}).data(4.f)});
  append(maxpool2d_cases());
  append(avgpool2d_cases());
  append(adaptive_avgpool2d_cases());
  append(linear_cases());
  append({OpCheck("add").input(Shape{3, 5, 4, 7}).input(Shape{3, 5, 4, 7}).data(5.f),
          OpCheck("add").input(Shape{2, 9}).input(Shape{2, 9}).data(5.f)});
  // Same shapes, and squeeze-and-excitation's [N, C, 1, 1] scale over [N, C, H, W].
  append({OpCheck("mul").input(Shape{3, 5, 4, 7}).input(Shape{3, 5, 4, 7}).data(5.f),
          OpCheck("mul").input(Shape{2, 9}).input(Shape{2, 9}),
          OpCheck("mul").input(Shape{3, 5, 4, 7}).input(Shape{3, 5, 1, 1}),
          OpCheck("mul").input(Shape{2, 19, 3, 1}).input(Shape{2, 19, 1, 1}),
          OpCheck("mul").input(Shape{2, 4, 1, 1}).input(Shape{2, 4, 1, 1})});
  append({OpCheck("concat").input(Shape{3, 3, 5, 7}).input(Shape{3, 1, 5, 7}).input(Shape{3, 5, 5, 7}),
          OpCheck("concat").attr("dim", 1).input(Shape{1, 4, 3, 3}).input(Shape{1, 4, 3, 3}),
          OpCheck("concat").input(Shape{3, 7}).input(Shape{3, 2}).input(Shape{3, 9})});
  // torch.chunk: ceil(C / chunks) channels per piece, the last one smaller.
  append({OpCheck("split").attr("chunks", 3).input(Shape{3, 7, 3, 5}),
          OpCheck("split").attr("chunks", 4).input(Shape{2, 10, 1, 3}),
          OpCheck("split").attr("chunks", 2).attr("dim", 1).input(Shape{2, 6, 4, 4}),
          OpCheck("split").attr("chunks", 1).input(Shape{1, 5, 2, 2}),
          OpCheck("split").attr("sizes", {2, 5, 1}).input(Shape{2, 8, 3, 3}),
          OpCheck("split").attr("sizes", {4, 5}).input(Shape{3, 9}),
          OpCheck("split").attr("chunks", 3).input(Shape{3, 9})});
  append({OpCheck("channel_shuffle").attr("groups", 3).input(Shape{3, 12, 3, 5}),
          OpCheck("channel_shuffle").attr("groups", 2).input(Shape{2, 6, 4, 4}),
          OpCheck("channel_shuffle").attr("groups", 1).input(Shape{1, 5, 2, 3}),
          OpCheck("channel_shuffle").attr("groups", 7).input(Shape{1, 7, 3, 3}),
          OpCheck("channel_shuffle").attr("groups", 2).input(Shape{2, 116, 1, 1})});
  append({OpCheck("flatten").attr("start_dim", 1).input(Shape{3, 5, 3, 2}), OpCheck("flatten").input(Shape{2, 7, 1, 1}),
          OpCheck("flatten").input(Shape{2, 1, 3, 3}), OpCheck("flatten").input(Shape{1, 4, 1, 5}),
          OpCheck("flatten").input(Shape{3, 7})});
  // Logits up to 100: exp() overflows float unless the row maximum is subtracted first.
  for (const Shape& shape : {Shape{3, 10}, Shape{2, 5, 3, 3}, Shape{1, 1000}, Shape{2, 1, 2, 2}})
    for (float scale : {1.f, 100.f}) append({OpCheck("softmax").attr("dim", 1).input(shape).data(scale)});
  append({OpCheck("dropout").attr("p", "0.2").input(Shape{3, 5, 2, 7}), OpCheck("dropout").input(Shape{4, 9}),
          OpCheck("identity").input(Shape{3, 5, 2, 7}), OpCheck("identity").input(Shape{4, 9})});
  return cases;
}

}  // namespace op_check
}  // namespace winfer
