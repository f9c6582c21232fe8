// The depthwise kernel's edges (kernels/cpu/conv_depthwise.cpp): its fast path (kernel width 3,
// 5 or 7, stride 1 or 2 along W: 7-pixel tiles, tiles crossing the left/right edges, single-pixel
// tiles past the last full one, one- and two-vector tiles, channel tails as an overlapping last
// vector and, below one vector, scalar code, groups of output rows, row x channel-slice thread
// splits) and the one-pixel path for every other shape, against the float64 reference and
// `direct`, under every ISA this machine runs, and bitwise the same for 2 and 3 threads.
#include <doctest/doctest.h>

#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_algorithm.h"

namespace winfer {
namespace {

using test::Conv;
using test::ConvCase;
using test::kNone;
using test::kRelu;
using test::kRelu6;

Conv dw(int64_t n, int64_t c, int64_t h, int64_t w) { return Conv(n, c, h, w, c).g(c); }

TEST_CASE("depthwise: edge shapes match the float64 reference and direct, every ISA and thread count") {
  const ConvAlgorithm* depthwise = find_conv_algorithm("depthwise");
  REQUIRE(depthwise != nullptr);
  const std::vector<ConvCase> cases = {
      // Fast path, 3x3 stride 1: one tile plus a single pixel, widths 15 (2 tiles + 1), 3 (no full
      // tile), no padding (every tile inside), asymmetric padding with windows past the right edge.
      {dw(1, 16, 9, 8).k(3, 3).pad(1).p, true, kRelu},
      {dw(1, 32, 14, 15).k(3, 3).pad(1).p, true, kRelu6},
      {dw(1, 13, 5, 3).k(3, 3).pad(1).p, false, kNone},
      {dw(1, 8, 9, 20).k(3, 3).p, true, kNone},
      {dw(1, 8, 8, 9).k(3, 3).pad(2, 0, 1, 3).p, true, kRelu},
      // Channel tails (AVX-512 lanes): 58 = 3x16 + 10 (ShuffleNet), 116 = 7x16 + 4, 37 = 2x16 + 5, 3 (scalar only).
      {dw(1, 58, 28, 28).k(3, 3).pad(1).p, true, kNone},
      {dw(1, 116, 14, 14).k(3, 3).s(2, 2).pad(1).p, true, kNone},
      {dw(1, 37, 14, 14).k(5, 5).s(2, 2).pad(2).p, true, kRelu6},
      {dw(1, 3, 7, 21).k(3, 3).pad(1).p, false, kRelu},
      // Stride 2, batch > 1, odd sizes, asymmetric padding.
      {dw(2, 24, 11, 13).k(3, 3).s(2, 2).pad(1).p, false, kNone},
      {dw(2, 144, 9, 30).k(3, 3).s(2, 2).pad(0, 1, 1, 0).p, true, kRelu6},
      {dw(3, 5, 9, 8).k(3, 3).s(1, 2).pad(1).p, true, kNone},
      // 5x5 and 7x7, windows wholly in the padding (pad 4 of a 4x4 input).
      {dw(1, 40, 13, 13).k(5, 5).pad(2).p, true, kRelu},
      {dw(1, 16, 4, 4).k(5, 5).pad(4).p, true, kNone},
      {dw(1, 20, 10, 10).k(7, 7).pad(3).p, true, kRelu6},
      // The fast path along W with any kernel height, stride and dilation along H.
      {dw(1, 24, 12, 14).k(5, 3).s(2, 1).pad(2, 1, 2, 1).d(2, 1).p, true, kNone},
      // The one-pixel path: dilation along W, stride 3, 7x7 stride 2, kernel width 2.
      {dw(1, 19, 13, 11).k(3, 3).pad(2).d(1, 2).p, true, kNone},
      {dw(1, 4, 9, 9).k(3, 3).s(3, 3).pad(1).p, true, kRelu},
      {dw(1, 12, 15, 15).k(7, 7).s(2, 2).pad(3).p, false, kNone},
      {dw(1, 6, 8, 9).k(3, 2).pad(1, 0, 1, 1).p, true, kRelu6},
      // Big enough for several threads: 7 rows on 2 and 3 threads (channel slices), rows of three
      // images in one split, EfficientNet's 5x5 stride 2.
      {dw(1, 1152, 7, 7).k(5, 5).pad(2).p, true, kNone},
      {dw(3, 96, 14, 14).k(3, 3).s(2, 2).pad(1).p, true, kRelu6},
      {dw(1, 144, 56, 56).k(5, 5).s(2, 2).pad(2).p, true, kNone},
  };
  test::check_on_edge_cases(*depthwise, cases, 900);
}

}  // namespace
}  // namespace winfer
