// Weight packing contracts that let a model keep only its packed weights (LoadOptions::pack_for):
// unpack_weights undoes pack_weights bit for bit for every CPU algorithm, pack_weights_in_place
// writes exactly what pack_weights writes (or says it cannot and touches nothing), and packing
// does not depend on the batch or the spatial size.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_algorithm.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;

// Channels that fill whole 32-wide panels and channels that leave a padded panel; groups,
// 1x1, 7x7 with 3 input channels, dilation, and the depthwise layers.
std::vector<ConvParams> packing_shapes() {
  return {
      Conv(1, 3, 9, 9, 64).k(7, 7).s(2, 2).pad(3).p,  // ResNet stem: K = 147
      Conv(1, 64, 5, 5, 64).k(3, 3).pad(1).p,
      Conv(1, 40, 5, 5, 96).k(1, 1).p,
      Conv(1, 24, 5, 5, 58).k(1, 1).p,                // ShuffleNet: 58 = one full panel + 26
      Conv(1, 16, 6, 7, 7).k(3, 2).d(2, 1).pad(2).p,  // 7 output channels: one narrow panel
      Conv(1, 32, 5, 5, 64).k(3, 3).g(2).pad(1).p,    // groups: 16 -> 32 per group
      Conv(1, 12, 5, 5, 12).k(3, 3).g(4).pad(1).p,    // groups: 3 -> 3 per group, narrow panels
      Conv(1, 440, 3, 3, 70).k(1, 1).p,               // RegNet-sized K = 440 (27 blocks of 16 + 8), 70 = 2 x 32 + 6
      Conv(1, 20, 9, 9, 40).k(5, 3).pad(1).p,         // K = 300 in (c, kh, kw) order, 5 x 3 taps
  };
}

std::vector<ConvParams> depthwise_shapes() {
  return {Conv(1, 24, 7, 7, 24).k(3, 3).g(24).pad(1).p, Conv(1, 116, 5, 6, 116).k(5, 3).g(116).s(2, 1).pad(1).p};
}

size_t weight_floats(const ConvParams& p) {
  return static_cast<size_t>(p.out_channels * p.in_channels_per_group() * p.kernel_h * p.kernel_w);
}

std::vector<float> packed_by(const ConvAlgorithm& a, const ConvParams& p, const std::vector<float>& oihw) {
  std::vector<float> packed(a.packed_weight_bytes(p) / sizeof(float));
  a.pack_weights(p, oihw.data(), packed.data());
  return packed;
}

void check_round_trip(const ConvAlgorithm& a, const ConvParams& p, uint32_t seed) {
  INFO(std::string(a.name()), " ", p.to_string());
  REQUIRE(a.supports(p));
  const std::vector<float> oihw = test::random_floats(weight_floats(p), seed);
  const std::vector<float> packed = packed_by(a, p, oihw);
  REQUIRE(a.can_unpack_weights());
  std::vector<float> unpacked(oihw.size(), -7.f);
  a.unpack_weights(p, packed.data(), unpacked.data());
  CHECK(std::memcmp(unpacked.data(), oihw.data(), oihw.size() * sizeof(float)) == 0);

  // In place: the same bytes as out of place, or false with the weights untouched.
  std::vector<float> in_place = oihw;
  if (a.pack_weights_in_place(p, in_place.data())) {
    REQUIRE(packed.size() == in_place.size());
    CHECK(std::memcmp(in_place.data(), packed.data(), packed.size() * sizeof(float)) == 0);
  } else {
    CHECK(std::memcmp(in_place.data(), oihw.data(), oihw.size() * sizeof(float)) == 0);
  }

  // Another batch and spatial size packs the same: a model packs once for every session.
  ConvParams other = p;
  other.batch = 3;
  other.in_h += 5;
  other.in_w += 2;
  CHECK(packed_by(a, other, oihw) == packed);
}

TEST_CASE("weight packing: every CPU algorithm unpacks to the OIHW weights bit for bit") {
  uint32_t seed = 100;
  for (const char* name : {"im2win", "indirect", "direct", "im2col"}) {
    const ConvAlgorithm* a = find_conv_algorithm(name);
    REQUIRE(a != nullptr);
    int in_place = 0;
    for (const ConvParams& p : packing_shapes()) {
      check_round_trip(*a, p, seed += 7);
      std::vector<float> w = test::random_floats(weight_floats(p), seed);
      in_place += a->pack_weights_in_place(p, w.data()) ? 1 : 0;
    }
    // The panel layouts pack in place whatever the channel count (a narrow last panel, not a
    // padded one, fills exactly its OIHW rows), except small groups, which they merge into
    // block-diagonal ones (packing_shapes()[6]: 3 per group, 4 groups as one of 12 channels,
    // 4x the floats); GHWIO (direct, im2col) is a transpose of whole groups: never in place.
    const bool panels = std::string(name) == "im2win" || std::string(name) == "indirect";
    CHECK_MESSAGE(in_place == (panels ? static_cast<int>(packing_shapes().size()) - 1 : 0), name);
    const ConvParams small_groups = packing_shapes()[6];
    if (panels) CHECK(a->packed_weight_bytes(small_groups) == 4 * weight_floats(small_groups) * sizeof(float));
    const ConvParams shuffle = packing_shapes()[3];  // 58 channels: as large as OIHW, not padded to 64
    if (panels) CHECK(a->packed_weight_bytes(shuffle) == weight_floats(shuffle) * sizeof(float));
  }
  const ConvAlgorithm* depthwise = find_conv_algorithm("depthwise");
  REQUIRE(depthwise != nullptr);
  for (const ConvParams& p : depthwise_shapes()) check_round_trip(*depthwise, p, seed += 7);
}

}  // namespace
}  // namespace winfer
