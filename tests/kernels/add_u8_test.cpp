// u8 elementwise add (kernels/cpu/add_u8.h) against its formula written out with std::fma
// (f = fma(float(q_b - z_b), Rb, float(q_a - z_a) * Ra), clamp +-65536, ties to even, + z_y,
// clamp [lo, hi]), byte for byte, on every ISA path this CPU runs and 1-3 threads, odd counts,
// zero points != 0, ReLU clamps, out == a and out == b in place, near-ties where an unfused
// multiply-add rounds differently, and the argument checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/add_u8.h"
#include "test_util.h"

namespace winfer {
namespace {

struct AddCase {
  int32_t za, zb, zy, lo, hi;
  float ra, rb;
};

uint8_t formula(uint8_t qa, uint8_t qb, const AddCase& c) {
  const float product = static_cast<float>(qa - c.za) * c.ra;
  float f = std::fma(static_cast<float>(qb - c.zb), c.rb, product);
  f = std::min(std::max(f, -65536.f), 65536.f);
  const int r = static_cast<int>(std::nearbyint(f)) + c.zy;
  return static_cast<uint8_t>(std::min(std::max(r, c.lo), c.hi));
}

void run_all(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const AddCase& c,
             const std::vector<uint8_t>& want) {
  const int64_t n = static_cast<int64_t>(a.size());
  for (cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    INFO("isa ", test::isa_name(isa));
    for (int threads : {1, 2, 3}) {
      INFO("threads ", threads);
      std::vector<uint8_t> out(a.size() + 32, 0xA5);
      cpu::add_u8(a.data(), c.za, c.ra, b.data(), c.zb, c.rb, out.data(), c.zy, c.lo, c.hi, n, threads);
      CHECK(std::equal(want.begin(), want.end(), out.begin()));
      CHECK(std::count(out.begin() + n, out.end(), 0xA5) == 32);
      std::vector<uint8_t> io = a;  // out == a
      cpu::add_u8(io.data(), c.za, c.ra, b.data(), c.zb, c.rb, io.data(), c.zy, c.lo, c.hi, n, threads);
      CHECK(io == want);
      io = b;  // out == b
      cpu::add_u8(a.data(), c.za, c.ra, io.data(), c.zb, c.rb, io.data(), c.zy, c.lo, c.hi, n, threads);
      CHECK(io == want);
    }
  }
}

TEST_CASE("add_u8 matches its formula: every ISA path, threads 1-3, in place") {
  std::mt19937 gen(2727);
  const int64_t counts[] = {1, 5, 15, 16, 17, 31, 33, 64, 100, 1001, 70003, 150001};
  int i = 0;
  for (int64_t n : counts) {
    AddCase c;
    c.za = static_cast<int32_t>(gen() % 256);
    c.zb = static_cast<int32_t>(gen() % 256);
    c.zy = 40 + static_cast<int32_t>(gen() % 170);
    c.lo = i % 2 == 0 ? 0 : c.zy;  // none, ReLU
    c.hi = i % 3 == 2 ? std::min(255, c.zy + 50) : 255;
    c.ra = static_cast<float>(0.2 + (gen() % 100000) / 200000.0);
    c.rb = static_cast<float>(0.2 + (gen() % 100000) / 150000.0);
    ++i;
    INFO("count ", n, " za ", c.za, " zb ", c.zb, " zy ", c.zy, " Ra ", c.ra, " Rb ", c.rb);
    std::vector<uint8_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n)), want(static_cast<size_t>(n));
    for (uint8_t& x : a) x = static_cast<uint8_t>(gen() & 255);
    for (uint8_t& x : b) x = static_cast<uint8_t>(gen() & 255);
    for (size_t j = 0; j < want.size(); ++j) want[j] = formula(a[j], b[j], c);
    if (n >= 1000) {  // spread: both operands matter, the clamps are reached
      int distinct[256] = {};
      for (uint8_t v : want) distinct[v] = 1;
      CHECK(std::count(distinct, distinct + 256, 1) > 25);
    }
    run_all(a, b, c, want);
  }
}

TEST_CASE("add_u8: near-ties where rounding a's and b's products separately would differ") {
  // q_a - z_a = 1, so a's product is Ra itself; x = (q_b - z_b) * Rb is not a float and
  // Ra = h - float(x) for a small half-integer h: an unfused add lands on the tie h, the fused
  // one beside it.
  std::mt19937 gen(99);
  int differs = 0, calls = 0;
  for (int32_t qb = 0; qb < 150 && calls < 60; ++qb) {
    AddCase c{17, 200, 100, 0, 255, 0.f, 0.3183099f};
    const double exact = static_cast<double>(qb - c.zb) * c.rb;
    const float x = static_cast<float>(exact);
    const float h = 0.5f + static_cast<float>(qb % 3);
    if (exact == static_cast<double>(x) || x + (h - x) != h) continue;
    c.ra = h - x;
    ++calls;
    std::vector<uint8_t> a(static_cast<size_t>(37 + calls)), b(a.size()), want(a.size());
    for (size_t j = 0; j < a.size(); ++j) {
      const bool tie = j % 2 == 0;
      a[j] = tie ? static_cast<uint8_t>(c.za + 1) : static_cast<uint8_t>(gen() & 255);
      b[j] = tie ? static_cast<uint8_t>(qb) : static_cast<uint8_t>(gen() & 255);
      want[j] = formula(a[j], b[j], c);
    }
    differs += want[0] != static_cast<uint8_t>(std::nearbyint(h) + c.zy);
    INFO("q_b ", qb, " Ra ", c.ra);
    run_all(a, b, c, want);
  }
  CHECK(differs > 15);
}

TEST_CASE("add_u8 rejects zero points, clamps and ratios out of range") {
  std::vector<uint8_t> a(8, 1), b(8, 2), out(8);
  CHECK_THROWS_AS(cpu::add_u8(a.data(), 256, 1.f, b.data(), 0, 1.f, out.data(), 0, 0, 255, 8, 1),
                  std::invalid_argument);
  CHECK_THROWS_AS(cpu::add_u8(a.data(), 0, 1.f, b.data(), -1, 1.f, out.data(), 0, 0, 255, 8, 1), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu::add_u8(a.data(), 0, 1.f, b.data(), 0, 1.f, out.data(), 0, 200, 100, 8, 1),
                       doctest::Contains("clamp"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(cpu::add_u8(a.data(), 0, std::nanf(""), b.data(), 0, 1.f, out.data(), 0, 0, 255, 8, 1),
                       doctest::Contains("finite"), std::invalid_argument);
}

}  // namespace
}  // namespace winfer
