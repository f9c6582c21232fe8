// The body of max_pool_row (maxpool_rows.h says what it computes), written once for every ISA
// that has a vector max instruction. Included only by maxpool_<isa>.cpp after its
// `#pragma GCC target(...)`, as ukernel_conv_body.h is (that header says why), through the ISA's
// traits type:
//
//   struct Isa {
//     static constexpr int kLanes;                          // floats per vector
//     using V, Nan, Tail;                                   // a vector; lanes that saw a NaN; a lane mask
//     static Tail tail(int64_t n);                          // lanes [0, n), 0 < n < kLanes
//     static V load(const float* p), load_tail(const float* p, Tail t);  // masked: reads p[0, n) only
//     static void store(float* p, V v), store_tail(float* p, V v, Tail t);
//     static Nan no_nan();
//     static Nan or_unordered(Nan nan, V a, V b);           // nan | lanes where a or b is a NaN
//     static V first_max(V earlier, V later);               // later > earlier ? later : earlier
//     static V nan_where(V v, Nan nan);                     // v with a NaN in the lanes of nan
//   };
//
// first_max is the hardware max with its operands in that order (x86 maxps returns its second
// operand on ties and whenever a NaN is involved): ties keep the earlier tap, as PyTorch's
// `val > maxval` does, and picking the first maximal tap is associative, so that each window
// row is reduced on its own chain and the rows combined after (a shorter dependency chain than
// tap after tap) with the same result. A NaN in `earlier` survives first_max, one in `later` is
// dropped: every `later` operand is checked with or_unordered (two per compare where they
// pair up) and its lanes set to NaN at the end.
//
// Before (session 41): one row of vector-extension code for every ISA, a six-operation blend per
// tap and valid_taps (two 64-bit divisions) per output pixel: ShuffleNetV2's max pooling after its
// stem (24 channels, 112x112 -> 56x56) took 1.16 ms of 4.3 ms at batch 8.

namespace winfer {
namespace cpu {
namespace {

// The max over a window of rows x cols taps (kRows, kCols: compile-time when nonzero), the
// first tap at t, for the kLanes channels there (kTail: the lanes of `tail` only).
template <class Isa, bool kTail, int kRows = 0, int kCols = 0>
__attribute__((always_inline)) inline typename Isa::V window_max(const float* t, int64_t rows, int64_t row_step,
                                                                 int64_t cols, int64_t col_step,
                                                                 typename Isa::Tail tail) {
  using V = typename Isa::V;
  const int64_t n_rows = kRows > 0 ? kRows : rows, n_cols = kCols > 0 ? kCols : cols;
  const auto load = [&](const float* p) {
    if constexpr (kTail)
      return Isa::load_tail(p, tail);
    else
      return Isa::load(p);
  };
  typename Isa::Nan nan = Isa::no_nan();
  V m{};
#pragma GCC unroll 8
  for (int64_t r = 0; r < n_rows; ++r, t += row_step) {
    V row_max = load(t);
    int64_t j = 1;
#pragma GCC unroll 8
    for (; j + 1 < n_cols; j += 2) {
      const V a = load(t + j * col_step), b = load(t + (j + 1) * col_step);
      nan = Isa::or_unordered(nan, a, b);
      row_max = Isa::first_max(Isa::first_max(row_max, a), b);
    }
    if (j < n_cols) {
      const V a = load(t + j * col_step);
      nan = Isa::or_unordered(nan, a, a);
      row_max = Isa::first_max(row_max, a);
    }
    if (r == 0) {
      m = row_max;  // a NaN as its first tap survives the row's first_max chain
    } else {
      nan = Isa::or_unordered(nan, row_max, row_max);
      m = Isa::first_max(m, row_max);
    }
  }
  return Isa::nan_where(m, nan);
}

// Every channel of one output pixel whose window has rows x cols taps in the input, the first at
// `first`.
template <class Isa, int kRows = 0, int kCols = 0>
__attribute__((always_inline)) inline void pixel_max(const float* first, int64_t rows, int64_t row_step, int64_t cols,
                                                     int64_t col_step, int64_t channels, float* out) {
  constexpr int kLanes = Isa::kLanes;
  int64_t c = 0;
  const typename Isa::Tail none{};  // unused by whole vectors
  for (; c + kLanes <= channels; c += kLanes)
    Isa::store(out + c, window_max<Isa, false, kRows, kCols>(first + c, rows, row_step, cols, col_step, none));
  if (c < channels) {
    const typename Isa::Tail tail = Isa::tail(channels - c);
    Isa::store_tail(out + c, window_max<Isa, true, kRows, kCols>(first + c, rows, row_step, cols, col_step, tail),
                    tail);
  }
}

template <class Isa>
void max_pool_row(const PoolParams& p, const float* in_image, int64_t oh, float* out_row) {
  const int64_t channels = p.channels, row_floats = p.in_w * channels;
  int64_t kh0, kh1;
  valid_taps(oh * p.stride_h - p.pad_top, p.dilation_h, p.kernel_h, p.in_h, &kh0, &kh1);
  const int64_t rows = kh1 - kh0, row_step = p.dilation_h * row_floats, col_step = p.dilation_w * channels;
  const int64_t top_row = oh * p.stride_h - p.pad_top + kh0 * p.dilation_h;
  // Output columns whose whole window lies in the input, [full0, full1): their taps need no
  // bounds (valid_taps divides, twice, which cost as much as a small window's maxima).
  const int64_t full0 = std::min(p.out_w, ceil_div(p.pad_left, p.stride_w));
  const int64_t last_start = p.in_w - 1 - (p.kernel_w - 1) * p.dilation_w + p.pad_left;
  const int64_t full1 = last_start >= 0 ? std::clamp(last_start / p.stride_w + 1, full0, p.out_w) : full0;
  const bool three = rows == 3 && p.kernel_w == 3, two = rows == 2 && p.kernel_w == 2;
  for (int64_t ow = 0; ow < p.out_w; ++ow) {
    float* out = out_row + ow * channels;
    const bool full = ow >= full0 && ow < full1;
    int64_t kw0 = 0, kw1 = p.kernel_w;
    if (!full) valid_taps(ow * p.stride_w - p.pad_left, p.dilation_w, p.kernel_w, p.in_w, &kw0, &kw1);
    if (rows == 0 || kw1 == kw0) {
      std::fill(out, out + channels, -std::numeric_limits<float>::infinity());
      continue;
    }
    const float* first =
        in_image + top_row * row_floats + (ow * p.stride_w - p.pad_left + kw0 * p.dilation_w) * channels;
    // The common windows with their loops unrolled: 3x3 (ResNet's and ShuffleNet's stems),
    // 2x2 (VGG's).
    if (full && three)
      pixel_max<Isa, 3, 3>(first, 3, row_step, 3, col_step, channels, out);
    else if (full && two)
      pixel_max<Isa, 2, 2>(first, 2, row_step, 2, col_step, channels, out);
    else
      pixel_max<Isa>(first, rows, row_step, kw1 - kw0, col_step, channels, out);
  }
}

}  // namespace
}  // namespace cpu
}  // namespace winfer
