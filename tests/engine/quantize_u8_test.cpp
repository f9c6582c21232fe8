// The float32 <-> u8 kernels (kernels/cpu/quantize_u8.h) bit for bit against the engine's
// scalar definitions, quant::quantize_u8 and quant::fake_quantize (engine/src/quantization.h:
// here, not in tests/kernels, because those live in the engine), on every ISA path this CPU
// runs, 1-3 threads, odd counts: random values, exact .5 ties of x / scale, values whose
// division and reciprocal multiply round differently, huge, negative, +-inf, NaN, zero points
// 0 and != 0. Nothing is written outside [0, count).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "engine/src/quantization.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/quantize_u8.h"

namespace {

using winfer::cpu::Isa;
namespace quant = winfer::quant;

std::vector<Isa> runnable_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2, Isa::kGeneric})
    if (static_cast<int>(isa) <= static_cast<int>(winfer::cpu::detected_isa())) isas.push_back(isa);
  return isas;
}
// A std::string: doctest's INFO prints a const char* as its address.
std::string isa_name(Isa isa) { return isa == Isa::kAvx512 ? "avx512" : isa == Isa::kAvx2 ? "avx2" : "generic"; }
struct IsaCap {
  explicit IsaCap(Isa isa) { winfer::cpu::set_isa_cap_for_testing(isa); }
  ~IsaCap() { winfer::cpu::set_isa_cap_for_testing(Isa::kAvx512); }
};

// Values of every kind for `scale`: random over about 1.5x the u8 range (so that both clamps
// happen), exact ties (k + 0.5) * scale where that product is exact, neighbours of ties, values
// where x / scale and x * (1 / scale) round differently, and the specials.
std::vector<float> make_values(size_t count, float scale, int zero, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> v(count);
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.f,
                            -0.f,
                            inf,
                            -inf,
                            std::nanf(""),
                            -std::nanf(""),
                            1e30f,
                            -1e30f,
                            3e38f,
                            -3e38f,
                            1e-30f,
                            -1e-30f,
                            std::numeric_limits<float>::denorm_min()};
  const float recip = 1.f / scale;
  for (size_t i = 0; i < count; ++i) {
    const int kind = static_cast<int>(gen() % 8);
    const float k = static_cast<float>(static_cast<int>(gen() % 400) - 200 - zero);
    if (kind == 0) {
      v[i] = specials[gen() % (sizeof specials / sizeof specials[0])];
    } else if (kind == 1) {
      v[i] = (k + 0.5f) * scale;  // a tie when the product is exact (scale a short binary fraction)
    } else if (kind == 2) {
      v[i] = std::nextafter((k + 0.5f) * scale, (gen() & 1) ? inf : -inf);
    } else if (kind == 3) {
      // Search a little for a value where the division and the reciprocal multiply disagree.
      float x = (k + 0.5f) * scale;
      for (int t = 0; t < 64 && std::nearbyint(x / scale) == std::nearbyint(x * recip); ++t)
        x = std::nextafter(x, (gen() & 1) ? inf : -inf);
      v[i] = x;
    } else {
      v[i] = (static_cast<float>(gen() % 2000001) / 1000000.f - 1.f) * 200.f * scale;
    }
  }
  return v;
}

TEST_CASE("quantize_f32_u8 and dequantize_u8_f32 match quant::quantize_u8 and fake_quantize bit for bit") {
  struct Params {
    float scale;
    int zero;
  };
  // Short binary fractions (ties exact), scales of real calibrated tensors (not), zero points
  // 0 (ReLU outputs), mid and high.
  const Params params[] = {{0.25f, 0}, {0.0625f, 128}, {0.0392157f, 0}, {0.0123f, 37}, {0.11f, 200}, {3.7f, 255}};
  const size_t counts[] = {1, 7, 15, 16, 17, 63, 64, 65, 100, 1000, 4099, 70001, 200003};
  uint32_t seed = 9000;
  for (const Params& pr : params) {
    const quant::TensorQuant tq{pr.scale, pr.zero};
    for (size_t count : counts) {
      INFO("scale ", pr.scale, " zero ", pr.zero, " count ", count);
      const std::vector<float> x = make_values(count, pr.scale, pr.zero, ++seed);
      std::vector<uint8_t> want_q(count);
      for (size_t i = 0; i < count; ++i) want_q[i] = static_cast<uint8_t>(quant::quantize_u8(x[i], tq));
      std::vector<float> want_x(count);
      quant::fake_quantize(x.data(), want_x.data(), static_cast<int64_t>(count), tq);
      // The data exercise both clamps and the ties.
      if (count >= 1000) {
        CHECK(std::count(want_q.begin(), want_q.end(), 0) > 0);
        CHECK(std::count(want_q.begin(), want_q.end(), 255) > 0);
      }
      for (Isa isa : runnable_isas()) {
        IsaCap cap(isa);
        INFO("isa ", isa_name(isa));
        for (int threads : {1, 2, 3}) {
          INFO("threads ", threads);
          std::vector<uint8_t> q(count + 64, 0xA5);
          winfer::cpu::quantize_f32_u8(x.data(), q.data(), static_cast<int64_t>(count), pr.scale, pr.zero, threads);
          size_t wrong = 0, first = count;
          for (size_t i = 0; i < count; ++i)
            if (q[i] != want_q[i]) {
              if (first == count) first = i;
              ++wrong;
            }
          INFO("first wrong ", first, first < count ? " x " + std::to_string(x[first]) : std::string());
          CHECK(wrong == 0);
          CHECK(std::count(q.begin() + static_cast<std::ptrdiff_t>(count), q.end(), 0xA5) == 64);
          // Dequantize the reference's bytes; compare bits (the results are never NaN).
          std::vector<float> y(count + 16, -7.f);
          winfer::cpu::dequantize_u8_f32(want_q.data(), y.data(), static_cast<int64_t>(count), pr.scale, pr.zero,
                                         threads);
          CHECK(std::memcmp(y.data(), want_x.data(), count * sizeof(float)) == 0);
          CHECK(std::count(y.begin() + static_cast<std::ptrdiff_t>(count), y.end(), -7.f) == 16);
        }
      }
    }
  }
}

TEST_CASE("quantize_f32_u8: ties to even, clamps, NaN to 0, a true division") {
  const float x[] = {0.5f,
                     1.5f,
                     2.5f,
                     -0.5f,
                     -1.5f,
                     1e9f,
                     -1e9f,
                     std::nanf(""),
                     std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity()};
  const uint8_t want[] = {10, 12, 12, 10, 8, 255, 0, 0, 255, 0};  // scale 1, zero 10
  // Values within a few ulps of the ties (k + 0.5) * 0.1 where a reciprocal multiply gives
  // another integer than the division: searched here, asserted to exist.
  const float scale = 0.1f, recip = 1.f / scale;
  std::vector<float> xs;
  for (int k = 0; k < 250; ++k) {
    float v = (static_cast<float>(k) + 0.5f) * scale;
    for (int t = 0; t < 16; ++t) v = std::nextafter(v, 0.f);
    for (int t = 0; t < 32; ++t, v = std::nextafter(v, 100.f))
      if (std::nearbyint(v / scale) != std::nearbyint(v * recip)) xs.push_back(v);
  }
  REQUIRE(xs.size() >= 10);
  for (Isa isa : runnable_isas()) {
    IsaCap cap(isa);
    INFO("isa ", isa_name(isa));
    uint8_t q[10];
    winfer::cpu::quantize_f32_u8(x, q, 10, 1.f, 10, 1);
    for (int i = 0; i < 10; ++i) CHECK(q[i] == want[i]);
    std::vector<uint8_t> got(xs.size());
    winfer::cpu::quantize_f32_u8(xs.data(), got.data(), static_cast<int64_t>(xs.size()), scale, 0, 1);
    for (size_t i = 0; i < xs.size(); ++i) CHECK(got[i] == static_cast<uint8_t>(std::nearbyint(xs[i] / scale)));
  }
}

}  // namespace
