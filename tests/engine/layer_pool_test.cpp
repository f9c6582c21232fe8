// maxpool2d, avgpool2d and adaptive_avgpool2d against float64 references written from
// PyTorch's definitions (output size, ceil_mode, count_include_pad, adaptive bins).
#include <algorithm>
#include <limits>
#include <string>

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



TEST_CASE("layer maxpool2d matches the float64 reference") {
  std::vector<PoolCase> cases(std::begin(kPoolCases), std::end(kPoolCases));
  cases.insert(cases.end(), std::begin(kDilatedCases), std::end(kDilatedCases));
  for (const PoolCase& k : cases) {
    // All-negative data too: a padding tap counted as 0 would then win the max.
    for (float offset : {0.f, -2.f}) {
      const HostTensor x = random_tensor(k.input, 1.f, offset);
      const HostTensor y = run_simple("maxpool2d", pool_attrs(k, true), x, RunOptions{nullptr, 2, nullptr});
      check_close(y, maxpool_reference(k, x), kExact, k.name);
    }
  }
}

TEST_CASE("layer maxpool2d ceil_mode output sizes follow PyTorch") {
  // Spelled out so that a shared mistake in torch_pool_extent and pooled_extent shows.
  const PoolCase& drop = kPoolCases[3];  // 5 with k2 s2 p1: 4 windows, the 4th starts at 6 > 5
  CHECK(run_simple("maxpool2d", pool_attrs(drop, true), random_tensor(drop.input)).shape == Shape{1, 2, 3, 3});
  const PoolCase& keep = kPoolCases[2];  // 8 with k3 s2 p1: ceil(7/2) + 1 = 5
  CHECK(run_simple("maxpool2d", pool_attrs(keep, true), random_tensor(keep.input)).shape == Shape{1, 3, 5, 5});
  PoolCase floor_mode = keep;
  floor_mode.ceil_mode = false;
  CHECK(run_simple("maxpool2d", pool_attrs(floor_mode, true), random_tensor(keep.input)).shape ==
        Shape{1, 3, 4, 4});
}

TEST_CASE("layer maxpool2d stride defaults to kernel_size") {
  const HostTensor x = random_tensor(Shape{1, 2, 6, 7});
  const HostTensor y = run_simple("maxpool2d", {{"kernel_size", int_attr(3)}}, x);
  const PoolCase k{"default stride", x.shape, 3, 3, 3, 3, 0, 0, 1, 1, false};
  check_close(y, maxpool_reference(k, x), kExact);
}

TEST_CASE("layer avgpool2d matches the float64 reference, count_include_pad both ways") {
  for (const PoolCase& k : kPoolCases) {
    for (bool count_include_pad : {true, false}) {
      const HostTensor x = random_tensor(k.input);
      AttrList attrs = pool_attrs(k, false);
      attrs.push_back({"count_include_pad", bool_attr(count_include_pad)});
      const HostTensor y = run_simple("avgpool2d", attrs, x, RunOptions{nullptr, 2, nullptr});
      check_close(y, avgpool_reference(k, count_include_pad, x), kSumTol,
                  std::string(k.name) + (count_include_pad ? ", count_include_pad" : ", exclude pad"));
    }
  }
}

TEST_CASE("layer avgpool2d defaults: stride = kernel_size, count_include_pad = true") {
  const HostTensor x = random_tensor(Shape{2, 3, 7, 5});
  const HostTensor y = run_simple("avgpool2d", {{"kernel_size", int_attr(3)}, {"padding", int_attr(1)}}, x);
  const PoolCase k{"defaults", x.shape, 3, 3, 3, 3, 1, 1, 1, 1, false};
  check_close(y, avgpool_reference(k, true, x), kSumTol);
}

TEST_CASE("layer adaptive_avgpool2d matches the float64 reference") {
  struct Case {
    Shape input;
    int64_t out_h, out_w;
  };
  const Case cases[] = {
      {Shape{2, 3, 7, 5}, 3, 4},   // bins that overlap and differ in size
      {Shape{3, 4, 6, 6}, 1, 1},   // global average pooling
      {Shape{1, 2, 3, 2}, 5, 3},   // output larger than the input
      {Shape{1, 3, 7, 7}, 7, 7},   // identity
      {Shape{2, 5, 10, 9}, 4, 2},  // non-divisible both ways
  };
  for (const Case& c : cases) {
    const HostTensor x = random_tensor(c.input);
    const AttrValue size = c.out_h == c.out_w ? int_attr(c.out_h) : ints_attr({c.out_h, c.out_w});
    const HostTensor y = run_simple("adaptive_avgpool2d", {{"output_size", size}}, x);
    check_close(y, adaptive_reference(x, c.out_h, c.out_w), kSumTol, c.input.to_string());
  }
}

}  // namespace
}  // namespace layer_test
}  // namespace winfer
