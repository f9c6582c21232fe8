#include "kernels/cpu/conv_then_conv.h"

#include <algorithm>

#include "kernels/cpu/pointwise.h"

namespace winfer {

ConvThenConv::ConvThenConv(const ConvAlgorithm& first_algorithm, const ConvParams& first,
                           const ConvAlgorithm& second_algorithm, const ConvParams& second, BandSizing sizing)
    : second_(second),
      bands_(first_algorithm, first,
             RowWindow{second.kernel_h, second.stride_h, second.pad_top, second.dilation_h, second.out_h()}, sizing) {
  size_t scratch = 0;
  bands_.for_each_band([&](const ConvBands::Band& b) {
    scratch = std::max(scratch, second_algorithm.workspace_bytes(second_rows_problem(b, bands_.images_per_band())));
  });
  bands_.for_each_lane_band([&](const ConvBands::Band& b) {
    scratch = std::max(scratch, second_algorithm.workspace_bytes(second_rows_problem(b, 1)));
  });
  bands_.reserve_scratch(scratch);
}

ConvParams ConvThenConv::second_rows_problem(const ConvBands::Band& b, int64_t images) const {
  ConvParams p = second_;
  p.batch = images;
  // Windows of output rows [o0, o1) span input rows [top, bottom); the band holds [r0, r1) of
  // them, the rest is padding (out_h() comes out as o1 - o0).
  const RowSpan read = window_rows(b.o0, b.o1, second_.kernel_h, second_.stride_h, second_.pad_top, second_.dilation_h);
  p.in_h = b.r1 - b.r0;
  p.pad_top = b.r0 - read.top;
  p.pad_bottom = read.bottom - b.r1;
  return p;
}

void ConvThenConv::run(const float* input_nhwc, const ConvStage& first, const ConvStage& second, float* output_nhwc,
                       void* workspace, int threads) const {
  const int64_t out_row_floats = second_.out_w() * second_.out_channels;
  bands_.run(
      input_nhwc, ConvBands::Conv{first.packed, first.bias, first.act, first.pointwise}, workspace, threads,
      [&](int64_t n, int64_t images, const ConvBands::Band& b, const float* rows, void* scratch, int band_threads) {
        float* out = output_nhwc + (n * second_.out_h() + b.o0) * out_row_floats;
        second.algorithm->run(second_rows_problem(b, images), rows, second.packed, second.bias, out, scratch,
                              second.act, band_threads);
        // A band of several images covers them whole: their output rows are contiguous.
        if (second.pointwise)
          pointwise_activation(out, out, images * (b.o1 - b.o0) * out_row_floats, *second.pointwise, band_threads);
      });
}

}  // namespace winfer
