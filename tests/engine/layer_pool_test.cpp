// Pooling output sizes in ceil_mode, spelled out. The values of maxpool2d, avgpool2d and
// adaptive_avgpool2d over kPoolCases, kDilatedCases and more (layer_reference.h) are checked
// against float64 through the public API by the op checker (op_check_test.cpp, op_cases.h).

#include "layer_test_util.h"

namespace winfer {
namespace layer_test {
namespace {

AttrList pool_attrs(const PoolCase& k, bool with_dilation) {
  AttrList a = {{"kernel_size", ints_attr({k.kh, k.kw})},
                {"stride", ints_attr({k.sh, k.sw})},
                {"padding", ints_attr({k.ph, k.pw})},
                {"ceil_mode", bool_attr(k.ceil_mode)}};
  if (with_dilation) a.push_back({"dilation", ints_attr({k.dh, k.dw})});
  return a;
}

TEST_CASE("layer maxpool2d ceil_mode output sizes follow PyTorch") {
  // Spelled out so that a shared mistake in torch_pool_extent and pooled_extent shows.
  const PoolCase& drop = kPoolCases[3];  // 5 with k2 s2 p1: 4 windows, the 4th starts at 6 > 5
  CHECK(run_simple("maxpool2d", pool_attrs(drop, true), random_tensor(drop.input)).shape == Shape{1, 2, 3, 3});
  const PoolCase& keep = kPoolCases[2];  // 8 with k3 s2 p1: ceil(7/2) + 1 = 5
  CHECK(run_simple("maxpool2d", pool_attrs(keep, true), random_tensor(keep.input)).shape == Shape{1, 3, 5, 5});
  PoolCase floor_mode = keep;
  floor_mode.ceil_mode = false;
  CHECK(run_simple("maxpool2d", pool_attrs(floor_mode, true), random_tensor(keep.input)).shape == Shape{1, 3, 4, 4});
}

}  // namespace
}  // namespace layer_test
}  // namespace winfer
