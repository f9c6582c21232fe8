// pointwise_activation_rows (kernels/cpu/pointwise.h), what a convolution that absorbed a
// pointwise activation applies to each output tile: the same bits as pointwise_activation over
// the same values for every function and ISA, for short rows (gathered into one run, several
// batches of them) and long ones (row by row), dense and strided, and nothing between the rows
// touched.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "kernels/cpu/pointwise.h"
#include "test_util.h"

namespace winfer {
namespace {

TEST_CASE("pointwise_activation_rows: bitwise = pointwise_activation, every function, ISA, width and stride") {
  for (cpu::Isa isa : test::runnable_isas()) {
    const test::IsaCap cap(isa);
    for (PointwiseFn fn :
         {PointwiseFn::kSigmoid, PointwiseFn::kHardSigmoid, PointwiseFn::kHardSwish, PointwiseFn::kSilu}) {
      for (int64_t cols : {1, 5, 8, 16, 24, 40, 48, 64, 77, 255, 256, 300}) {
        for (int64_t extra : {0, 3, 16}) {
          const int64_t rows = 37, stride = cols + extra;
          INFO(test::isa_name(isa) << " " << std::string(pointwise_fn_name(fn)) << " cols " << cols << " stride "
                                   << stride);
          std::vector<float> data = test::random_floats(static_cast<size_t>(rows * stride), 7, -100.f, 100.f);
          std::vector<float> expected = data;
          for (int64_t r = 0; r < rows; ++r) {
            pointwise_activation(expected.data() + r * stride, expected.data() + r * stride, cols, fn, 1);
          }
          pointwise_activation_rows(data.data(), rows, cols, stride, fn);
          CHECK(std::memcmp(data.data(), expected.data(), data.size() * sizeof(float)) == 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace winfer
