#include "kernels/cpu/conv_pool.h"

namespace winfer {

ConvPool::ConvPool(const ConvAlgorithm& algorithm, const ConvParams& conv, const PoolParams& pool, BandSizing sizing)
    : pool_(pool),
      bands_(algorithm, conv, RowWindow{pool.kernel_h, pool.stride_h, pool.pad_top, pool.dilation_h, pool.out_h},
             sizing) {}

void ConvPool::run(const float* input_nhwc, const float* packed, const float* bias, float* output_nhwc, void* workspace,
                   Activation act, int threads) const {
  const int64_t out_row_floats = pool_.out_w * pool_.channels;
  bands_.run(input_nhwc, ConvBands::Conv{packed, bias, act, std::nullopt}, workspace, threads,
             [&](int64_t n, int64_t images, const ConvBands::Band& b, const float* rows, void*, int band_threads) {
               // The pooling of rows [o0, o1) as one of its own: the band's rows are its input,
               // with the part of the windows above them as padding.
               PoolParams pool = pool_;
               pool.batch = images;
               pool.in_h = b.r1 - b.r0;
               pool.out_h = b.o1 - b.o0;
               pool.pad_top = b.r0 - (b.o0 * pool_.stride_h - pool_.pad_top);
               maxpool2d_nhwc(pool, rows, output_nhwc + (n * pool_.out_h + b.o0) * out_row_floats, band_threads);
             });
}

}  // namespace winfer
