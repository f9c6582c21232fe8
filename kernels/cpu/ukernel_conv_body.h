// The micro-kernel's body (see ukernel_conv.h for what it computes), written once for every
// ISA. Included only by ukernel_<isa>.cpp, after a `#pragma GCC target(...)` (none for the
// portable one), so that everything defined here is compiled for that ISA and may use its
// intrinsics through the ISA's traits type:
//
//   struct Isa {
//     static constexpr int kLanes;                   // floats per vector register
//     static Vec<kLanes> broadcast(const float* p);  // all lanes = *p, one instruction
//     static Vec<kLanes> load_first(const float* p, int n);  // p[0..n), zeros after; reads
//                                                            // nothing past p + n (1 <= n <= kLanes)
//     static void store_first(float* p, const Vec<kLanes>& v, int n);  // writes p[0..n) only
//   };
//
// This header includes nothing: its includer includes <cstring>, <utility> and ukernel_conv.h *before*
// the target pragma, so that those (shared, external-linkage) inline functions are compiled
// for the baseline ISA and cannot leak AVX-512 code into the rest of the program. For the
// same reason everything here is in an unnamed namespace: each ISA file gets its own copy.
//
// Why per-ISA files and not target attributes on a default-target template (the scheme of
// cpu_common.h): a one-instruction broadcast from memory needs an intrinsic
// (_mm512_set1_ps), and GCC refuses to inline an AVX-512 intrinsic into a template compiled
// for the baseline ISA; the vector-extension spellings compile to two instructions, one of
// them a shuffle on port 5, which on AVX-512 is one of the two FMA ports (measured: 115 vs
// 160 GFLOP/s for a 7x64 tile).

namespace winfer {
namespace cpu {
namespace {

// Unaligned vector load/store, defined here rather than taken from cpu_common.h so that they
// are compiled for the ISA too (Clang rejects calls that return a 512-bit vector from a
// function compiled without AVX-512).
template <int kLanes>
__attribute__((always_inline)) inline Vec<kLanes> vload(const float* p) {
  Vec<kLanes> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <int kLanes>
__attribute__((always_inline)) inline void vstore(float* p, const Vec<kLanes>& v) {
  std::memcpy(p, &v, sizeof v);
}

// The next panel's share (TileArgs::prefetch), into L2 at an even pace: the lines of the 16 K
// steps from `step` (counted over the tile), so that its stream from memory overlaps this
// panel's arithmetic instead of stalling the next panel's first tile.
__attribute__((always_inline)) inline void prefetch_side_share(const char* side_prefetch, int64_t side_rate,
                                                               int64_t step) {
  if (side_prefetch == nullptr) return;
  const int64_t end = ((step + 16) * side_rate) >> 16;
  for (int64_t line = (step * side_rate) >> 16; line < end; ++line)
    __builtin_prefetch(side_prefetch + (line << 6), 0, 2);
}

// One K step's weight row: kVecs vectors of the panel, the last one of a narrow panel loaded
// with `last_lanes` lanes.
template <class Isa, int kVecs, bool kNarrow>
__attribute__((always_inline)) inline void load_weight_row(const float* w, int last_lanes,
                                                           Vec<Isa::kLanes> (&wv)[kVecs]) {
  constexpr int kLanes = Isa::kLanes;
#pragma GCC unroll 16
  for (int v = 0; v < kVecs; ++v)
    wv[v] = kNarrow && v == kVecs - 1 ? Isa::load_first(w + v * kLanes, last_lanes) : vload<kLanes>(w + v * kLanes);
}

// acc[m][v] += sum_{l < len} pixel[m][l] * w[l * kPanel + v * kLanes ...]: the loop every
// convolution micro-kernel shares (accumulate(), below, runs it 4 steps per iteration). Per K
// step: kVecs weight loads, then for each pixel one broadcast (a load) and kVecs FMAs into
// independent accumulators, so kRows * kVecs FMAs are in flight (28 on AVX-512: enough to cover
// 2 ports x 4 cycles of latency).
constexpr int64_t kPrefetchSteps = 16;

//
// kNarrow: a narrow last panel, rows `row_stride` floats apart (else kPanel, a constant), its
// last vector loaded with `last_lanes` lanes.
//
// side_prefetch, side_rate, step0: TileArgs::prefetch and prefetch_rate, and this run's first
// K step counted over the whole tile.
//
// kFirst, kLast: only the pixels [kFirst, kLast) take part (a tile's first or last pixel sits
// out the taps it has in the left or right padding: TileArgs::skip_first, skip_last).
//
// kB > 0: group sets (group_sets.h): a K step is 2 * kB floats of each pixel's run, and the
// vectors of set s (lanes [16s, 16s + 16) of the panel) broadcast its floats [s*kB, s*kB + kB)
// (kB floats repeated over the vector: each lane gets its own group's input). A column block
// narrower than a panel (AVX2, portable) lies in one set; its pixels come offset to that set.
template <class Isa, int kRows, int kVecs, bool kNarrow, int kFirst = 0, int kLast = kRows, int kB = 0>
__attribute__((always_inline)) inline void accumulate_steps(Vec<Isa::kLanes> (&acc)[kRows][kVecs],
                                                            const float* const (&pixel)[kRows], int64_t len,
                                                            const float* w, int64_t row_stride, int last_lanes,
                                                            const char* side_prefetch, int64_t side_rate,
                                                            int64_t step0) {
  constexpr int kLanes = Isa::kLanes;
  constexpr int kStep = kB > 0 ? 2 * kB : 1;  // floats of a pixel's run per K step
  const int64_t stride = kNarrow ? row_stride : kPanel;
  for (int64_t l = 0; l < len; ++l, w += stride) {
    // The weights stream through L1 once per tile (from L2, or L3 for the largest layers):
    // fetch them 16 K steps (~200 cycles) ahead. Worth 5% on 3x3 256->256 14x14 and 40% on
    // 512->512 7x7, whose 590 KB panels the hardware prefetcher does not bring in time.
    __builtin_prefetch(w + kPrefetchSteps * stride);
    __builtin_prefetch(w + kPrefetchSteps * stride + 16);
    // And each pixel's run two cache lines ahead, once per line: the 1x1 convolutions read
    // them straight from the input (L3), 14 streams too sparse for the hardware prefetcher
    // (+8% on 1x1 256->64 56x56; neutral where the window block is in L2).
    if ((l & 15) == 0) {
#pragma GCC unroll 16
      for (int m = kFirst; m < kLast; ++m) __builtin_prefetch(pixel[m] + l * kStep + 32);
      // The next panel's share, into L2 at an even pace (the lines of these 16 steps), so that
      // its stream from memory overlaps this panel's arithmetic instead of stalling the next
      // panel's first tile. Here with the pixel prefetches, so that the other 15 steps carry
      // no test (the 14x32 tile in L1 runs at 164-168 GFLOP/s with it as without it).
      prefetch_side_share(side_prefetch, side_rate, step0 + l);
    }
    Vec<kLanes> wv[kVecs];
    load_weight_row<Isa, kVecs, kNarrow>(w, last_lanes, wv);
#pragma GCC unroll 16
    for (int m = kFirst; m < kLast; ++m) {
      if constexpr (kB == 0) {
        const Vec<kLanes> x = Isa::broadcast(pixel[m] + l);
#pragma GCC unroll 16
        for (int v = 0; v < kVecs; ++v) acc[m][v] += x * wv[v];
      } else {
#pragma GCC unroll 16
        for (int v = 0; v < kVecs; ++v)
          acc[m][v] += Isa::template broadcast_group<kB>(pixel[m] + l * kStep + (v * kLanes / 16) * kB) * wv[v];
      }
    }
  }
}

// load_weight_row(), and with kPrefetch the row 16 steps ahead asked for (its two lines): the
// step loops' weights where they stream (TileArgs::weights_in_l2 false).
template <class Isa, int kVecs, bool kNarrow, bool kPrefetch>
__attribute__((always_inline)) inline void next_weight_row(const float* row, int64_t stride, int last_lanes,
                                                           Vec<Isa::kLanes> (&wv)[kVecs]) {
  if constexpr (kPrefetch) {
    __builtin_prefetch(row + kPrefetchSteps * stride);
    __builtin_prefetch(row + kPrefetchSteps * stride + 16);
  }
  load_weight_row<Isa, kVecs, kNarrow>(row, last_lanes, wv);
}

// One K step of accumulate() (one input float per pixel): step kU of an unrolled group, its
// pixels kU floats past pixel[m] + l and its weight row kU rows past w.
template <class Isa, int kRows, int kVecs, bool kNarrow, int kFirst, int kLast, int kU, bool kPrefetch>
__attribute__((always_inline)) inline void pointer_step(Vec<Isa::kLanes> (&acc)[kRows][kVecs],
                                                        const float* const (&pixel)[kRows], int64_t l, const float* w,
                                                        int64_t stride, int last_lanes) {
  constexpr int kLanes = Isa::kLanes;
  Vec<kLanes> wv[kVecs];
  next_weight_row<Isa, kVecs, kNarrow, kPrefetch>(w + kU * stride, stride, last_lanes, wv);
#pragma GCC unroll 16
  for (int m = kFirst; m < kLast; ++m) {
    const Vec<kLanes> x = Isa::broadcast(pixel[m] + l + kU);
#pragma GCC unroll 16
    for (int v = 0; v < kVecs; ++v) acc[m][v] += x * wv[v];
  }
}

// accumulate()'s `unrolled` steps (a multiple of 4), 4 per iteration; kPrefetch: the weight rows
// 16 steps ahead too. The weight-prefetch choice compiled into two loops rather than tested in
// every step (session 38: 4 tests and branches per 4 steps less).
template <class Isa, int kRows, int kVecs, bool kNarrow, int kFirst, int kLast, bool kPrefetch>
__attribute__((always_inline)) inline void pointer_steps(Vec<Isa::kLanes> (&acc)[kRows][kVecs],
                                                         const float* const (&pixel)[kRows], int64_t unrolled,
                                                         const float* w, int64_t stride, int last_lanes,
                                                         const char* side_prefetch, int64_t side_rate, int64_t step0) {
  for (int64_t l = 0; l < unrolled; l += 4, w += 4 * stride) {
    if ((l & 15) == 0) {
#pragma GCC unroll 16
      for (int m = kFirst; m < kLast; ++m) __builtin_prefetch(pixel[m] + l + 32);
      prefetch_side_share(side_prefetch, side_rate, step0 + l);
    }
    pointer_step<Isa, kRows, kVecs, kNarrow, kFirst, kLast, 0, kPrefetch>(acc, pixel, l, w, stride, last_lanes);
    pointer_step<Isa, kRows, kVecs, kNarrow, kFirst, kLast, 1, kPrefetch>(acc, pixel, l, w, stride, last_lanes);
    pointer_step<Isa, kRows, kVecs, kNarrow, kFirst, kLast, 2, kPrefetch>(acc, pixel, l, w, stride, last_lanes);
    pointer_step<Isa, kRows, kVecs, kNarrow, kFirst, kLast, 3, kPrefetch>(acc, pixel, l, w, stride, last_lanes);
  }
}

// accumulate_steps(), 4 K steps per iteration where a step reads one float per pixel (kB = 0):
// each pixel pointer (8 of AVX-512's 14-row tile's are reloaded from the stack) and the loop's
// induction variables, tests and pixel prefetches are paid once per 4 steps, the steps
// addressed by constant displacements: AVX-512's 14x2 tile 54 instructions per K step instead
// of 57-65. The issue slots matter: a tile's K step needs nearly all of them (docs/PERFORMANCE.md,
// session 19). Measured on the AVX2 tiles (AMD EPYC, 1 thread, cold buffers): 3x3 layers 6-14%
// faster, 1x1 layers unchanged (docs/PERFORMANCE.md, session 20).
template <class Isa, int kRows, int kVecs, bool kNarrow, int kFirst = 0, int kLast = kRows, int kB = 0>
__attribute__((always_inline)) inline void accumulate(Vec<Isa::kLanes> (&acc)[kRows][kVecs],
                                                      const float* const (&pixel)[kRows], int64_t len, const float* w,
                                                      int64_t row_stride, int last_lanes, const char* side_prefetch,
                                                      int64_t side_rate, int64_t step0, bool prefetch_weights = true) {
  if constexpr (kB > 0) {
    accumulate_steps<Isa, kRows, kVecs, kNarrow, kFirst, kLast, kB>(acc, pixel, len, w, row_stride, last_lanes,
                                                                    side_prefetch, side_rate, step0);
  } else {
    const int64_t stride = kNarrow ? row_stride : kPanel;
    const int64_t unrolled = len & ~int64_t{3};
    if constexpr (Isa::kAsmLoopMinRows > 0 && kRows >= Isa::kAsmLoopMinRows && kRows <= 6 && kVecs == 2 && !kNarrow &&
                  kFirst == 0 && kLast == kRows) {
      // AVX2's full tiles of 3-6 pixels: their assembly loop (Avx2::loop_x16), in one call; with a side share to
      // prefetch, 16 steps per call and the share between calls. The weight prefetch only where
      // the weights stream (prefetch_weights: !TileArgs::weights_in_l2; the C++ loops always
      // prefetch them).
      if (side_prefetch == nullptr) {
        Isa::template loop_x16<kRows>(acc, pixel, 0, w, unrolled / 16, unrolled % 16 / 4, prefetch_weights);
      } else {
        for (int64_t l = 0; l < unrolled; l += 16) {
          prefetch_side_share(side_prefetch, side_rate, step0 + l);
          const int64_t steps = std::min<int64_t>(16, unrolled - l);
          Isa::template loop_x16<kRows>(acc, pixel, l, w + l * kPanel, steps / 16, steps % 16 / 4, prefetch_weights);
        }
      }
      w += unrolled * kPanel;
    } else {
      if (prefetch_weights)
        pointer_steps<Isa, kRows, kVecs, kNarrow, kFirst, kLast, true>(acc, pixel, unrolled, w, stride, last_lanes,
                                                                       side_prefetch, side_rate, step0);
      else
        pointer_steps<Isa, kRows, kVecs, kNarrow, kFirst, kLast, false>(acc, pixel, unrolled, w, stride, last_lanes,
                                                                        side_prefetch, side_rate, step0);
      w += unrolled * stride;
    }
    if (unrolled == len) return;
    // The last len % 4 steps, one at a time (their loop prefetches at its first step once
    // more: hints).
    const float* rest[kRows];
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m) rest[m] = pixel[m] + unrolled;
    accumulate_steps<Isa, kRows, kVecs, kNarrow, kFirst, kLast, 0>(acc, rest, len - unrolled, w, row_stride, last_lanes,
                                                                   side_prefetch, side_rate, step0 + unrolled);
  }
}

// `steps` K steps of accumulate_affine() from bases b0, b5, b10 and weight row w; kPrefetch:
// the weight rows 16 steps ahead too (TileArgs::weights_in_l2 false).
template <class Isa, int kRows, int kVecs, bool kNarrow, int kFirst, int kLast, bool kPrefetch>
__attribute__((always_inline)) inline void affine_steps(Vec<Isa::kLanes> (&acc)[kRows][kVecs], const float* b0,
                                                        const float* b5, const float* b10, int64_t d_bytes,
                                                        int64_t d3_bytes, const float* w, int64_t stride,
                                                        int last_lanes, int64_t steps) {
  constexpr int kLanes = Isa::kLanes;
  const float* const w_end = w + steps * stride;
  for (; w != w_end; w += stride, ++b0, ++b5, ++b10) {
    Vec<kLanes> wv[kVecs];
    next_weight_row<Isa, kVecs, kNarrow, kPrefetch>(w, stride, last_lanes, wv);
#pragma GCC unroll 16
    for (int m = kFirst; m < kLast; ++m) {
      const Vec<kLanes> x = Isa::broadcast_nth(m < 5 ? b0 : m < 10 ? b5 : b10, m % 5, d_bytes, d3_bytes);
#pragma GCC unroll 16
      for (int v = 0; v < kVecs; ++v) acc[m][v] += x * wv[v];
    }
  }
}

// accumulate() for pixels evenly spaced, d floats apart (an im2win tile within one output row;
// TileArgs::pixels says so). With 14 pointers, GCC kept 14 registers' worth of pixel pointers
// and reloaded 8 of them from the stack every K step (61 instructions per 28 FMAs); here three
// moving bases (pixels 0, 5, 10) and two index registers (d and 3d, in bytes) address all of
// them (Isa::broadcast_nth: [base + k*d] for k < 5), none from the stack. ResNet-18 3-5%
// faster at 1 thread (measured, docs/PERFORMANCE.md). AVX-512's 14-row tile. The pixel
// prefetches (every 16 steps) are addressed the same way (Isa::prefetch_nth): as pointers they
// took 14 loads from the stack each time, and the 1x1 tiles ran 2-9% slower (tile_ab, Intel
// Xeon, warm and from L3, session 36).
// The K loop runs in runs of 16 steps (affine_steps), the prefetches between runs and the
// weight-prefetch choice compiled into two loops: per step only the bases' and the weight
// row's increments and one compare, 50 instructions per 28 FMAs (58 with a test of the step
// count and of prefetch_weights in every step). Session 38, Intel Xeon, 1 thread (model_ab, 3
// copies): ResNet-18 0.984, VGG-16 0.987, ResNet-50 0.985 of the time (each within its copies'
// spread, all three the same way); tile_ab warm 1.01-1.04x. Unrolled by 4 with displaced
// addresses instead (53 per 28 FMAs): 1x1 tiles 1.05-1.08x in tile_ab, but GCC renamed
// the accumulators between the unrolled steps and spilled 4-12 vectors per group: VGG-16's
// 256- and 512-channel layers 1.07-1.15x the time in the network, ResNet-18 1.05x.
template <class Isa, int kRows, int kVecs, bool kNarrow, int kFirst = 0, int kLast = kRows>
__attribute__((always_inline)) inline void accumulate_affine(Vec<Isa::kLanes> (&acc)[kRows][kVecs], const float* p0,
                                                             int64_t d, int64_t len, const float* w, int64_t row_stride,
                                                             int last_lanes, const char* side_prefetch,
                                                             int64_t side_rate, int64_t step0, bool prefetch_weights) {
  static_assert(kRows <= 15, "three bases of five pixels");
  const int64_t stride = kNarrow ? row_stride : kPanel;
  const float* b0 = p0;
  const float* b5 = p0 + 5 * d;
  const float* b10 = p0 + 10 * d;
  const int64_t d_bytes = d * int64_t{sizeof(float)}, d3_bytes = 3 * d_bytes;
  int64_t l = 0;
  if constexpr (Isa::kAffineAsmLoop && kRows == 14 && kVecs == 2 && !kNarrow && kFirst == 0 && kLast == kRows) {
    // The full tile's whole 16-step groups in assembly (Isa::affine_loop_14x2), the rest below.
    // The assembly reads and writes the accumulators in `held`, a copy: given acc's own address,
    // GCC kept acc in memory for the whole tile, and the C++ loops of the same tile (a row's
    // first and last tiles' padding pieces, the rest of 16) loaded and stored an accumulator
    // for every FMA (ResNet-18's 3x3 layers 1.15-1.7x the time).
    if (len >= 16) {
      const int64_t n16 = len / 16;
      Vec<Isa::kLanes> held[kRows][kVecs];
#pragma GCC unroll 16
      for (int m = 0; m < kRows; ++m)
#pragma GCC unroll 16
        for (int v = 0; v < kVecs; ++v) held[m][v] = acc[m][v];
      if (prefetch_weights)
        Isa::template affine_loop_14x2<true>(held, p0, d_bytes, w, n16, side_prefetch, side_rate, step0);
      else
        Isa::template affine_loop_14x2<false>(held, p0, d_bytes, w, n16, side_prefetch, side_rate, step0);
#pragma GCC unroll 16
      for (int m = 0; m < kRows; ++m)
#pragma GCC unroll 16
        for (int v = 0; v < kVecs; ++v) acc[m][v] = held[m][v];
      l = n16 * 16;
      w += l * stride;
      b0 += l;
      b5 += l;
      b10 += l;
    }
  }
  while (l < len) {
    // Every 16 steps: the pixel prefetches and the side share; then up to 16 steps with no test
    // but the loop's.
#pragma GCC unroll 16
    for (int m = kFirst; m < kLast; ++m) Isa::prefetch_nth(m < 5 ? b0 : m < 10 ? b5 : b10, m % 5, d_bytes, d3_bytes);
    prefetch_side_share(side_prefetch, side_rate, step0 + l);
    const int64_t steps = std::min<int64_t>(16, len - l);
    if (prefetch_weights)
      affine_steps<Isa, kRows, kVecs, kNarrow, kFirst, kLast, true>(acc, b0, b5, b10, d_bytes, d3_bytes, w, stride,
                                                                    last_lanes, steps);
    else
      affine_steps<Isa, kRows, kVecs, kNarrow, kFirst, kLast, false>(acc, b0, b5, b10, d_bytes, d3_bytes, w, stride,
                                                                     last_lanes, steps);
    l += steps;
    w += steps * stride;
    b0 += steps;
    b5 += steps;
    b10 += steps;
  }
}

// Vector v of a block of `cols` columns: p[0..kLanes), or the valid part of a partial last
// vector through a masked load (zeros past `cols`; nothing past it is read).
template <class Isa>
__attribute__((always_inline)) inline Vec<Isa::kLanes> load_cols(const float* p, int valid) {
  constexpr int kLanes = Isa::kLanes;
  if (valid >= kLanes) return vload<kLanes>(p);
  return valid > 0 ? Isa::load_first(p, valid) : Vec<kLanes>{};
}

// The same for a store: nothing past `cols` is written.
template <class Isa>
__attribute__((always_inline)) inline void store_cols(float* p, const Vec<Isa::kLanes>& v, int valid) {
  constexpr int kLanes = Isa::kLanes;
  if (valid >= kLanes)
    vstore<kLanes>(p, v);
  else if (valid > 0)
    Isa::store_first(p, v, valid);
}

// The first kVecs * kLanes values of bias (zeros past `cols`), or zeros without bias.
template <class Isa, int kVecs>
__attribute__((always_inline)) inline void load_bias(const TileArgs& a, Vec<Isa::kLanes> (&init)[kVecs]) {
  constexpr int kLanes = Isa::kLanes;
  for (int v = 0; v < kVecs; ++v)
    init[v] = a.bias != nullptr ? load_cols<Isa>(a.bias + v * kLanes, a.cols - v * kLanes) : Vec<kLanes>{};
}

// acc[m][v] += the residual's values of the tile (fused shortcut); a partial column block is
// read with masked loads, so that nothing past `cols` is read.
template <class Isa, int kRows, int kVecs>
__attribute__((always_inline)) inline void add_residual(const TileArgs& a, Vec<Isa::kLanes> (&acc)[kRows][kVecs]) {
  constexpr int kLanes = Isa::kLanes;
#pragma GCC unroll 16
  for (int m = 0; m < kRows; ++m) {
    const float* res = a.residual + m * a.out_stride;
#pragma GCC unroll 16
    for (int v = 0; v < kVecs; ++v) acc[m][v] += load_cols<Isa>(res + v * kLanes, a.cols - v * kLanes);
  }
}

// Adds the residual if any, clamps (fused activation) and stores the tile; a partial column
// block is written with masked stores, so that nothing past `cols` is written. (Through a
// buffer and memcpy before: a libc call per pixel row of every narrow panel's tile, 29% of
// ShuffleNet's 3 -> 24 stem at batch 8.)
//
// The arguments are read into locals first: the stores may alias `a` as far as the compiler
// knows, and it reloaded a.cols after every one of them. A full column block (every tile of
// a wide panel) takes a path without the per-vector tests.
template <class Isa, int kRows, int kVecs>
__attribute__((always_inline)) inline void store_tile(const TileArgs& a, Vec<Isa::kLanes> (&acc)[kRows][kVecs]) {
  constexpr int kLanes = Isa::kLanes;
  using V = Vec<kLanes>;
  if (a.residual != nullptr) add_residual<Isa, kRows, kVecs>(a, acc);
  const V lo = Isa::broadcast(&a.clip.lo), hi = Isa::broadcast(&a.clip.hi);
  float* const out0 = a.out;
  const int64_t out_stride = a.out_stride;
  const int cols = a.cols;
  if (cols == kVecs * kLanes) {
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m)
#pragma GCC unroll 16
      for (int v = 0; v < kVecs; ++v) {
        V r = acc[m][v];
        r = r < lo ? lo : r;  // NaN compares false and passes through, as in the other kernels
        r = r > hi ? hi : r;
        vstore<kLanes>(out0 + m * out_stride + v * kLanes, r);
      }
    return;
  }
#pragma GCC unroll 16
  for (int m = 0; m < kRows; ++m) {
    float* out = out0 + m * out_stride;
#pragma GCC unroll 16
    for (int v = 0; v < kVecs; ++v) {
      V r = acc[m][v];
      r = r < lo ? lo : r;
      r = r > hi ? hi : r;
      store_cols<Isa>(out + v * kLanes, r, cols - v * kLanes);
    }
  }
}

// Accumulators of a tile, all starting from the bias (or zero).
template <class Isa, int kRows, int kVecs>
__attribute__((always_inline)) inline void init_tile(const TileArgs& a, Vec<Isa::kLanes> (&acc)[kRows][kVecs]) {
  Vec<Isa::kLanes> init[kVecs];
  load_bias<Isa, kVecs>(a, init);
#pragma GCC unroll 16
  for (int m = 0; m < kRows; ++m)
#pragma GCC unroll 16
    for (int v = 0; v < kVecs; ++v) acc[m][v] = init[v];
}

// Lanes of the column block's last vector that hold valid channels (a narrow panel's).
template <int kLanes, int kVecs>
__attribute__((always_inline)) inline int last_vector_lanes(const TileArgs& a) {
  return a.cols - (kVecs - 1) * kLanes;
}

// accumulate() over the pixels that take part: all of them, or all but the first (skip_first)
// and/or the last (skip_last), chosen at run time among the four compiled loops.
template <class Isa, int kRows, int kVecs, bool kNarrow, int kB = 0>
__attribute__((always_inline)) inline void accumulate_some(Vec<Isa::kLanes> (&acc)[kRows][kVecs],
                                                           const float* const (&pixel)[kRows], int64_t len,
                                                           const float* w, int64_t row_stride, int last_lanes,
                                                           const char* side_prefetch, int64_t side_rate, int64_t step0,
                                                           bool skip_first, bool skip_last) {
  if (!skip_first && !skip_last) {
    accumulate<Isa, kRows, kVecs, kNarrow, 0, kRows, kB>(acc, pixel, len, w, row_stride, last_lanes, side_prefetch,
                                                         side_rate, step0);
  } else if constexpr (kRows >= 2) {
    if (!skip_last)
      accumulate<Isa, kRows, kVecs, kNarrow, 1, kRows, kB>(acc, pixel, len, w, row_stride, last_lanes, side_prefetch,
                                                           side_rate, step0);
    else if (!skip_first)
      accumulate<Isa, kRows, kVecs, kNarrow, 0, kRows - 1, kB>(acc, pixel, len, w, row_stride, last_lanes,
                                                               side_prefetch, side_rate, step0);
    else if constexpr (kRows >= 3)
      accumulate<Isa, kRows, kVecs, kNarrow, 1, kRows - 1, kB>(acc, pixel, len, w, row_stride, last_lanes,
                                                               side_prefetch, side_rate, step0);
  }
  // (One pixel that sits out: nothing to do. The side prefetch of such a run is skipped too;
  // it is a hint.)
}

// accumulate_some() for affine pixels (accumulate_affine).
template <class Isa, int kRows, int kVecs, bool kNarrow>
__attribute__((always_inline)) inline void accumulate_some_affine(Vec<Isa::kLanes> (&acc)[kRows][kVecs],
                                                                  const float* p0, int64_t d, int64_t len,
                                                                  const float* w, int64_t row_stride, int last_lanes,
                                                                  const char* side_prefetch, int64_t side_rate,
                                                                  int64_t step0, bool skip_first, bool skip_last,
                                                                  bool prefetch_weights) {
  if (!skip_first && !skip_last) {
    accumulate_affine<Isa, kRows, kVecs, kNarrow, 0, kRows>(acc, p0, d, len, w, row_stride, last_lanes, side_prefetch,
                                                            side_rate, step0, prefetch_weights);
  } else if (!skip_last) {
    accumulate_affine<Isa, kRows, kVecs, kNarrow, 1, kRows>(acc, p0, d, len, w, row_stride, last_lanes, side_prefetch,
                                                            side_rate, step0, prefetch_weights);
  } else if (!skip_first) {
    accumulate_affine<Isa, kRows, kVecs, kNarrow, 0, kRows - 1>(acc, p0, d, len, w, row_stride, last_lanes,
                                                                side_prefetch, side_rate, step0, prefetch_weights);
  } else {
    accumulate_affine<Isa, kRows, kVecs, kNarrow, 1, kRows - 1>(acc, p0, d, len, w, row_stride, last_lanes,
                                                                side_prefetch, side_rate, step0, prefetch_weights);
  }
}

// A group-set tile's lanes in channel order, stored (group_sets.h: kB groups per set, lane
// o*kB + h holds channel h*Cog + o). AVX-512: each vector is one set, permuted in its register,
// then the usual store (residual, clamp, partial last block). A narrower vector holds part
// of a set, whose channels are spread over the whole set: those lanes go out one by one to
// a.out (the set's first channel) + their channel, for the channels below a.cols (absent
// groups' lanes are dropped); a.set_lane0 is the block's first lane in its set.
// A set's 16 lanes held by two 8-lane vectors, (lo, hi), put in channel order: channel ch is
// lane lane_of(ch) of the pair (group_sets.h). Two two-register shuffles.
template <int kB, int... kI>
__attribute__((always_inline)) inline void permute_set_pair(Vec<8>& lo, Vec<8>& hi, std::integer_sequence<int, kI...>) {
  constexpr int kCog = 16 / kB;
  const Vec<8> first = __builtin_shufflevector(lo, hi, (kI % kCog * kB + kI / kCog)...);
  const Vec<8> second = __builtin_shufflevector(lo, hi, ((kI + 8) % kCog * kB + (kI + 8) / kCog)...);
  lo = first;
  hi = second;
}

template <class Isa, int kRows, int kVecs, int kB>
__attribute__((always_inline)) inline void store_set_tile(const TileArgs& a, Vec<Isa::kLanes> (&acc)[kRows][kVecs]) {
  constexpr int kLanes = Isa::kLanes;
  if constexpr (kLanes == 16) {
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m)
#pragma GCC unroll 16
      for (int v = 0; v < kVecs; ++v) acc[m][v] = Isa::template permute_set<kB>(acc[m][v]);
    store_tile<Isa, kRows, kVecs>(a, acc);
  } else if constexpr (kLanes == 8 && kVecs == 2) {
    // AVX2: the block is one whole set (a.set_lane0 = 0, a.out its first channel), permuted
    // in registers; lane by lane (below) its stores and clamps cost more than the tile's FMAs.
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m) permute_set_pair<kB>(acc[m][0], acc[m][1], std::make_integer_sequence<int, 8>{});
    store_tile<Isa, kRows, kVecs>(a, acc);
  } else {
    constexpr int kCog = 16 / kB;
    float lanes[kVecs * kLanes];
    for (int m = 0; m < kRows; ++m) {
      for (int v = 0; v < kVecs; ++v) vstore<kLanes>(lanes + v * kLanes, acc[m][v]);
      float* out = a.out + m * a.out_stride;
      const float* res = a.residual != nullptr ? a.residual + m * a.out_stride : nullptr;
      for (int j = 0; j < kVecs * kLanes; ++j) {
        const int lane = a.set_lane0 + j, channel = (lane % kB) * kCog + lane / kB;
        if (channel >= a.cols) continue;
        float r = lanes[j];
        if (res != nullptr) r += res[channel];
        r = r < a.clip.lo ? a.clip.lo : r;  // NaN compares false and passes through
        r = r > a.clip.hi ? a.clip.hi : r;
        out[channel] = r;
      }
    }
  }
}

// Every line of the bytes [0, last] of kRows rows `stride` bytes apart from `base`, by the
// offsets 0, 64, ... below kBytes (clamped to `last`) and `last` itself; kWrite: the hint's
// write intent (__builtin_prefetch takes it as a constant).
// Addresses as integers: the rows may lie past the buffer's end (the next tile of a run's last),
// where pointer arithmetic would be undefined; a prefetch of any address is only a hint.
template <int kRows, int kBytes, int kWrite>
__attribute__((always_inline)) inline void prefetch_rows(uintptr_t base, int64_t stride, int64_t last) {
#pragma GCC unroll 16
  for (int m = 0; m < kRows; ++m) {
    const uintptr_t row = base + static_cast<uintptr_t>(m * stride);
#pragma GCC unroll 4
    for (int off = 0; off < kBytes; off += 64) {
      // Not std::min: it returns a reference, and GCC kept each offset in a stack slot it stored
      // and reloaded for every line (~800 such stores in the library; `perf` put a third of a
      // 27-step stem tile's samples around them, but whole networks measured the same, 0.98-1.02,
      // session 25: the stores were not what that tile waits for).
      const int64_t clamped = off < last ? int64_t{off} : last;
      __builtin_prefetch(reinterpret_cast<const void*>(row + static_cast<uintptr_t>(clamped)), kWrite, 3);
    }
    __builtin_prefetch(reinterpret_cast<const void*>(row + static_cast<uintptr_t>(last)), kWrite, 3);
  }
}

// The tile's output lines, and its residual's, asked for when the tile starts. In a network
// (and at batch 8) the output was last touched an inference ago and is out of L2; without this
// each store of the epilogue waited for its line from L3, and each residual load stalled it.
// Measured against oneDNN on the same cold buffers (1 thread, in turn in one process): 1x1
// 64->256 56x56, whose tiles are only 64 K steps, 0.63x -> 0.82x oneDNN's speed (0.54x -> 0.68x
// with a residual); long-K 3x3 layers +1-2%; ResNet-50 and ResNet-18 whole, 2% faster. In
// flight while the K loop runs; PREFETCHW where the ISA has it (AVX-512), so that the stores
// find their lines owned.
// Since session 22 the lines asked for are those of the *next* tile of the same column block
// (the kRows pixels after this tile's: what the next call of an output row's tiles, or of a
// panel's, writes), so that a short tile (1x1 layers of 16-96 K steps: 100-600 cycles, less than
// a line's trip from L3) does not wait for its own: tile_ab from L3, K = 16, Co = 96, 1.09-1.13x
// faster; K = 32-96 and ResNet's shapes 0.98-1.03; whole networks within noise. A run's first
// tile finds its lines as the loads find them; past a run's last pixel the hints are wasted.
template <int kRows, int kBytes>
__attribute__((always_inline)) inline void prefetch_tile_output(const TileArgs& a) {
  // Every line of a row's [0, bytes) by its offsets 0, 64, ... below kBytes (the widest block,
  // clamped to the row's last byte: nothing past it is asked for, in write intent least of all)
  // and its last byte: no loop and no branch on the alignment (the loop this replaced, a row
  // of 64 bytes spanning one line or two, cost 1x1 tiles of 64 K steps 3-7%: tile_ab, session 22).
  const int64_t last = static_cast<int64_t>(a.cols) * int64_t{sizeof(float)} - 1;
  const int64_t stride = a.out_stride * int64_t{sizeof(float)};
  const uintptr_t next = static_cast<uintptr_t>(kRows * stride);  // the next tile's rows
  prefetch_rows<kRows, kBytes, /*kWrite=*/1>(reinterpret_cast<uintptr_t>(a.out) + next, stride, last);
  if (a.residual != nullptr)
    prefetch_rows<kRows, kBytes, /*kWrite=*/0>(reinterpret_cast<uintptr_t>(a.residual) + next, stride, last);
}

// One tile: kRows pixels x kVecs vectors of output channels. kB > 0: of group sets
// (group_sets.h): the bias comes in lane order (a whole block, never null), the pixels
// offset by a.pixel_offset to the block's set, and a K step reads 2 * kB floats.
template <class Isa, int kRows, int kVecs, bool kNarrow, int kB>
__attribute__((always_inline)) inline void tile_once(const TileArgs& a) {
  constexpr int kStep = kB > 0 ? 2 * kB : 1;
  Vec<Isa::kLanes> acc[kRows][kVecs];
  prefetch_tile_output<kRows, kVecs * Isa::kLanes * 4>(a);
  if constexpr (kB == 0) {
    init_tile<Isa, kRows, kVecs>(a, acc);
  } else {
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m)
#pragma GCC unroll 16
      for (int v = 0; v < kVecs; ++v) acc[m][v] = vload<Isa::kLanes>(a.bias + v * Isa::kLanes);
  }
  const int last_lanes = last_vector_lanes<Isa::kLanes, kVecs>(a);
  const float* pixel[kRows];
  const int64_t offset = kB > 0 ? a.pixel_offset : 0;
  // Pixels evenly spaced (a tile within one output row): accumulate_affine. AVX-512's main tile.
  constexpr bool kMayBeAffine = kB == 0 && kRows == 14 && Isa::kLanes == 16;
  bool affine = false;
  int64_t d = 0;
  if constexpr (kMayBeAffine) {
    d = a.pixels[1] - a.pixels[0];
    affine = true;
#pragma GCC unroll 16
    for (int m = 2; m < kRows; ++m) affine &= a.pixels[m] - a.pixels[0] == m * d;
  }
  if (a.skip_first == 0 && a.skip_last == 0) {
    for (int64_t s = 0; s < a.segments; ++s) {
      if constexpr (kMayBeAffine) {
        if (affine) {
          accumulate_affine<Isa, kRows, kVecs, kNarrow>(acc, a.pixels[0] + s * a.seg_stride, d, a.seg_len,
                                                        a.weights + s * a.w_seg_stride, a.w_row_stride, last_lanes,
                                                        a.prefetch, a.prefetch_rate, s * a.seg_len, !a.weights_in_l2);
          continue;
        }
      }
#pragma GCC unroll 16
      for (int m = 0; m < kRows; ++m) pixel[m] = a.pixels[m] + s * a.seg_stride + offset;
      accumulate<Isa, kRows, kVecs, kNarrow, 0, kRows, kB>(acc, pixel, a.seg_len, a.weights + s * a.w_seg_stride,
                                                           a.w_row_stride, last_lanes, a.prefetch, a.prefetch_rate,
                                                           s * a.seg_len, !a.weights_in_l2);
    }
  } else {
    // K steps [0, skip_first) without the first pixel, [k - skip_last, k) without the last:
    // each segment cut at those two steps into runs that the same pixels take part in.
    const int64_t stride = kNarrow ? a.w_row_stride : kPanel;
    const int64_t first_end = a.skip_first, last_begin = a.segments * a.seg_len - a.skip_last;
    for (int64_t s = 0; s < a.segments; ++s) {
      const int64_t k0 = s * a.seg_len, k1 = k0 + a.seg_len;
      int64_t cut[4] = {k0, std::clamp(first_end, k0, k1), std::clamp(last_begin, k0, k1), k1};
      if (cut[1] > cut[2]) std::swap(cut[1], cut[2]);
      for (int piece = 0; piece < 3; ++piece) {
        const int64_t lo = cut[piece], hi = cut[piece + 1];
        if (hi <= lo) continue;
#pragma GCC unroll 16
        for (int m = 0; m < kRows; ++m) pixel[m] = a.pixels[m] + s * a.seg_stride + (lo - k0) * kStep + offset;
        if constexpr (kMayBeAffine) {
          if (affine) {
            accumulate_some_affine<Isa, kRows, kVecs, kNarrow>(
                acc, a.pixels[0] + s * a.seg_stride + (lo - k0), d, hi - lo,
                a.weights + s * a.w_seg_stride + (lo - k0) * stride, a.w_row_stride, last_lanes, a.prefetch,
                a.prefetch_rate, lo, lo < first_end, lo >= last_begin, !a.weights_in_l2);
            continue;
          }
        }
        accumulate_some<Isa, kRows, kVecs, kNarrow, kB>(
            acc, pixel, hi - lo, a.weights + s * a.w_seg_stride + (lo - k0) * stride, a.w_row_stride, last_lanes,
            a.prefetch, a.prefetch_rate, lo, lo < first_end, lo >= last_begin);
      }
    }
  }
  if constexpr (kB > 1)
    store_set_tile<Isa, kRows, kVecs, kB>(a, acc);
  else
    store_tile<Isa, kRows, kVecs>(a, acc);
}

// tile_once() for each of a.tiles tiles (TileArgs::tiles), its body inlined once: the later
// tiles read a copy of the arguments with their pixels and outputs moved on.
template <class Isa, int kRows, int kVecs, bool kNarrow = false, int kB = 0>
void tile(const TileArgs& a) {
  const TileArgs* cur = &a;
  TileArgs moved_args;
  const float* moved[kRows];
  for (int64_t t = 0;;) {
    tile_once<Isa, kRows, kVecs, kNarrow, kB>(*cur);
    if (++t >= a.tiles) return;
    if (t == 1) {
      moved_args = a;
      moved_args.pixels = moved;
      cur = &moved_args;
    }
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m) moved[m] = a.pixels[m] + t * a.tile_pixel_step;
    moved_args.out = a.out + t * a.tile_out_step;
    if (a.residual != nullptr) moved_args.residual = a.residual + t * a.tile_out_step;
  }
}

// The same tile for the indirect convolution: segment s of pixel m starts at
// a.pixels[s * a.pixels_stride + m] + a.pixel_offset (a tap's input pixel, or the zero vector).
template <class Isa, int kRows, int kVecs, bool kNarrow = false>
void indirect_tile(const TileArgs& a) {
  Vec<Isa::kLanes> acc[kRows][kVecs];
  prefetch_tile_output<kRows, kVecs * Isa::kLanes * 4>(a);
  init_tile<Isa, kRows, kVecs>(a, acc);
  const int last_lanes = last_vector_lanes<Isa::kLanes, kVecs>(a);
  const float* pixel[kRows];
  const float* const* taps = a.pixels;
  for (int64_t s = 0; s < a.segments; ++s, taps += a.pixels_stride) {
#pragma GCC unroll 16
    for (int m = 0; m < kRows; ++m) pixel[m] = taps[m] + a.pixel_offset;
    accumulate<Isa, kRows, kVecs, kNarrow>(acc, pixel, a.seg_len, a.weights + s * a.w_seg_stride, a.w_row_stride,
                                           last_lanes, a.prefetch, a.prefetch_rate, s * a.seg_len, !a.weights_in_l2);
  }
  store_tile<Isa, kRows, kVecs>(a, acc);
}

// The entry points of one tile shape, for an ISA's table (make_tile_kernels).
template <class Isa, int kRows, int kVecs>
struct TileEntries {
  static void run(const TileArgs& a) { tile<Isa, kRows, kVecs>(a); }
  static void run_indirect(const TileArgs& a) { indirect_tile<Isa, kRows, kVecs>(a); }
  static void run_narrow(const TileArgs& a) { tile<Isa, kRows, kVecs, true>(a); }
  static void run_indirect_narrow(const TileArgs& a) { indirect_tile<Isa, kRows, kVecs, true>(a); }
  template <int kB>
  static void run_sets(const TileArgs& a) {
    tile<Isa, kRows, kVecs, false, kB>(a);
  }
};

}  // namespace
}  // namespace cpu
}  // namespace winfer
