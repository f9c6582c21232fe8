// INT8 convolutions (kernels/cpu/conv_s8.h): im2win, indirect and depthwise against an exact
// integer reference written from the contract (sum of (q_x - z_x) * q_w over the taps inside
// the input, + q_b, then the requantize formula), bit for bit, on random data, on the FP32
// micro-kernel algorithms' edge shapes plus INT8 ones, under every INT8 path this CPU runs
// (VNNI, AVX2, scalar, forced through the ISA cap) and 1-3 threads. Also: the requantize
// formula against double arithmetic (ties to even, clamps, huge products), the case that
// saturates AVX2's vpmaddubsw (255 x 127 + 255 x 127), inputs ending at an unreadable page
// (nothing read past a tensor), outputs written only where they belong (canaries, channel
// slices of wider tensors), and the packing's checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "conv_test_util.h"
#include "kernels/cpu/conv_s8.h"
#include "kernels/cpu/fma_probe.h"
#include "kernels/cpu/vnni_probe.h"
#include "test_util.h"

namespace winfer {
namespace {

using test::Conv;
using test::GuardedBuffer;

struct S8Data {
  std::vector<uint8_t> input;
  std::vector<int8_t> weight;  // OIHW
  std::vector<int32_t> bias;   // empty: no bias
  std::vector<float> mult;
  cpu::S8ConvQuant q;  // pointers into this struct: set by finish()

  void finish() {
    q.multiplier = mult.data();
    q.bias = bias.empty() ? nullptr : bias.data();
  }
};

// The exact accumulator (int64, checked to fit int32) of every output, [N][Ho][Wo][Co], from
// OIHW weights: taps in the padding are real zeros and skipped.
std::vector<int64_t> reference_acc(const ConvParams& p, const S8Data& d) {
  const int64_t ho = p.out_h(), wo = p.out_w(), cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  std::vector<int64_t> acc(static_cast<size_t>(p.batch * ho * wo * p.out_channels));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox)
        for (int64_t oc = 0; oc < p.out_channels; ++oc) {
          const int64_t g = oc / cog;
          int64_t s = d.bias.empty() ? 0 : d.bias[oc];
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < p.kernel_h; ++kh)
              for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
                const int64_t iy = oy * p.stride_h - p.pad_top + kh * p.dilation_h;
                const int64_t ix = ox * p.stride_w - p.pad_left + kw * p.dilation_w;
                if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;
                const int64_t x = d.input[((n * p.in_h + iy) * p.in_w + ix) * p.in_channels + g * cg + c];
                s += (x - d.q.in_zero) * d.weight[((oc * cg + c) * p.kernel_h + kh) * p.kernel_w + kw];
              }
          acc[((n * ho + oy) * wo + ox) * p.out_channels + oc] = s;
        }
  return acc;
}

std::vector<uint8_t> requantize_all(const ConvParams& p, const S8Data& d, const std::vector<int64_t>& acc) {
  std::vector<uint8_t> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    REQUIRE(acc[i] == static_cast<int32_t>(acc[i]));
    const int64_t oc = static_cast<int64_t>(i) % p.out_channels;
    out[i] = cpu::s8_requantize(static_cast<int32_t>(acc[i]), d.mult[oc], d.q.out_zero, d.q.lo, d.q.hi);
  }
  return out;
}

// Random data (never constant: every value range covered), and multipliers that spread each
// output channel's results over about [0, 255] around z_y, so that a wrong term shows. clamp:
// 0 none, 1 ReLU, 2 a ReLU6-like upper bound.
S8Data make_data(const ConvParams& p, uint32_t seed, bool with_bias, int clamp) {
  std::mt19937 gen(seed);
  S8Data d;
  const int64_t k = p.in_channels_per_group() * p.kernel_h * p.kernel_w;
  d.input.resize(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels));
  for (uint8_t& x : d.input) x = static_cast<uint8_t>(gen() & 255);
  d.weight.resize(static_cast<size_t>(p.out_channels * k));
  for (int8_t& w : d.weight) w = static_cast<int8_t>(static_cast<int>(gen() & 255) - 128);
  if (with_bias) {
    d.bias.resize(static_cast<size_t>(p.out_channels));
    for (int32_t& b : d.bias) b = static_cast<int32_t>(gen() % 400001) - 200000;
  }
  d.q.in_zero = 1 + static_cast<int32_t>(gen() % 254);
  d.q.out_zero = 60 + static_cast<int32_t>(gen() % 130);  // room on both sides for the spread
  d.q.lo = clamp == 0 ? 0 : d.q.out_zero;
  d.q.hi = clamp == 2 ? std::min(255, d.q.out_zero + 60) : 255;
  // Typical |acc|: 74 * 128 * sqrt(K) (uniform activations minus a zero point, uniform weights).
  const double typical = 74.0 * 74.0 * std::sqrt(static_cast<double>(k)) + 1.0;
  d.mult.resize(static_cast<size_t>(p.out_channels));
  for (float& m : d.mult) m = static_cast<float>(60.0 / typical * (0.5 + (gen() % 1000) / 1000.0));
  d.finish();
  return d;
}

std::vector<cpu::Isa> caps() { return test::runnable_isas(); }

cpu::S8Isa expected_s8_isa(cpu::Isa cap) {
#if defined(__x86_64__) || defined(__i386__)
  const bool vnni = __builtin_cpu_supports("avx512vnni");
#else
  const bool vnni = false;
#endif
  if (cap == cpu::Isa::kAvx512 && vnni) return cpu::S8Isa::kVnni;
  if (cap >= cpu::Isa::kAvx2) return cpu::S8Isa::kAvx2;
  return cpu::S8Isa::kGeneric;
}

enum class Algo { kIm2win, kIndirect };

// Runs one algorithm with canaries after the packed weights, the workspace and the output, the
// output pre-filled with a marker byte; out_stride > Co writes a channel slice of a wider tensor.
std::vector<uint8_t> run_s8(Algo algo, const ConvParams& p, const S8Data& d, int threads) {
  GuardedBuffer packed(cpu::s8_conv_packed_bytes(p));
  cpu::s8_pack_conv(p, d.weight.data(), d.q, packed.data_bytes());
  CHECK(packed.canary_intact());
  const size_t out_bytes = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_stride());
  GuardedBuffer out(out_bytes);
  std::memset(out.data_bytes(), 0x5A, out_bytes);
  if (algo == Algo::kIm2win) {
    const size_t ws_bytes = cpu::s8_im2win_workspace_bytes(p, threads);
    GuardedBuffer ws(ws_bytes);
    cpu::s8_im2win_conv(p, d.input.data(), packed.data_bytes(), out.data_bytes(), ws.data_bytes(), threads);
    CHECK_MESSAGE(ws.canary_intact(), "im2win wrote past its workspace");
  } else {
    cpu::s8_indirect_conv(p, d.input.data(), packed.data_bytes(), out.data_bytes(), threads);
  }
  CHECK_MESSAGE(out.canary_intact(), "wrote past the output");
  return std::vector<uint8_t>(out.data_bytes(), out.data_bytes() + out_bytes);
}

// Compares the run's output (rows of out_stride bytes) with the reference (rows of Co bytes),
// and checks that the bytes between the rows kept their marker.
void check_output(const ConvParams& p, const std::vector<uint8_t>& got, const std::vector<uint8_t>& want) {
  const int64_t pixels = p.batch * p.out_h() * p.out_w(), co = p.out_channels, stride = p.out_stride();
  int64_t wrong = 0, first_wrong = -1, stray = 0;
  for (int64_t px = 0; px < pixels; ++px) {
    for (int64_t c = 0; c < co; ++c)
      if (got[px * stride + c] != want[px * co + c]) {
        if (first_wrong < 0) first_wrong = px * co + c;
        ++wrong;
      }
    for (int64_t c = co; c < stride; ++c) stray += got[px * stride + c] != 0x5A;
  }
  INFO("first wrong output (pixel, channel): ", first_wrong / std::max<int64_t>(co, 1), ", ",
       first_wrong % std::max<int64_t>(co, 1),
       first_wrong >= 0 ? " got " + std::to_string(got[first_wrong / co * stride + first_wrong % co]) + " want " +
                              std::to_string(want[first_wrong])
                        : std::string());
  CHECK(wrong == 0);
  CHECK(stray == 0);
}

// The INT8 edge shapes: the FP32 micro-kernel algorithms' (every padding/stride/dilation/group
// combination, odd sizes, C = 1 and 3 stems, batch 3, deep K) plus channel counts around the
// 4-byte groups and the 16/32-channel vectors and panels, 1x1 in place with Cg % 4 != 0,
// ResNet-like 3x3 and 1x1 blocks with batch 2.
std::vector<std::pair<ConvParams, int>> s8_cases() {
  std::vector<std::pair<ConvParams, int>> cases;
  int i = 0;
  for (const test::ConvCase& c : test::tile_algorithm_cases()) cases.push_back({c.p, i++ % 3});
  const ConvParams extra[] = {
      Conv(2, 64, 9, 10, 64).k(3, 3).pad(1).p,               // ResNet 3x3, batch 2
      Conv(2, 64, 7, 9, 256).k(1, 1).p,                      // ResNet 1x1 expand (in place)
      Conv(1, 256, 6, 7, 64).k(1, 1).s(2, 2).p,              // 1x1/2 in place
      Conv(1, 7, 8, 9, 31).k(3, 3).pad(1).p,                 // Cg = 7, Co = 31
      Conv(1, 5, 6, 7, 15).k(1, 1).p,                        // 1x1 with Cg % 4 != 0: window path
      Conv(1, 13, 9, 8, 47).k(5, 5).s(2, 2).pad(2).p,        // 5x5/2
      Conv(2, 3, 23, 21, 32).k(7, 7).s(2, 2).pad(3).p,       // stem 7x7/2, batch 2
      Conv(1, 36, 6, 9, 65).k(3, 3).pad(1).d(2, 3).p,        // dilation 2x3, Co = 65
      Conv(1, 20, 7, 7, 20).k(3, 3).pad(1).g(5).p,           // 4 per group
      Conv(1, 96, 5, 5, 64).k(3, 1).pad(1, 0, 1, 0).g(2).p,  // Kw = 1
  };
  for (const ConvParams& p : extra) cases.push_back({p, i++ % 3});
  return cases;
}

// ---- the requantization --------------------------------------------------------------------

TEST_CASE("s8_requantize: float32 product, ties to even, zero point, clamp") {
  // Independent formulation: float(acc) exactly in double, the product rounded once to float32,
  // then round half to even in double.
  auto want = [](int32_t acc, float m, int32_t zy, int32_t lo, int32_t hi) {
    const double f = static_cast<float>(static_cast<double>(static_cast<float>(acc)) * static_cast<double>(m));
    const double fc = std::min(std::max(f, -65536.0), 65536.0);
    double r = std::floor(fc);
    const double frac = fc - r;
    if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
    return static_cast<int>(std::min<double>(std::max<double>(r + zy, lo), hi));
  };
  CHECK(cpu::s8_requantize(5, 0.5f, 0, 0, 255) == 2);    // 2.5 -> 2
  CHECK(cpu::s8_requantize(7, 0.5f, 0, 0, 255) == 4);    // 3.5 -> 4
  CHECK(cpu::s8_requantize(-5, 0.5f, 10, 0, 255) == 8);  // -2.5 -> -2
  CHECK(cpu::s8_requantize(-7, 0.5f, 10, 0, 255) == 6);  // -3.5 -> -4
  CHECK(cpu::s8_requantize(1000, 1.f, 3, 0, 255) == 255);
  CHECK(cpu::s8_requantize(-1000, 1.f, 3, 7, 255) == 7);          // ReLU-like low bound
  CHECK(cpu::s8_requantize(2147483647, 1e9f, 0, 0, 200) == 200);  // product past int32: clamped
  CHECK(cpu::s8_requantize(-2147483647 - 1, 1e9f, 0, 9, 255) == 9);
  std::mt19937 gen(77);
  for (int i = 0; i < 200000; ++i) {
    const int32_t acc = static_cast<int32_t>(gen());
    const float m = std::ldexp(static_cast<float>(gen() % 100000 + 1), -static_cast<int>(gen() % 40) - 10);
    const int32_t zy = static_cast<int32_t>(gen() % 256), lo = static_cast<int32_t>(gen() % 128);
    const int32_t hi = lo + static_cast<int32_t>(gen() % (256 - lo));
    const int got = cpu::s8_requantize(acc, m, zy, lo, hi);
    if (got != want(acc, m, zy, lo, hi)) {
      INFO("acc ", acc, " m ", m, " zy ", zy);
      CHECK(got == want(acc, m, zy, lo, hi));
      break;
    }
  }
}

// ---- im2win and indirect ---------------------------------------------------------------------

TEST_CASE("INT8 im2win and indirect match the exact integer reference: every ISA path, threads 1-3") {
  uint32_t seed = 2700;
  for (const auto& [p0, clamp_kind] : s8_cases()) {
    const ConvParams p = p0;
    const int clamp = clamp_kind;
    INFO(p.to_string(), " clamp ", clamp);
    REQUIRE(p.is_valid());
    ++seed;
    const S8Data d = make_data(p, seed, /*with_bias=*/seed % 4 != 0, clamp);
    const std::vector<uint8_t> want = requantize_all(p, d, reference_acc(p, d));
    // The outputs are spread (not all clamped): a kernel that drops a term must show.
    int distinct[256] = {};
    for (uint8_t v : want) distinct[v] = 1;
    CHECK(std::count(distinct, distinct + 256, 1) >= std::min<int>(8, static_cast<int>(want.size())));
    for (cpu::Isa cap : caps()) {
      test::IsaCap guard(cap);
      INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
      CHECK(cpu::s8_isa() == expected_s8_isa(cap));
      for (int threads : {1, 2, 3}) {
        INFO("threads ", threads);
        check_output(p, run_s8(Algo::kIm2win, p, d, threads), want);
        check_output(p, run_s8(Algo::kIndirect, p, d, threads), want);
      }
    }
  }
}

TEST_CASE("INT8 im2win and indirect write a channel slice of a wider tensor (out_pixel_stride)") {
  for (ConvParams p : {Conv(2, 16, 5, 6, 40).k(3, 3).pad(1).p, Conv(1, 32, 4, 5, 17).k(1, 1).p}) {
    p.out_pixel_stride = p.out_channels + 23;
    INFO(p.to_string());
    const S8Data d = make_data(p, 99, true, 1);
    const std::vector<uint8_t> want = requantize_all(p, d, reference_acc(p, d));
    for (cpu::Isa cap : caps()) {
      test::IsaCap guard(cap);
      INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
      check_output(p, run_s8(Algo::kIm2win, p, d, 2), want);
      check_output(p, run_s8(Algo::kIndirect, p, d, 2), want);
    }
  }
}

TEST_CASE("INT8 kernels: the products that saturate vpmaddubsw are exact on every path") {
  // x = 255 everywhere (z_x = 0), weights +127 / -128 in runs: every pair of products is
  // 255 * 127 * 2 = 64770 or 255 * -128 * 2 = -65280, past int16 (vpmaddubsw would clamp to
  // 32767 / -32768). Channels alternate all-positive, all-negative and mixed weights.
  const ConvParams p = Conv(1, 64, 4, 5, 40).k(3, 3).pad(1).p;
  S8Data d;
  d.input.assign(static_cast<size_t>(p.in_h * p.in_w * p.in_channels), 255);
  const int64_t k = 64 * 9;
  d.weight.resize(static_cast<size_t>(p.out_channels * k));
  for (int64_t oc = 0; oc < p.out_channels; ++oc)
    for (int64_t i = 0; i < k; ++i)
      d.weight[oc * k + i] = static_cast<int8_t>(oc % 3 == 0 ? 127 : oc % 3 == 1 ? -128 : (i / 2) % 2 ? 127 : -128);
  d.q.in_zero = 0;
  d.q.out_zero = 128;
  d.mult.assign(static_cast<size_t>(p.out_channels), 0.f);
  for (int64_t oc = 0; oc < p.out_channels; ++oc) d.mult[oc] = 100.f / (255.f * 128.f * k) * (1 + oc % 5);
  d.finish();
  const std::vector<int64_t> acc = reference_acc(p, d);
  CHECK(*std::max_element(acc.begin(), acc.end()) == 255 * 127 * k);  // an inner pixel, 9 taps
  CHECK(*std::min_element(acc.begin(), acc.end()) == -255 * 128 * k);
  const std::vector<uint8_t> want = requantize_all(p, d, acc);
  for (cpu::Isa cap : caps()) {
    test::IsaCap guard(cap);
    INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
    check_output(p, run_s8(Algo::kIm2win, p, d, 1), want);
    check_output(p, run_s8(Algo::kIndirect, p, d, 1), want);
  }
}

#if defined(__linux__)
// `bytes` ending exactly where an inaccessible page begins: a read past them faults.
class PageEndBuffer {
 public:
  explicit PageEndBuffer(size_t bytes) : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    map_bytes_ = (bytes + page_ - 1) / page_ * page_ + page_;
    base_ = static_cast<unsigned char*>(
        mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(base_ != MAP_FAILED);
    REQUIRE(mprotect(base_ + map_bytes_ - page_, page_, PROT_NONE) == 0);
    data_ = base_ + map_bytes_ - page_ - bytes;
  }
  ~PageEndBuffer() { munmap(base_, map_bytes_); }
  unsigned char* data() { return data_; }

 private:
  size_t page_, map_bytes_;
  unsigned char* base_;
  unsigned char* data_;
};

TEST_CASE("INT8 kernels read nothing past the input (it ends at an unreadable page)") {
  // Channel counts that are not multiples of 4 or 16: a kernel reading whole 4-byte groups or
  // vectors past the last pixel would fault.
  for (const ConvParams& p : {Conv(1, 3, 7, 9, 8).k(3, 3).pad(1).p, Conv(2, 6, 5, 5, 9).k(1, 1).p,
                              Conv(1, 10, 4, 6, 12).k(3, 3).s(2, 2).pad(0, 0, 1, 1).g(2).p}) {
    INFO(p.to_string());
    S8Data d = make_data(p, 5, true, 0);
    const std::vector<uint8_t> want = requantize_all(p, d, reference_acc(p, d));
    PageEndBuffer in(d.input.size());
    std::memcpy(in.data(), d.input.data(), d.input.size());
    for (cpu::Isa cap : caps()) {
      test::IsaCap guard(cap);
      INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
      std::vector<uint8_t> packed(cpu::s8_conv_packed_bytes(p));
      cpu::s8_pack_conv(p, d.weight.data(), d.q, packed.data());
      std::vector<uint8_t> out(want.size()), ws(cpu::s8_im2win_workspace_bytes(p, 1));
      cpu::s8_im2win_conv(p, in.data(), packed.data(), out.data(), ws.data(), 1);
      check_output(p, out, want);
      cpu::s8_indirect_conv(p, in.data(), packed.data(), out.data(), 1);
      check_output(p, out, want);
    }
  }
  for (const ConvParams& p : {Conv(1, 5, 6, 7, 5).k(3, 3).pad(1).g(5).p, Conv(2, 19, 5, 4, 19).k(3, 3).g(19).p,
                              Conv(1, 57, 3, 4, 57).k(3, 3).pad(1).g(57).p}) {
    INFO(p.to_string());
    S8Data d = make_data(p, 6, true, 1);
    const std::vector<uint8_t> want = requantize_all(p, d, reference_acc(p, d));
    PageEndBuffer in(d.input.size());
    std::memcpy(in.data(), d.input.data(), d.input.size());
    std::vector<uint8_t> packed(cpu::s8_depthwise_packed_bytes(p));
    cpu::s8_pack_depthwise(p, d.weight.data(), d.q, packed.data());
    for (cpu::Isa cap : caps()) {
      test::IsaCap guard(cap);
      INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
      std::vector<uint8_t> out(want.size());
      cpu::s8_depthwise_conv(p, in.data(), packed.data(), out.data(), 1);
      check_output(p, out, want);
    }
  }
}
#endif

// ---- depthwise -------------------------------------------------------------------------------

TEST_CASE("INT8 depthwise matches the exact integer reference: every ISA path, threads 1-3") {
  const ConvParams cases[] = {
      Conv(1, 1, 5, 6, 1).k(3, 3).pad(1).g(1).p,  // C = 1 (groups = 1 is also depthwise here)
      Conv(1, 3, 7, 5, 3).k(3, 3).pad(1).g(3).p,
      Conv(2, 17, 9, 8, 17).k(3, 3).s(2, 2).pad(1).g(17).p,
      Conv(1, 64, 6, 6, 64).k(3, 3).pad(1).g(64).p,
      Conv(1, 100, 7, 9, 100).k(5, 5).pad(2).g(100).p,
      Conv(1, 40, 8, 7, 40).k(3, 3).pad(2).d(2, 2).g(40).p,
      Conv(3, 33, 5, 6, 33).k(3, 3).s(2, 1).pad(0, 1, 1, 0).g(33).p,
      Conv(1, 130, 4, 4, 130).k(7, 7).pad(3).g(130).p,
      // Rows of interior pixels: the groups of 4 pixels whose taps are one pointer + an offset.
      Conv(1, 24, 5, 21, 24).k(3, 3).s(2, 2).pad(1).g(24).p,
      Conv(2, 20, 9, 19, 20).k(3, 3).pad(2).d(2, 2).g(20).p,
      Conv(1, 48, 6, 30, 48).k(3, 3).g(48).p,
      // VNNI byte-lane blocks (64 channels) with a partial mask (57, 121 = 64 + 57), and blocks
      // of at most 48 after a full one (100 = 64 + 36).
      Conv(1, 57, 6, 11, 57).k(3, 3).pad(1).g(57).p,
      Conv(2, 121, 5, 9, 121).k(5, 5).s(2, 2).pad(2).g(121).p,
  };
  uint32_t seed = 2750;
  int clamp = 0;
  for (ConvParams p : cases) {
    for (bool strided : {false, true}) {
      p.out_pixel_stride = strided ? p.out_channels + 9 : 0;
      INFO(p.to_string(), " clamp ", clamp);
      ++seed;
      const S8Data d = make_data(p, seed, /*with_bias=*/seed % 3 != 0, clamp++ % 3);
      const std::vector<uint8_t> want = requantize_all(p, d, reference_acc(p, d));
      GuardedBuffer packed(cpu::s8_depthwise_packed_bytes(p));
      cpu::s8_pack_depthwise(p, d.weight.data(), d.q, packed.data_bytes());
      CHECK(packed.canary_intact());
      for (cpu::Isa cap : caps()) {
        test::IsaCap guard(cap);
        INFO("INT8 path ", std::string(cpu::s8_isa_name(cpu::s8_isa())));
        for (int threads : {1, 2, 3}) {
          const size_t out_bytes = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_stride());
          GuardedBuffer out(out_bytes);
          std::memset(out.data_bytes(), 0x5A, out_bytes);
          cpu::s8_depthwise_conv(p, d.input.data(), packed.data_bytes(), out.data_bytes(), threads);
          CHECK(out.canary_intact());
          check_output(p, std::vector<uint8_t>(out.data_bytes(), out.data_bytes() + out_bytes), want);
        }
      }
    }
  }
}

// ---- packing checks ----------------------------------------------------------------------------

TEST_CASE("INT8 packing rejects what the kernels cannot compute exactly, and runs check the packing") {
  const ConvParams p = Conv(1, 8, 4, 4, 4).k(3, 3).pad(1).p;
  S8Data d = make_data(p, 1, true, 0);
  std::vector<uint8_t> packed(cpu::s8_conv_packed_bytes(p));
  S8Data bad = d;
  bad.q.in_zero = 256;
  CHECK_THROWS_AS(cpu::s8_pack_conv(p, d.weight.data(), bad.q, packed.data()), std::invalid_argument);
  bad = d;
  bad.finish();
  bad.q.lo = 200;
  bad.q.hi = 100;
  CHECK_THROWS_AS(cpu::s8_pack_conv(p, d.weight.data(), bad.q, packed.data()), std::invalid_argument);
  bad = d;
  bad.mult[2] = std::nanf("");
  bad.finish();
  CHECK_THROWS_WITH_AS(cpu::s8_pack_conv(p, d.weight.data(), bad.q, packed.data()),
                       doctest::Contains("output channel 2"), std::invalid_argument);
  bad = d;
  bad.bias[1] = 2147000000;  // + z_x * sum|w| over 72 taps overflows int32
  bad.finish();
  CHECK_THROWS_WITH_AS(cpu::s8_pack_conv(p, d.weight.data(), bad.q, packed.data()), doctest::Contains("overflow"),
                       std::invalid_argument);
  // A K deep enough to overflow by itself: 9 * 8000 taps of |w| = 128 at x = 255.
  const ConvParams deep = Conv(1, 8000, 3, 3, 1).k(3, 3).p;
  std::vector<int8_t> w(static_cast<size_t>(8000 * 9), -128);
  std::vector<float> m(1, 1e-6f);
  cpu::S8ConvQuant q;
  q.multiplier = m.data();
  std::vector<uint8_t> deep_packed(cpu::s8_conv_packed_bytes(deep));
  CHECK_THROWS_AS(cpu::s8_pack_conv(deep, w.data(), q, deep_packed.data()), std::invalid_argument);
  // Weights packed for one shape, run with another.
  d.finish();
  cpu::s8_pack_conv(p, d.weight.data(), d.q, packed.data());
  ConvParams other = p;
  other.out_channels = 8;
  std::vector<uint8_t> out(static_cast<size_t>(16 * 8));
  CHECK_THROWS_AS(cpu::s8_indirect_conv(other, d.input.data(), packed.data(), out.data(), 1), std::invalid_argument);
  CHECK_THROWS_AS(cpu::s8_pack_depthwise(p, d.weight.data(), d.q, packed.data()), std::invalid_argument);
}

// ---- the VNNI peak probe ------------------------------------------------------------------------

TEST_CASE("VNNI probe: a peak where the CPU has VNNI, above the FP32 FMA peak, 0 without") {
  const double gops = probe_vnni_peak_gops(1, 0.01, 1);
  if (expected_s8_isa(cpu::Isa::kAvx512) != cpu::S8Isa::kVnni) {
    CHECK(gops == 0);
    return;
  }
  // 64 multiply-adds per vpdpbusd against 16 per FMA: 4x the FP32 rate where both issue alike
  // (measured 695-717 GOP/s against 172-174 GFLOP/s here); 2x leaves room for a noisy machine.
  const double fma = fma_peak_gflops(1);
  INFO("VNNI ", gops, " GOP/s, FMA ", fma, " GFLOP/s");
  CHECK(gops > 2 * fma);
}

}  // namespace
}  // namespace winfer
