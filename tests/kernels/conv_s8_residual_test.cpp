// The INT8 im2win and indirect convolutions with a fused residual (conv_s8.h, S8Residual):
// q_y = clamp(round(fmaf(q_r - z_r, R, float(acc) * M)) + z_y, lo, hi), bit for bit against an
// exact integer accumulator and s8_requantize_residual(), itself checked against a formulation
// in double arithmetic that uses no fma. Every INT8 path this CPU runs (VNNI, AVX2, scalar),
// 1-3 threads, a separate residual (also a channel slice of a wider tensor) and the residual
// being the output itself (in place), ReLU-like clamps, residual zero points != 0.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "kernels/cpu/conv_s8.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::GuardedBuffer;

// The contract's value, computed without fma: float(acc) * M rounded to float32, then
// (q_r - z_r) * R + product rounded once to float32, from an exact double product (9 x 24
// bits), a double sum and its rounding error (two-sum), the error deciding a double sum that
// lies exactly halfway between two floats. Then the clamp to +-65536, ties to even, z_y, clamp.
int want_residual(int32_t acc, float m, int32_t q_r, int32_t z_r, float r_scale, int32_t zy, int32_t lo, int32_t hi) {
  const double product = static_cast<float>(static_cast<double>(static_cast<float>(acc)) * static_cast<double>(m));
  const double a = static_cast<double>(q_r - z_r) * static_cast<double>(r_scale);  // exact
  const double s = a + product, bb = s - a, err = (a - (s - bb)) + (product - bb);
  float f = static_cast<float>(s);
  if (err != 0 && static_cast<double>(f) != s) {
    const float other = std::nextafter(f, static_cast<double>(f) < s ? INFINITY : -INFINITY);
    if (std::abs(static_cast<double>(other) - s) == std::abs(static_cast<double>(f) - s)) {
      // s is a midpoint: the exact sum lies on err's side of it.
      const bool up = err > 0;
      f = up ? std::max(f, other) : std::min(f, other);
    }
  }
  const double fc = std::min(std::max(static_cast<double>(f), -65536.0), 65536.0);
  double r = std::floor(fc);
  const double frac = fc - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  return static_cast<int>(std::min<double>(std::max<double>(r + zy, lo), hi));
}

TEST_CASE("s8_requantize_residual: one rounding of the product, one fused add, ties to even, clamps") {
  // q_r = z_r: the plain requantization.
  CHECK(cpu::s8_requantize_residual(5, 0.5f, 9, 9, 0.7f, 0, 0, 255) == 2);           // 2.5 -> 2
  CHECK(cpu::s8_requantize_residual(7, 0.5f, 9, 9, 0.7f, 0, 0, 255) == 4);           // 3.5 -> 4
  CHECK(cpu::s8_requantize_residual(1, 0.25f, 11, 10, 0.25f, 0, 0, 255) == 0);       // 0.5 -> 0
  CHECK(cpu::s8_requantize_residual(1, 0.25f, 12, 10, 0.625f, 0, 0, 255) == 2);      // 1.5 -> 2
  CHECK(cpu::s8_requantize_residual(-100, 1.f, 0, 200, 1.f, 128, 128, 255) == 128);  // ReLU after the add
  CHECK(cpu::s8_requantize_residual(100, 1.f, 255, 0, 1.f, 3, 0, 255) == 255);
  std::mt19937 gen(271);
  int fused_differs = 0;
  for (int i = 0; i < 300000; ++i) {
    const int32_t acc = static_cast<int32_t>(gen()) >> (gen() % 24);
    const float m = std::ldexp(static_cast<float>(gen() % 16777216 + 1), -static_cast<int>(gen() % 30) - 24);
    const int32_t q_r = static_cast<int32_t>(gen() % 256), z_r = static_cast<int32_t>(gen() % 256);
    const float rs = std::ldexp(static_cast<float>(gen() % 16777216 + 1), -24 - static_cast<int>(gen() % 4));
    const int32_t zy = static_cast<int32_t>(gen() % 256), lo = static_cast<int32_t>(gen() % 128);
    const int32_t hi = lo + static_cast<int32_t>(gen() % (256 - lo));
    const int got = cpu::s8_requantize_residual(acc, m, q_r, z_r, rs, zy, lo, hi);
    const int want = want_residual(acc, m, q_r, z_r, rs, zy, lo, hi);
    if (got != want) {
      INFO("acc ", acc, " m ", m, " q_r ", q_r, " z_r ", z_r, " R ", rs, " zy ", zy);
      CHECK(got == want);
      break;
    }
  }
  // Near-ties, where one rounding more changes the result: x * R not a float (its rounding
  // error e != 0), product = h - float(x * R) for a half-integer h, so the unfused sum is h
  // (a tie, to even) and the fused one h + e (rounded away from h on e's side).
  for (int i = 0; i < 20000; ++i) {
    const int32_t z_r = static_cast<int32_t>(gen() % 256), q_r = static_cast<int32_t>(gen() % 256);
    const float rs = static_cast<float>(0.15 + (gen() % 1000000) / 4000000.0);
    const double exact = static_cast<double>(q_r - z_r) * rs;
    const float xr = static_cast<float>(exact);
    if (exact == static_cast<double>(xr)) continue;
    const float h = std::floor(xr) + 0.5f + static_cast<float>(static_cast<int>(gen() % 7) - 3);
    const float p = h - xr;  // exact (Sterbenz-like: both near each other's magnitude or small)
    if (static_cast<double>(p) != static_cast<double>(h) - static_cast<double>(xr) || xr + p != h) continue;
    const int32_t acc = p < 0 ? -1 : 1;
    const float m = std::abs(p);
    const int32_t zy = 128;
    const int got = cpu::s8_requantize_residual(acc, m, q_r, z_r, rs, zy, 0, 255);
    const int want = want_residual(acc, m, q_r, z_r, rs, zy, 0, 255);
    fused_differs += want != static_cast<int>(std::nearbyint(h)) + zy;
    if (got != want) {
      INFO("near-tie: acc ", acc, " m ", m, " q_r ", q_r, " z_r ", z_r, " R ", rs);
      CHECK(got == want);
      break;
    }
  }
  CHECK(fused_differs > 300);
}

struct S8Data {
  std::vector<uint8_t> input;
  std::vector<int8_t> weight;  // OIHW
  std::vector<int32_t> bias;
  std::vector<float> mult;
  cpu::S8ConvQuant q;
  std::vector<uint8_t> residual;  // [pixels][res_stride]
  cpu::S8Residual r;              // r.data: set per run
};

// Random data with the conv's part and the residual's part each spreading the output over
// about +-60 around z_y, so that a dropped or doubled term shows.
S8Data make_data(const ConvParams& p, uint32_t seed, int clamp, int64_t res_stride) {
  std::mt19937 gen(seed);
  S8Data d;
  const int64_t k = p.in_channels_per_group() * p.kernel_h * p.kernel_w;
  d.input.resize(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels));
  for (uint8_t& x : d.input) x = static_cast<uint8_t>(gen() & 255);
  d.weight.resize(static_cast<size_t>(p.out_channels * k));
  for (int8_t& w : d.weight) w = static_cast<int8_t>(static_cast<int>(gen() & 255) - 128);
  // Biases of about the accumulator's typical size (a bias far larger would clamp every output).
  const double typical = 74.0 * 74.0 * std::sqrt(static_cast<double>(k)) + 1.0;
  const uint32_t bias_range = static_cast<uint32_t>(typical);
  d.bias.resize(static_cast<size_t>(p.out_channels));
  for (int32_t& b : d.bias) b = static_cast<int32_t>(gen() % (2 * bias_range + 1)) - static_cast<int32_t>(bias_range);
  d.q.in_zero = 1 + static_cast<int32_t>(gen() % 254);
  d.q.out_zero = 60 + static_cast<int32_t>(gen() % 130);
  d.q.lo = clamp == 0 ? 0 : d.q.out_zero;
  d.q.hi = clamp == 2 ? std::min(255, d.q.out_zero + 60) : 255;
  d.mult.resize(static_cast<size_t>(p.out_channels));
  for (float& m : d.mult) m = static_cast<float>(40.0 / typical * (0.5 + (gen() % 1000) / 1000.0));
  d.q.multiplier = d.mult.data();
  d.q.bias = d.bias.data();
  const int64_t pixels = p.batch * p.out_h() * p.out_w();
  d.residual.resize(static_cast<size_t>(pixels * res_stride));
  for (uint8_t& x : d.residual) x = static_cast<uint8_t>(gen() & 255);
  d.r.pixel_stride = res_stride;
  d.r.zero = 1 + static_cast<int32_t>(gen() % 254);
  d.r.scale = static_cast<float>(0.15 + (gen() % 1000) / 4000.0);  // |(q_r - z_r) * R| up to ~100
  return d;
}

// The reference: [pixels][Co], from the exact integer accumulator.
std::vector<uint8_t> reference(const ConvParams& p, const S8Data& d) {
  const int64_t ho = p.out_h(), wo = p.out_w(), cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  std::vector<uint8_t> out(static_cast<size_t>(p.batch * ho * wo * p.out_channels));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox)
        for (int64_t oc = 0; oc < p.out_channels; ++oc) {
          const int64_t g = oc / cog, m = (n * ho + oy) * wo + ox;
          int64_t s = d.bias[oc];
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < p.kernel_h; ++kh)
              for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
                const int64_t iy = oy * p.stride_h - p.pad_top + kh * p.dilation_h;
                const int64_t ix = ox * p.stride_w - p.pad_left + kw * p.dilation_w;
                if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;
                const int64_t x = d.input[((n * p.in_h + iy) * p.in_w + ix) * p.in_channels + g * cg + c];
                s += (x - d.q.in_zero) * d.weight[((oc * cg + c) * p.kernel_h + kh) * p.kernel_w + kw];
              }
          REQUIRE(s == static_cast<int32_t>(s));
          out[m * p.out_channels + oc] =
              cpu::s8_requantize_residual(static_cast<int32_t>(s), d.mult[oc], d.residual[m * d.r.pixel_stride + oc],
                                          d.r.zero, d.r.scale, d.q.out_zero, d.q.lo, d.q.hi);
        }
  return out;
}

enum class Algo { kIm2win, kIndirect };

void run(Algo algo, const ConvParams& p, const void* packed, const uint8_t* input, uint8_t* out,
         const cpu::S8Residual& r, int threads) {
  if (algo == Algo::kIm2win) {
    GuardedBuffer ws(cpu::s8_im2win_workspace_bytes(p, threads));
    cpu::s8_im2win_conv(p, input, packed, out, ws.data_bytes(), threads, &r);
    CHECK(ws.canary_intact());
  } else {
    cpu::s8_indirect_conv(p, input, packed, out, threads, &r);
  }
}

// got: [pixels][stride] against want [pixels][Co]; bytes past Co in each pixel must equal
// `filler` (their value before the run).
void check_output(const ConvParams& p, const uint8_t* got, int64_t stride, const std::vector<uint8_t>& want,
                  const std::vector<uint8_t>& filler) {
  const int64_t pixels = p.batch * p.out_h() * p.out_w(), co = p.out_channels;
  int64_t wrong = 0, first = -1, stray = 0;
  for (int64_t m = 0; m < pixels; ++m) {
    for (int64_t c = 0; c < co; ++c)
      if (got[m * stride + c] != want[m * co + c]) {
        if (first < 0) first = m * co + c;
        ++wrong;
      }
    for (int64_t c = co; c < stride; ++c) stray += got[m * stride + c] != filler[m * stride + c];
  }
  INFO("first wrong (pixel, channel) ", first / co, ", ", first % co,
       first >= 0
           ? " got " + std::to_string(got[first / co * stride + first % co]) + " want " + std::to_string(want[first])
           : std::string());
  CHECK(wrong == 0);
  CHECK(stray == 0);
}

std::vector<cpu::Isa> caps() { return test::runnable_isas(); }

TEST_CASE("INT8 im2win and indirect with a residual match the exact reference: every path, threads 1-3, in place") {
  const ConvParams cases[] = {
      Conv(2, 64, 7, 9, 256).k(1, 1).p,                      // ResNet 1x1 expand: im2win reads in place
      Conv(1, 64, 9, 10, 64).k(3, 3).pad(1).p,               // 3x3 pad 1
      Conv(1, 256, 6, 7, 64).k(1, 1).s(2, 2).p,              // 1x1/2 in place
      Conv(1, 13, 9, 8, 47).k(5, 5).s(2, 2).pad(2).p,        // 5x5/2, Co = 47
      Conv(1, 7, 8, 9, 31).k(3, 3).pad(1).p,                 // Cg = 7 (indirect tail), Co = 31
      Conv(3, 5, 6, 7, 15).k(1, 1).p,                        // 1x1 with Cg % 4 != 0, batch 3
      Conv(1, 20, 7, 7, 20).k(3, 3).pad(1).g(5).p,           // groups of 4
      Conv(1, 96, 5, 5, 64).k(3, 1).pad(1, 0, 1, 0).g(2).p,  // groups 2, Kw = 1
      Conv(1, 36, 6, 9, 65).k(3, 3).pad(1).d(2, 3).p,        // dilation, Co = 65 (a 1-channel panel)
      Conv(2, 3, 11, 13, 9).k(3, 3).s(2, 2).pad(1).p,        // thin stem-like, Co = 9
  };
  uint32_t seed = 2790;
  int i = 0;
  for (ConvParams p : cases) {
    const int clamp = i % 3;
    // Every other case: the output (and the residual) a channel slice of a wider tensor.
    const int64_t stride = i % 2 == 1 ? p.out_channels + 5 : p.out_channels;
    p.out_pixel_stride = stride == p.out_channels ? 0 : stride;
    ++i;
    INFO(p.to_string(), " clamp ", clamp, " stride ", stride);
    REQUIRE(p.is_valid());
    const S8Data d = make_data(p, ++seed, clamp, stride);
    const std::vector<uint8_t> want = reference(p, d);
    // Spread outputs, and the residual changes most of them (a kernel ignoring it must fail).
    int distinct[256] = {};
    for (uint8_t v : want) distinct[v] = 1;
    CHECK(std::count(distinct, distinct + 256, 1) >= std::min<int>(32, static_cast<int>(want.size()) / 4));
    {
      S8Data plain = d;  // q_r = z_r: no residual term
      std::fill(plain.residual.begin(), plain.residual.end(), static_cast<uint8_t>(d.r.zero));
      const std::vector<uint8_t> without = reference(p, plain);
      int64_t changed = 0;
      for (size_t j = 0; j < want.size(); ++j) changed += want[j] != without[j];
      CHECK(changed > static_cast<int64_t>(want.size()) / 3);
    }
    GuardedBuffer packed(cpu::s8_conv_packed_bytes(p));
    cpu::s8_pack_conv(p, d.weight.data(), d.q, packed.data_bytes());
    const size_t out_bytes = d.residual.size();
    std::vector<uint8_t> marker(out_bytes, 0x5A);
    for (cpu::Isa cap : caps()) {
      test::IsaCap guard(cap);
      INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
      for (int threads : {1, 2, 3}) {
        INFO("threads ", threads);
        for (Algo algo : {Algo::kIm2win, Algo::kIndirect}) {
          const std::string algo_name = algo == Algo::kIm2win ? "im2win" : "indirect";
          INFO(algo_name);
          // A separate residual, which must stay as it was.
          GuardedBuffer out(out_bytes);
          std::memset(out.data_bytes(), 0x5A, out_bytes);
          cpu::S8Residual r = d.r;
          r.data = d.residual.data();
          const std::vector<uint8_t> residual_before = d.residual;
          run(algo, p, packed.data_bytes(), d.input.data(), out.data_bytes(), r, threads);
          CHECK(out.canary_intact());
          check_output(p, out.data_bytes(), stride, want, marker);
          CHECK(d.residual == residual_before);
          // In place: the output buffer holds the residual, and is overwritten with the result.
          GuardedBuffer io(out_bytes);
          std::memcpy(io.data_bytes(), d.residual.data(), out_bytes);
          r.data = io.data_bytes();
          run(algo, p, packed.data_bytes(), d.input.data(), io.data_bytes(), r, threads);
          CHECK(io.canary_intact());
          check_output(p, io.data_bytes(), stride, want, d.residual);
        }
      }
    }
  }
}

TEST_CASE("INT8 residual: a zero residual term gives the plain requantization's bytes") {
  // q_r = z_r everywhere: fmaf(0, R, p) = p, so the outputs equal the residual-free run's, on
  // every path (the two epilogues agree where they must).
  const ConvParams p = Conv(1, 48, 6, 7, 40).k(3, 3).pad(1).p;
  S8Data d = make_data(p, 11, 1, p.out_channels);
  std::fill(d.residual.begin(), d.residual.end(), static_cast<uint8_t>(d.r.zero));
  std::vector<uint8_t> packed(cpu::s8_conv_packed_bytes(p));
  cpu::s8_pack_conv(p, d.weight.data(), d.q, packed.data());
  const std::vector<uint8_t> want = reference(p, d);
  for (cpu::Isa cap : caps()) {
    test::IsaCap guard(cap);
    INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
    std::vector<uint8_t> plain(want.size()), ws(cpu::s8_im2win_workspace_bytes(p, 1));
    cpu::s8_im2win_conv(p, d.input.data(), packed.data(), plain.data(), ws.data(), 1);
    CHECK(plain == want);
    std::vector<uint8_t> with(want.size());
    cpu::S8Residual r = d.r;
    r.data = d.residual.data();
    cpu::s8_indirect_conv(p, d.input.data(), packed.data(), with.data(), 1, &r);
    CHECK(with == want);
  }
}

TEST_CASE("INT8 residual: near-ties where an unfused add would round differently, on every path") {
  // acc = 1 everywhere (zero weights, bias 1): channel oc's value is fmaf(q_r - z_r, R, M[oc])
  // with q_r[oc] < z_r chosen so that x = (q_r - z_r) * R (about -16..-64) is not a float, and
  // M[oc] = h - float(x) for a small half-integer h: rounding x first lands exactly on the tie
  // h, the fused add at h + (x - float(x)), an error below x's ulp but above h's, rounded away
  // from the tie. A SIMD epilogue with a separate multiply and add fails here.
  const ConvParams p = Conv(2, 8, 5, 7, 61).k(1, 1).p;
  S8Data d = make_data(p, 17, 0, p.out_channels);
  std::fill(d.weight.begin(), d.weight.end(), int8_t{0});
  std::fill(d.bias.begin(), d.bias.end(), 1);
  d.r.zero = 200;
  d.r.scale = 0.3183099f;
  std::vector<uint8_t> q_r(static_cast<size_t>(p.out_channels));
  int differs = 0;
  for (int64_t oc = 0; oc < p.out_channels; ++oc) {
    for (int32_t q = static_cast<int32_t>(oc * 2) % 150;; q = (q + 1) % 150) {
      const double exact = static_cast<double>(q - d.r.zero) * d.r.scale;
      const float xr = static_cast<float>(exact);
      const float h = 0.5f + static_cast<float>(oc % 3);
      if (exact == static_cast<double>(xr) || xr + (h - xr) != h) continue;
      q_r[oc] = static_cast<uint8_t>(q);
      d.mult[oc] = h - xr;
      const int fused = want_residual(1, d.mult[oc], q, d.r.zero, d.r.scale, d.q.out_zero, 0, 255);
      differs += fused != static_cast<int>(std::nearbyint(h)) + d.q.out_zero;
      break;
    }
  }
  CHECK(differs > 15);
  d.q.lo = 0;
  d.q.hi = 255;
  const int64_t pixels = p.batch * p.out_h() * p.out_w();
  for (int64_t m = 0; m < pixels; ++m)
    for (int64_t oc = 0; oc < p.out_channels; ++oc) d.residual[m * p.out_channels + oc] = q_r[oc];
  const std::vector<uint8_t> want = reference(p, d);
  std::vector<uint8_t> packed(cpu::s8_conv_packed_bytes(p));
  cpu::s8_pack_conv(p, d.weight.data(), d.q, packed.data());
  cpu::S8Residual r = d.r;
  r.data = d.residual.data();
  for (cpu::Isa cap : caps()) {
    test::IsaCap guard(cap);
    INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
    std::vector<uint8_t> out(want.size());
    run(Algo::kIm2win, p, packed.data(), d.input.data(), out.data(), r, 1);
    CHECK(out == want);
    std::fill(out.begin(), out.end(), 0);
    run(Algo::kIndirect, p, packed.data(), d.input.data(), out.data(), r, 1);
    CHECK(out == want);
  }
}

TEST_CASE("INT8 residual: invalid residual parameters are rejected, naming the problem") {
  const ConvParams p = Conv(1, 8, 4, 4, 12).k(1, 1).p;
  S8Data d = make_data(p, 3, 0, p.out_channels);
  std::vector<uint8_t> packed(cpu::s8_conv_packed_bytes(p));
  cpu::s8_pack_conv(p, d.weight.data(), d.q, packed.data());
  std::vector<uint8_t> out(d.residual.size());
  auto expect_throw = [&](cpu::S8Residual r, const char* what) {
    CHECK_THROWS_WITH_AS(cpu::s8_indirect_conv(p, d.input.data(), packed.data(), out.data(), 1, &r),
                         doctest::Contains(what), std::invalid_argument);
    CHECK_THROWS_WITH_AS(cpu::s8_im2win_conv(p, d.input.data(), packed.data(), out.data(), nullptr, 1, &r),
                         doctest::Contains(what), std::invalid_argument);
  };
  cpu::S8Residual r = d.r;
  r.data = d.residual.data();
  cpu::S8Residual bad = r;
  bad.data = nullptr;
  expect_throw(bad, "null");
  bad = r;
  bad.pixel_stride = 11;
  expect_throw(bad, "pixel stride 11");
  bad = r;
  bad.zero = 256;
  expect_throw(bad, "zero point");
  bad = r;
  bad.scale = std::nanf("");
  expect_throw(bad, "scale");
}

}  // namespace
}  // namespace winfer
