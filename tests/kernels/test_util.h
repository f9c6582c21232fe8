// Helpers for the kernel tests: deterministic random data, aligned buffers with canaries, and
// the float32-vs-float64 comparison with its tolerance.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_caches.h"  // L2 size test hook
#include "kernels/cpu/cpu_common.h"  // ISA dispatch test hook

namespace winfer {
namespace test {

// The kernel ISA variants this CPU can run (widest first): tests run each one, so the generic
// and AVX2 code is checked on an AVX-512 machine too.
inline std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> isas;
  for (cpu::Isa isa : {cpu::Isa::kAvx512, cpu::Isa::kAvx2, cpu::Isa::kGeneric})
    if (static_cast<int>(isa) <= static_cast<int>(cpu::detected_isa())) isas.push_back(isa);
  return isas;
}
// A std::string, as every name given to INFO: doctest 2.4.9 prints a const char* there as its
// address (and its DOCTEST_CONFIG_TREAT_CHAR_STAR_AS_STRING does not compile).
inline std::string isa_name(cpu::Isa isa) {
  return isa == cpu::Isa::kAvx512 ? "avx512" : isa == cpu::Isa::kAvx2 ? "avx2" : "generic";
}
// Caps the kernels' ISA for the lifetime of the object.
struct IsaCap {
  explicit IsaCap(cpu::Isa isa) { cpu::set_isa_cap_for_testing(isa); }
  ~IsaCap() { cpu::set_isa_cap_for_testing(cpu::Isa::kAvx512); }
};
// Makes the blockings assume `bytes` of L2 for the lifetime of the object (cpu_caches.h), so
// that a test pins a schedule whatever the machine's cache.
struct L2Override {
  explicit L2Override(int64_t bytes) { cpu::set_l2_bytes_for_testing(bytes); }
  ~L2Override() { cpu::set_l2_bytes_for_testing(0); }
};

// Uniform values in [lo, hi] from a fixed seed. The conversion from the 32-bit generator is
// written out (std::uniform_real_distribution differs between standard libraries), so every
// platform tests the same numbers. Never zeros-only data: a kernel that ignores a tap, a
// channel or the bias must produce a visible error.
inline std::vector<float> random_floats(size_t count, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::vector<float> v(count);
  for (float& x : v) x = lo + (hi - lo) * static_cast<float>(gen() >> 8) * (1.f / 16777216.f);
  return v;
}

// Tolerance for comparing a float32 kernel result with the float64 reference.
//
// A float32 sum of K terms has, in any summation order (blocked, FMA, split over threads), an
// error bounded by about K * u * sum|terms| (u = 2^-24) in the worst case; with random-sign
// data like ours the rounding errors are independent and the error is typically about
// sqrt(K) * u * sum|terms| or less. We allow 16 * sqrt(K) * u * sum|terms| (plus 1e-6
// absolute for outputs that are sums of tiny terms): generous for rounding, yet small enough
// that a single wrong, missing or duplicated term of average size (sum|terms| / K) exceeds it
// for every K below ~10,000, which covers all the shapes tested. A plain 1e-4 relative bound
// would miss a single dropped tap of a 3x3x256 convolution.
inline double float32_tolerance(double abs_sum, int64_t terms) {
  constexpr double kUnitRoundoff = 1.0 / 16777216.0;  // 2^-24
  return 1e-6 + 16.0 * std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1))) * kUnitRoundoff * abs_sum;
}

// Checks got[i] against ref[i] within float32_tolerance(abs_sum[i], terms) for every i; on
// failure reports how many elements differ and the worst one, with `what` as context.
inline void check_close(const float* got, const std::vector<double>& ref, const std::vector<double>& abs_sum,
                        int64_t terms, const std::string& what) {
  size_t bad = 0, worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double tol = float32_tolerance(abs_sum[i], terms);
    const double err = std::abs(static_cast<double>(got[i]) - ref[i]);
    const double ratio = std::isnan(err) ? INFINITY : err / tol;
    if (!(ratio <= 1.0)) ++bad;
    if (!(ratio <= worst_ratio)) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (bad == 0) return;
  std::ostringstream msg;
  msg << what << ": " << bad << " of " << ref.size() << " elements off; worst at " << worst << ": got " << got[worst]
      << " want " << ref[worst] << " (error/tolerance " << worst_ratio << ")";
  FAIL_CHECK(msg.str());
}

// Same, for results that need no per-element magnitude: |got - ref| <= tol_rel * |ref| + tol_abs.
inline void check_close_simple(const float* got, const std::vector<double>& ref, double tol_rel, double tol_abs,
                               const std::string& what) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const bool same_inf = std::isinf(ref[i]) && static_cast<double>(got[i]) == ref[i];
    if (!same_inf && !(std::abs(got[i] - ref[i]) <= tol_rel * std::abs(ref[i]) + tol_abs)) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return;
  std::ostringstream msg;
  msg << what << ": " << bad << " of " << ref.size() << " elements off; first at " << first << ": got " << got[first]
      << " want " << ref[first];
  FAIL_CHECK(msg.str());
}

// Bitwise equality of two float arrays (NaNs included), e.g. threads = 1 vs threads = 3.
inline bool bitwise_equal(const float* a, const float* b, size_t count) {
  return std::memcmp(a, b, count * sizeof(float)) == 0;
}

// A 64-byte aligned float buffer followed by a canary region filled with a fixed byte
// pattern; canary_intact() tells whether anything wrote past the end.
class GuardedBuffer {
 public:
  static constexpr size_t kCanaryBytes = 256;
  static constexpr unsigned char kCanaryByte = 0xA5;

  explicit GuardedBuffer(size_t bytes) : bytes_(bytes), storage_(bytes + kCanaryBytes + 64) {
    const auto addr = reinterpret_cast<uintptr_t>(storage_.data());
    offset_ = (64 - addr % 64) % 64;
    std::memset(data_bytes() + bytes_, kCanaryByte, kCanaryBytes);
  }
  size_t bytes() const { return bytes_; }
  unsigned char* data_bytes() { return storage_.data() + offset_; }
  float* floats() { return reinterpret_cast<float*>(data_bytes()); }
  bool canary_intact() const {
    const unsigned char* c = storage_.data() + offset_ + bytes_;
    for (size_t i = 0; i < kCanaryBytes; ++i)
      if (c[i] != kCanaryByte) return false;
    return true;
  }

 private:
  size_t bytes_;
  std::vector<unsigned char> storage_;
  size_t offset_ = 0;
};

}  // namespace test
}  // namespace winfer
