// u8 max pooling (kernels/cpu/maxpool_u8.h) against a scalar reference written from the
// semantics (max over in-bounds taps, 0 for an empty window), byte for byte, on every ISA path
// this CPU runs and 1-3 threads: channel counts around the 16/32/64-byte vectors and the
// 256-channel blocks, the ResNet stem pool, ceil-mode windows, dilation, windows wholly in the
// padding; and against the FP32 pool on the dequantized values (max commutes with the u8 grid).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/maxpool_u8.h"
#include "kernels/cpu/pooling.h"
#include "test_util.h"

namespace winfer {
namespace {

struct Pool {
  PoolParams p;
  // out size by PyTorch's rule (floor or ceil, a window must start inside the input or the
  // left padding) unless given.
  Pool(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil_mode) {
    p.batch = n;
    p.channels = c;
    p.in_h = h;
    p.in_w = w;
    p.kernel_h = p.kernel_w = k;
    p.stride_h = p.stride_w = s;
    p.pad_top = p.pad_left = pad;
    p.dilation_h = p.dilation_w = dil;
    p.out_h = out_size(h, k, s, pad, dil, ceil_mode);
    p.out_w = out_size(w, k, s, pad, dil, ceil_mode);
  }
  static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil_mode) {
    const int64_t span = in + 2 * pad - dil * (k - 1) - 1;
    int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + pad) --o;
    return o;
  }
};

std::vector<uint8_t> reference(const PoolParams& p, const std::vector<uint8_t>& in) {
  std::vector<uint8_t> out(static_cast<size_t>(p.batch * p.out_h * p.out_w * p.channels));
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oh = 0; oh < p.out_h; ++oh)
      for (int64_t ow = 0; ow < p.out_w; ++ow)
        for (int64_t c = 0; c < p.channels; ++c) {
          int m = 0;
          for (int64_t kh = 0; kh < p.kernel_h; ++kh)
            for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
              const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
              const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
              if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
              m = std::max<int>(m, in[((n * p.in_h + ih) * p.in_w + iw) * p.channels + c]);
            }
          out[((n * p.out_h + oh) * p.out_w + ow) * p.channels + c] = static_cast<uint8_t>(m);
        }
  return out;
}

std::string describe(const PoolParams& p) {
  return "N" + std::to_string(p.batch) + " C" + std::to_string(p.channels) + " " + std::to_string(p.in_h) + "x" +
         std::to_string(p.in_w) + " k" + std::to_string(p.kernel_h) + " s" + std::to_string(p.stride_h) + " pad" +
         std::to_string(p.pad_top) + " d" + std::to_string(p.dilation_h) + " -> " + std::to_string(p.out_h) + "x" +
         std::to_string(p.out_w);
}

TEST_CASE("maxpool2d_nhwc_u8 matches the scalar reference: every ISA path, threads 1-3") {
  std::vector<PoolParams> cases = {
      Pool(1, 64, 112, 112, 3, 2, 1, 1, false).p,  // ResNet stem pool
      Pool(2, 64, 13, 11, 3, 2, 1, 1, true).p,     // ceil mode, batch 2
      Pool(1, 1, 9, 7, 2, 2, 0, 1, true).p,        // C = 1, ceil mode: a half-outside last window
      Pool(1, 3, 8, 8, 3, 1, 1, 1, false).p,
      Pool(1, 300, 6, 7, 3, 2, 1, 1, true).p,  // 256 + 44: a 4-vector block then a masked one
      Pool(2, 256, 5, 5, 2, 2, 0, 1, false).p,
      Pool(1, 17, 10, 9, 3, 1, 2, 2, false).p,  // dilation 2
      Pool(1, 65, 9, 9, 3, 2, 1, 2, true).p,    // dilation and ceil
      Pool(3, 100, 7, 6, 5, 3, 2, 1, true).p,
  };
  for (int64_t c : {15, 16, 31, 32, 33, 63, 127, 255}) cases.push_back(Pool(1, c, 7, 8, 3, 2, 1, 1, c % 2 == 1).p);
  // Windows wholly in the padding: in 5, k 2, s 3, pad 1 -> windows at -1, 2, 5 (the last has
  // no in-bounds tap; PoolParams lets the caller ask for it).
  PoolParams empty = Pool(1, 70, 5, 5, 2, 3, 1, 1, false).p;
  empty.out_h = empty.out_w = 3;
  cases.push_back(empty);
  uint32_t seed = 500;
  for (const PoolParams& p : cases) {
    INFO(describe(p));
    std::mt19937 gen(++seed);
    std::vector<uint8_t> in(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.channels));
    for (uint8_t& x : in) x = static_cast<uint8_t>(gen() % 250 + 3);
    const std::vector<uint8_t> want = reference(p, in);
    if (&p == &cases.back()) CHECK(std::count(want.begin(), want.end(), 0) >= p.channels);  // the empty windows
    for (cpu::Isa isa : test::runnable_isas()) {
      test::IsaCap cap(isa);
      INFO("isa ", test::isa_name(isa));
      for (int threads : {1, 2, 3}) {
        INFO("threads ", threads);
        std::vector<uint8_t> out(want.size() + 64, 0xA5);
        cpu::maxpool2d_nhwc_u8(p, in.data(), out.data(), threads);
        CHECK(std::equal(want.begin(), want.end(), out.begin()));
        CHECK(std::count(out.begin() + static_cast<std::ptrdiff_t>(want.size()), out.end(), 0xA5) == 64);
      }
    }
  }
}

TEST_CASE("maxpool2d_nhwc_u8 gives the u8 codes of the FP32 max pool of the dequantized values") {
  const PoolParams p = Pool(2, 40, 9, 10, 3, 2, 1, 1, true).p;
  std::mt19937 gen(3);
  std::vector<uint8_t> in(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.channels));
  for (uint8_t& x : in) x = static_cast<uint8_t>(gen() & 255);
  const float scale = 0.0371f;
  const int zero = 117;
  std::vector<float> x(in.size());
  for (size_t i = 0; i < in.size(); ++i) x[i] = scale * (static_cast<float>(in[i]) - static_cast<float>(zero));
  std::vector<float> yf(static_cast<size_t>(p.batch * p.out_h * p.out_w * p.channels));
  maxpool2d_nhwc(p, x.data(), yf.data(), 1);
  std::vector<uint8_t> y(yf.size());
  cpu::maxpool2d_nhwc_u8(p, in.data(), y.data(), 2);
  for (size_t i = 0; i < y.size(); ++i)
    if (scale * (static_cast<float>(y[i]) - static_cast<float>(zero)) != yf[i]) {
      INFO("output ", i);
      CHECK(scale * (static_cast<float>(y[i]) - static_cast<float>(zero)) == yf[i]);
      break;
    }
}

}  // namespace
}  // namespace winfer
