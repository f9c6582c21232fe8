// "winograd": Winograd's minimal filtering F(6x6, 3x3), F(4x4, 3x3) and F(2x2, 3x3) for 3x3
// stride-1 convolutions (Lavin and Gray, 2016). Each m x m block of output pixels ("tile") is
// computed from an n x n input patch (n = m + 2) with n^2 multiplications per (input channel,
// output channel) instead of 9 m^2: F(2x2) 16 for 4 pixels (2.25x fewer multiply-adds than every
// other algorithm here, which run at 80-90% of the FMA peak on these layers and so cannot get
// faster any other way), F(4x4) 36 for 16 pixels (4x fewer), F(6x6) 64 for 36 (5.1x fewer).
//
//   V = B^T d B    (input patch d, n x n, per channel)     the input transform
//   U = G g G^T    (kernel g, 3x3, per output x input)     the weight transform (at packing)
//   M = sum_c U (.) V    for each of the n^2 positions xi: n^2 GEMMs  [tiles x C] x [C x Co]
//   Y = A^T M A    (m x m outputs)                         the output transform, + bias,
//                                                          residual, activation
//
// Interpolation points. F(6x6) evaluates at 0, +-1, +-2, +-1/2 and infinity (Lavin and Gray's
// set; the pairs share the even and odd halves of each sum, see Wino<6>). F(4x4) evaluates at 0,
// 1, -1, 1/2, -2 and infinity, a subset: against the
// symmetric 0, +-1, +-2 (Lavin and Gray) or 0, +-1, +-1/2, the mixed pair 1/2, -2 halves the
// rounding error (measured in float32 over 2000 random tiles of 256 channels: max error / sum of
// |terms| 2.6e-7 against 5.9e-7, inputs in [0, 1] as after a ReLU; Barabasz et al., "Error
// analysis and improving the accuracy of Winograd convolution", 2020, reach the same choice).
// F(2x2) evaluates at 0, 1, -1, infinity: a subset, and G's rows for those four points are the
// same in both (scaled so that they are F(2x2)'s usual [1 0 0], [1 1 1]/2, [1 -1 1]/2, [0 0 1]),
// so one packed U serves every tile size: F(2x2) reads 16 of its 64 positions, F(4x4) 36. The
// other rows are scaled so that B^T has small integer entries where it can (exact products); the
// 1/3 of the points +-1 that F(4x4)'s Lagrange denominators bring stays in B^T's rows 1 and 2.
//
//        [1 -3/2  -2  3/2    1 0]         [1     0    0]        [1 1  1   1  1 0]
//        [0 -2/3 1/3  5/3  2/3 0]         [1/2 1/2  1/2]  A^T = [0 1 -1 1/2 -2 0]
//  B^T = [0 -2/3 5/3 -1/3 -2/3 0]    G =  [1/2 -1/2 1/2]        [0 1  1 1/4  4 0]
//        [0    2   1   -2   -1 0]         [16/15 8/15 4/15]     [0 1 -1 1/8 -8 1]
//        [0    1  -2   -1    2 0]         [1/30 -1/15 2/15]
//        [0    1 -3/2  -2  3/2 1]         [0     0    1]
//
// F(6x6)'s own B^T (G's rows for 2 and -1/2 scaled so that each +- pair's rows are s + t and
// s - t; Wino<6> computes each row as exact small-integer terms times one factor, 4/9, 1/3 or
// 1/12: fewer roundings than each coefficient rounded); A^T has powers of 2 up to 32:
//
//        [1    0 -21/4     0  21/4    0   -1 0]     (columns: d0 .. d7; rows: the points 0, 1,
//        [0 -4/9  -4/9  17/9  17/9 -4/9 -4/9 0]      -1, 1/2, -2, 2, -1/2, infinity)
//        [0  4/9  -4/9 -17/9  17/9  4/9 -4/9 0]
//  B^T = [0  4/3   8/3  -5/3 -10/3  1/3  2/3 0]     G's rows for 2 and -1/2:
//        [0 -1/6  1/12   5/6 -5/12 -2/3  1/3 0]       [1/30 1/15 2/15], [16/15 -8/15 4/15]
//        [0  1/6  1/12  -5/6 -5/12  2/3  1/3 0]
//        [0 -4/3   8/3   5/3 -10/3 -1/3  2/3 0]
//        [0   -1     0  21/4     0 -21/4   0 1]
//
// Tile size per layer (winograd_tile): F(4x4) unless its tiles waste much on the edges, are few,
// or its U streams from memory for few of them (see kMinF4Tiles), where F(2x2) is faster; and
// F(6x6) where F(4x4) would run on outputs of 28x28 and more with 64 channels or more (see
// kF6Share). The packed weights do not depend on the choice (packing never depends on the batch
// or the spatial size), so a session at another batch or input size may pick another tile with
// the same U.
//
// The GEMMs are the convolution micro-kernel's (ukernel_conv.h) over a block of T tiles: A rows
// are V[xi][tile] (C contiguous floats), the weights U[xi] packed in panels of 32 output
// channels [xi][panel][C][32], exactly the layout the micro-kernel streams. Tiles are taken in
// blocks (4 micro-kernel calls: V and M of a block in L2 for F(2x2)'s usual shapes); the
// threads transform disjoint tiles, compute disjoint (xi, panel) pairs, and meet at a barrier in
// between. Each output element is computed the same way whatever the thread count (bitwise).
//
// Precision: the transforms add up to 4 (F(2x2)), 6 (F(4x4)) or 8 (F(6x6)) inputs with
// coefficients up to 8 (32 for F(6x6)), so the error bound is a few (F(2x2)), some tens (F(4x4))
// or a few hundred (F(6x6)) times a direct sum's (winograd_test.cpp measures all three against
// float64; docs/PERFORMANCE.md has the zoo's parity).
//
// Weights: 64/9 of the OIHW size (U has 64 values per 3x3 kernel), not unpackable (the
// transform is not a permutation): a model packed for another algorithm keeps serving this one
// through unpack + pack. Workspace: one block's V and M (each position padded to an odd number
// of cache lines, position_stride), plus a zero row for the padding.
#include "kernels/cpu/conv_winograd.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_conv.h"

namespace winfer {
namespace cpu {
namespace {

// Packed positions: 8x8, the points in the order 0, 1, -1, 1/2, -2, 2, -1/2, infinity. Each tile
// size reads the positions of its own points (Wino<m>::kPoint).
constexpr int kPackedPoints = 8;
constexpr int64_t kPackedPositions = kPackedPoints * kPackedPoints;

// The transforms of F(m x m, 3x3), one dimension at a time (the 2D transforms apply them to the
// columns, then to the rows). V is a Vec or a float (the channel tail).
template <int kM>
struct Wino;

template <>
struct Wino<2> {
  static constexpr int kN = 4;
  // The packed point of each of F(2x2)'s points 0, 1, -1, infinity.
  static constexpr int kPoint[kN] = {0, 1, 2, 7};
  template <class V>
  static WINFER_ALWAYS_INLINE void input(const V (&d)[kN], V (&r)[kN]) {
    r[0] = d[0] - d[2];
    r[1] = d[1] + d[2];
    r[2] = d[2] - d[1];
    r[3] = d[1] - d[3];
  }
  template <class V>
  static WINFER_ALWAYS_INLINE void output(const V (&m)[kN], V (&y)[2]) {
    y[0] = m[0] + m[1] + m[2];
    y[1] = m[1] - m[2] - m[3];
  }
};

template <>
struct Wino<4> {
  static constexpr int kN = 6;
  // The packed point of each of F(4x4)'s points 0, 1, -1, 1/2, -2, infinity.
  static constexpr int kPoint[kN] = {0, 1, 2, 3, 4, 7};
  template <class V>
  static WINFER_ALWAYS_INLINE void input(const V (&d)[kN], V (&r)[kN]) {
    const V p = d[1] - d[3], q = d[2] - d[4];
    r[0] = (d[0] + d[4]) - 2.f * d[2] - 1.5f * p;
    r[1] = (1.f / 3.f) * d[2] + (5.f / 3.f) * d[3] - (2.f / 3.f) * (d[1] - d[4]);
    r[2] = (5.f / 3.f) * d[2] - (1.f / 3.f) * d[3] - (2.f / 3.f) * (d[1] + d[4]);
    r[3] = 2.f * p + q;
    r[4] = p - 2.f * q;
    r[5] = (d[1] + d[5]) - 2.f * d[3] - 1.5f * q;
  }
  template <class V>
  static WINFER_ALWAYS_INLINE void output(const V (&m)[kN], V (&y)[4]) {
    const V a = m[1] + m[2], b = m[1] - m[2];
    y[0] = (m[0] + a) + (m[3] + m[4]);
    y[1] = b + 0.5f * m[3] - 2.f * m[4];
    y[2] = a + 0.25f * m[3] + 4.f * m[4];
    y[3] = (b + 0.125f * m[3] - 8.f * m[4]) + m[5];
  }
};

// F(6x6) at the packed points themselves. The pairs +-1, (1/2, -1/2) and (2, -2) share the
// even and odd halves of their sums (s +- t), which is what the scaling of G's rows for 2 and
// -1/2 is chosen for (1/2 and -2 keep F(4x4)'s scaling: one U for every tile).
template <>
struct Wino<6> {
  static constexpr int kN = 8;
  static constexpr int kPoint[kN] = {0, 1, 2, 3, 4, 5, 6, 7};
  template <class V>
  static WINFER_ALWAYS_INLINE void input(const V (&d)[kN], V (&r)[kN]) {
    r[0] = (d[0] - d[6]) + 5.25f * (d[4] - d[2]);
    r[7] = (d[7] - d[1]) + 5.25f * (d[3] - d[5]);
    const V s1 = 4.25f * d[4] - (d[2] + d[6]), t1 = 4.25f * d[3] - (d[1] + d[5]);
    r[1] = (4.f / 9.f) * (s1 + t1);
    r[2] = (4.f / 9.f) * (s1 - t1);
    const V s3 = (8.f * d[2] - 10.f * d[4]) + 2.f * d[6], t3 = (4.f * d[1] - 5.f * d[3]) + d[5];
    r[3] = (1.f / 3.f) * (s3 + t3);
    r[6] = (1.f / 3.f) * (s3 - t3);
    const V s5 = (d[2] - 5.f * d[4]) + 4.f * d[6], t5 = (2.f * d[1] - 10.f * d[3]) + 8.f * d[5];
    r[5] = (1.f / 12.f) * (s5 + t5);
    r[4] = (1.f / 12.f) * (s5 - t5);
  }
  template <class V>
  static WINFER_ALWAYS_INLINE void output(const V (&m)[kN], V (&y)[6]) {
    const V a1 = m[1] + m[2], b1 = m[1] - m[2];
    const V a2 = m[5] + m[4], b2 = m[5] - m[4];
    const V a3 = m[3] + m[6], b3 = m[3] - m[6];
    y[0] = (m[0] + a1) + (a2 + a3);
    y[1] = b1 + 2.f * b2 + 0.5f * b3;
    y[2] = a1 + 4.f * a2 + 0.25f * a3;
    y[3] = b1 + 8.f * b2 + 0.125f * b3;
    y[4] = a1 + 16.f * a2 + 0.0625f * a3;
    y[5] = (b1 + 32.f * b2 + 0.03125f * b3) + m[7];
  }
};

// G's rows, one per packed point (the kernel's 3 taps -> the point's value).
constexpr double kG[kPackedPoints][3] = {{1, 0, 0},
                                         {0.5, 0.5, 0.5},
                                         {0.5, -0.5, 0.5},
                                         {16.0 / 15, 8.0 / 15, 4.0 / 15},
                                         {1.0 / 30, -1.0 / 15, 2.0 / 15},
                                         {1.0 / 30, 1.0 / 15, 2.0 / 15},
                                         {16.0 / 15, -8.0 / 15, 4.0 / 15},
                                         {0, 0, 1}};

// winograd_tile's rule, measured per layer (1 thread, docs/PERFORMANCE.md, "Winograd F(4x4)"):
// F(4x4) where
// - its multiplies, the edges' included, are at most 3/4 of F(2x2)'s (36 x its tiles against 16 x
//   F(2x2)'s): outputs of 9x9 and 10x10 (F(4x4) computes 12x12) ran at 0.8-0.9x F(2x2)'s speed
//   at batch 1 and 8, 11x11 and more at 1.0-1.4x;
// - it has kMinF4Tiles tiles or more (7x7 and 8x8 at batch 1, 4 tiles, ran at 0.8-0.87x: GEMMs of
//   4 rows; at batch 8, 32 tiles, at 1.1-1.4x).
// Whether U (2.25x F(2x2)'s share) streams from memory does not change the choice: F(4x4) reads
// it once per block as F(2x2) reads its own, for fewer multiplies. ResNet's 7x7 512 -> 512 (U
// 37.7 MB) ran at 1.18x F(2x2)'s speed at batch 2 (8 tiles) and 1.57x at batch 8, VGG's 14x14
// 512 -> 512 at batch 1 (16 tiles) at 1.07x (0.95x on 2 threads); until session 33 this rule
// wanted 42 tiles there, from measurements before the blocks were evened out and U prefetched.
constexpr int64_t kMinF4Tiles = 8;
// F(6x6) where F(4x4) would run and
// - its multiplies, the edges' included, are at most kF6Share of F(4x4)'s (64 x its tiles
//   against 36 x F(4x4)'s): outputs of 28x28 and more (0.91), not 14x14 (1.0: 0.83-0.90x F(4x4)'s
//   speed);
// - it has kMinF6Tiles tiles or more;
// - its U in L2 or streamed from memory alike (ResNet's 28x28 128 -> 128 at batch 1, 25 tiles
//   streaming 4 MiB of U, ran at 1.05-1.07x F(4x4)'s speed on 1 and 2 threads);
// - its transforms weigh little against its GEMMs: they scale with C + Co, the GEMMs with C x Co,
//   and (C + Co) / (C x Co) <= 1/32 (64 -> 64 and up). DenseNet's 128 -> 32 at 28x28 ran at 0.92x
//   F(4x4)'s speed, ResNet's 64 -> 64 at 56x56 0.97x at batch 1 and 1.08x at batch 8, VGG's
//   layers 1.02-1.20x (docs/PERFORMANCE.md, session 32).
constexpr double kF6Share = 0.92;
constexpr int64_t kMinF6Tiles = 8;

// A vector of W floats, or one float (the channel tail), with the same spelling.
template <int W>
struct Lane {
  using V = Vec<W>;
  static WINFER_ALWAYS_INLINE V ld(const float* p) { return load<W>(p); }
  static WINFER_ALWAYS_INLINE void st(float* p, const V& v) { store<W>(p, v); }
  static WINFER_ALWAYS_INLINE V splat(float x) { return broadcast<W>(x); }
};
template <>
struct Lane<1> {
  using V = float;
  static WINFER_ALWAYS_INLINE float ld(const float* p) { return *p; }
  static WINFER_ALWAYS_INLINE void st(float* p, float v) { *p = v; }
  static WINFER_ALWAYS_INLINE float splat(float x) { return x; }
};

struct Geometry {
  Geometry(const ConvParams& p, int tile)
      : m(tile),
        n(tile + 2),
        positions(int64_t{n} * n),
        ho(p.out_h()),
        wo(p.out_w()),
        tiles_h(ceil_div(ho, int64_t{m})),
        tiles_w(ceil_div(wo, int64_t{m})),
        tiles(p.batch * tiles_h * tiles_w),
        panels(ceil_div(p.out_channels, kPanel)) {}
  int m, n;
  int64_t positions, ho, wo, tiles_h, tiles_w, tiles, panels;
};

// Tiles per block: at most 4 micro-kernel calls of the kernel's MR rows (run() evens the blocks
// out). With weights that stream, U is read from memory once per block: ResNet's and VGG's 28x28
// layers (49 tiles of F(4x4) at batch 1) read it once. V and M of a block are 36 x 56 x (C + Co)
// floats for F(4x4) (8.3 MB for 512 -> 512, mostly in L3: a GEMM touches one position's 115 KB
// of V), 64 x 56 x (C + Co) for F(6x6) (14.7 MB).
constexpr int64_t kBlockCalls = 4;
int64_t block_tiles(const TileKernels& uk) { return kBlockCalls * uk.max_rows; }
// The most tiles of any ISA's block, which sizes the workspace (it cannot depend on the ISA
// picked at run time, which tests may lower).
constexpr int64_t kMaxBlockTiles = kBlockCalls * kMaxTileRows;

// Floats from one position of V (or M) to the next: a block's rows, rounded up to an odd number of
// cache lines. The input transform stores a tile's n^2 positions (and the output transform loads
// them) one position apart; at a multiple of 2 KiB apart (56 tiles x 64 channels: 14336 bytes)
// all 64 of F(6x6) fall into two L1 sets of 16 ways and evict each other, an odd number of lines
// spreads them over n^2 sets.
int64_t position_stride(int64_t block, int64_t channels) {
  const int64_t lines = ceil_div(block * channels, int64_t{16});
  return (lines | 1) * 16;
}

// The packed position of position xi of a tile x tile transform.
template <int kM>
int64_t packed_position(int64_t xi) {
  constexpr int n = Wino<kM>::kN;
  return kPackedPoints * Wino<kM>::kPoint[xi / n] + Wino<kM>::kPoint[xi % n];
}
int64_t packed_position(int tile, int64_t xi) {
  switch (tile) {
    case 2: return packed_position<2>(xi);
    case 4: return packed_position<4>(xi);
    default: return packed_position<6>(xi);
  }
}

// V = B^T d B for channels [c, c + W) of one tile: d[i][j] read through row pointers (the zero
// row where the patch lies in the padding), V[xi] written xi_stride floats apart.
template <int kM, int W>
WINFER_ALWAYS_INLINE inline void input_transform_lanes(const float* const (&d)[Wino<kM>::kN][Wino<kM>::kN], int64_t c,
                                                       float* v, int64_t xi_stride) {
  constexpr int n = Wino<kM>::kN;
  using L = Lane<W>;
  using V = typename L::V;
  V t[n][n];
  for (int j = 0; j < n; ++j) {
    V col[n], r[n];
    for (int i = 0; i < n; ++i) col[i] = L::ld(d[i][j] + c);
    Wino<kM>::input(col, r);
    for (int i = 0; i < n; ++i) t[i][j] = r[i];
  }
  for (int i = 0; i < n; ++i) {
    V r[n];
    Wino<kM>::input(t[i], r);
    float* row = v + n * i * xi_stride + c;
    for (int k = 0; k < n; ++k) L::st(row + k * xi_stride, r[k]);
  }
}

// Y = A^T M A (+ bias, residual, clamp) for output channels [o, o + W) of one tile; out[i][j] is
// null for output pixels past the edge.
template <int kM, int W>
WINFER_ALWAYS_INLINE inline void output_transform_lanes(const float* m, int64_t xi_stride, int64_t o,
                                                        float* const (&out)[kM][kM], const float* const (&res)[kM][kM],
                                                        const float* bias, Clamp clip) {
  constexpr int n = Wino<kM>::kN;
  using L = Lane<W>;
  using V = typename L::V;
  V s[kM][n];
  for (int j = 0; j < n; ++j) {
    V col[n], y[kM];
    for (int i = 0; i < n; ++i) col[i] = L::ld(m + (n * i + j) * xi_stride + o);
    Wino<kM>::output(col, y);
    for (int i = 0; i < kM; ++i) s[i][j] = y[i];
  }
  const V b = bias != nullptr ? L::ld(bias + o) : L::splat(0.f);
  const V lo = L::splat(clip.lo), hi = L::splat(clip.hi);
  for (int i = 0; i < kM; ++i) {
    V y[kM];
    Wino<kM>::output(s[i], y);
    for (int j = 0; j < kM; ++j) {
      if (out[i][j] == nullptr) continue;
      V r = y[j] + b;
      if (res[i][j] != nullptr) r += L::ld(res[i][j] + o);
      r = r < lo ? lo : r;  // NaN passes through, as in the other kernels
      r = r > hi ? hi : r;
      L::st(out[i][j] + o, r);
    }
  }
}

// Everything one run() needs, shared by the threads of its team.
struct Job {
  const ConvParams* p;
  const Geometry* geo;
  const TileKernels* uk;
  const float* input;
  const float* packed;
  const float* bias;
  const float* residual;
  float* output;
  float* v;            // [positions][T][C], positions v_stride floats apart
  float* m;            // [positions][T][Co], positions m_stride floats apart
  const float* zeros;  // C zero floats
  Clamp clip;
  int64_t block;  // T
  int64_t v_stride, m_stride;
};

// Tile g (over the batch) -> image n, tile row th, tile column tw.
struct TilePos {
  int64_t n, th, tw;
};
inline TilePos tile_pos(const Geometry& geo, int64_t g) {
  return {g / (geo.tiles_h * geo.tiles_w), (g / geo.tiles_w) % geo.tiles_h, g % geo.tiles_w};
}

template <int kM, int kLanes>
WINFER_ALWAYS_INLINE inline void input_tiles_body(const Job& j, int64_t g0, int64_t first, int64_t last) {
  constexpr int n = Wino<kM>::kN;
  const ConvParams& p = *j.p;
  const int64_t c_count = p.in_channels, xi_stride = j.v_stride;
  for (int64_t t = first; t < last; ++t) {
    const TilePos at = tile_pos(*j.geo, g0 + t);
    const float* image = j.input + at.n * p.in_h * p.in_w * c_count;
    const float* d[n][n];
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k) {
        const int64_t ih = kM * at.th - p.pad_top + i, iw = kM * at.tw - p.pad_left + k;
        d[i][k] = ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w ? image + (ih * p.in_w + iw) * c_count : j.zeros;
      }
    float* v = j.v + t * c_count;
    int64_t c = 0;
    for (; c + kLanes <= c_count; c += kLanes) input_transform_lanes<kM, kLanes>(d, c, v, xi_stride);
    for (; c < c_count; ++c) input_transform_lanes<kM, 1>(d, c, v, xi_stride);
  }
}

template <int kM, int kLanes>
WINFER_ALWAYS_INLINE inline void output_tiles_body(const Job& j, int64_t g0, int64_t first, int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t co = p.out_channels, xi_stride = j.m_stride;
  for (int64_t t = first; t < last; ++t) {
    const TilePos at = tile_pos(*j.geo, g0 + t);
    float* out[kM][kM];
    const float* res[kM][kM];
    for (int i = 0; i < kM; ++i)
      for (int k = 0; k < kM; ++k) {
        const int64_t oh = kM * at.th + i, ow = kM * at.tw + k;
        const bool inside = oh < j.geo->ho && ow < j.geo->wo;
        const int64_t pixel = (at.n * j.geo->ho + oh) * j.geo->wo + ow;
        out[i][k] = inside ? j.output + pixel * p.out_stride() : nullptr;
        res[i][k] = inside && j.residual != nullptr ? j.residual + pixel * co : nullptr;
      }
    const float* m = j.m + t * co;
    int64_t o = 0;
    for (; o + kLanes <= co; o += kLanes) output_transform_lanes<kM, kLanes>(m, xi_stride, o, out, res, j.bias, j.clip);
    for (; o < co; ++o) output_transform_lanes<kM, 1>(m, xi_stride, o, out, res, j.bias, j.clip);
  }
}

template <int kM>
WINFER_TARGET_AVX512 void input_tiles_avx512(const Job& j, int64_t g0, int64_t a, int64_t b) {
  input_tiles_body<kM, 16>(j, g0, a, b);
}
template <int kM>
WINFER_TARGET_AVX2 void input_tiles_avx2(const Job& j, int64_t g0, int64_t a, int64_t b) {
  input_tiles_body<kM, 8>(j, g0, a, b);
}
template <int kM>
void input_tiles_generic(const Job& j, int64_t g0, int64_t a, int64_t b) {
  input_tiles_body<kM, 4>(j, g0, a, b);
}
template <int kM>
WINFER_TARGET_AVX512 void output_tiles_avx512(const Job& j, int64_t g0, int64_t a, int64_t b) {
  output_tiles_body<kM, 16>(j, g0, a, b);
}
template <int kM>
WINFER_TARGET_AVX2 void output_tiles_avx2(const Job& j, int64_t g0, int64_t a, int64_t b) {
  output_tiles_body<kM, 8>(j, g0, a, b);
}
template <int kM>
void output_tiles_generic(const Job& j, int64_t g0, int64_t a, int64_t b) {
  output_tiles_body<kM, 4>(j, g0, a, b);
}

using TilesFn = void (*)(const Job&, int64_t, int64_t, int64_t);
struct Transforms {
  TilesFn input, output;
};
template <int kM>
Transforms pick_transforms(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return {input_tiles_avx512<kM>, output_tiles_avx512<kM>};
    case Isa::kAvx2: return {input_tiles_avx2<kM>, output_tiles_avx2<kM>};
    default: return {input_tiles_generic<kM>, output_tiles_generic<kM>};
  }
}
Transforms pick_transforms(Isa isa, int tile) {
  switch (tile) {
    case 2: return pick_transforms<2>(isa);
    case 4: return pick_transforms<4>(isa);
    default: return pick_transforms<6>(isa);
  }
}

// The U panel of (position xi, panel): [C][kPanel].
const float* u_panel(const Job& j, int64_t xi, int64_t panel) {
  return j.packed + (packed_position(j.geo->m, xi) * j.geo->panels + panel) * j.p->in_channels * kPanel;
}

// M[xi][tiles][panel's columns] = V[xi][tiles] x U[xi][panel], for `rows` tiles of the block.
// With `next` (the U panel of the thread's next pair), that panel is brought into L2
// meanwhile, a share per micro-tile: transformed weights beyond L2 (ResNet's 7x7 stage, 37.7 MB
// for 512 -> 512) then stream from memory while the arithmetic runs.
void gemm(const Job& j, int64_t xi, int64_t panel, int64_t rows, const float* next) {
  const ConvParams& p = *j.p;
  const TileKernels& uk = *j.uk;
  const int64_t c_count = p.in_channels, co = p.out_channels;
  const int nr = uk.max_vecs * uk.lanes;
  const int64_t panel_cols = std::min<int64_t>(kPanel, co - panel * kPanel);
  const float* u = u_panel(j, xi, panel);
  const float* pixels[kMaxTileRows];
  TileArgs a;
  a.pixels = pixels;
  a.segments = 1;
  a.seg_len = c_count;
  a.seg_stride = 0;
  a.w_seg_stride = 0;
  a.bias = nullptr;
  a.out_stride = co;
  a.clip = activation_clamp(Activation::kNone);
  // A U panel that does not stream (no `next`) is read by every micro-tile of the block from
  // L1/L2: the tile leaves its prefetch to the hardware (0.95x the time on ResNet-18 and VGG-16,
  // AVX-512, Zen 4, session 25).
  a.weights_in_l2 = next == nullptr;
  // The rows split evenly among the fewest micro-kernel calls: 44 rows as 4 calls of 11, not 3 of
  // 14 and one of 2 (a call of 2 rows runs its K loop for 4 FMAs per step).
  const int64_t micro_tiles = ceil_div(rows, int64_t{uk.max_rows});
  for (int64_t call = 0; call < micro_tiles; ++call) {
    const int64_t m0 = rows * call / micro_tiles;
    const int mr = static_cast<int>(rows * (call + 1) / micro_tiles - m0);
    for (int m = 0; m < mr; ++m) pixels[m] = j.v + xi * j.v_stride + (m0 + m) * c_count;
    if (next != nullptr)
      set_prefetch_share(a, next, c_count * kPanel * int64_t{sizeof(float)}, call, micro_tiles, c_count);
    for (int64_t c = 0; c < panel_cols; c += nr) {
      a.cols = static_cast<int>(std::min<int64_t>(nr, panel_cols - c));
      a.weights = u + c;
      a.out = j.m + xi * j.m_stride + m0 * co + panel * kPanel + c;
      uk.fn[mr][uk.vecs_for(a.cols)](a);
      a.prefetch = nullptr;  // the first column block has fetched the share
    }
  }
}

class WinogradConv final : public ConvAlgorithm {
 public:
  // forced_tile: 2, 4 or 6 for every layer, 0 for winograd_tile()'s choice.
  explicit WinogradConv(int forced_tile) : forced_tile_(forced_tile) {}
  const char* name() const override { return "winograd"; }
  int tile(const ConvParams& p) const { return forced_tile_ != 0 ? forced_tile_ : winograd_tile(p); }
  // 3x3 stride-1 dense layers with at least kMinChannels inputs: with fewer, the GEMMs are too
  // short (K = C) to pay for the transforms (VGG16's first layer, C = 3: 3.6 ms against
  // im2win's 1.7 with F(2x2)), and the layer is better left to the fallback.
  static constexpr int64_t kMinChannels = 16;
  bool supports(const ConvParams& p) const override {
    return p.is_valid() && p.groups == 1 && p.kernel_h == 3 && p.kernel_w == 3 && p.stride_h == 1 && p.stride_w == 1 &&
           p.dilation_h == 1 && p.dilation_w == 1 && p.in_channels >= kMinChannels;
  }
  // The transformed weights a run reads: its tile's positions of U (F(2x2): 16 of the 64).
  static int64_t read_weight_bytes(const ConvParams& p, int tile) {
    return Geometry(p, tile).positions * ceil_div(p.out_channels, kPanel) * p.in_channels * kPanel *
           int64_t{sizeof(float)};
  }
  // Transformed weights beyond L2 come from memory on every run (a network's do not stay in
  // the caches): run() then prefetches the next U panel during each GEMM. The bound is the
  // 1.5 MiB it was tuned with (on a 2 MiB L2), not the machine's (cpu_caches.h): it also decides
  // declines() (hence which algorithm computes the layer) and the bands under a pooling, and
  // those were not measured on a smaller L2.
  static constexpr int64_t kL2WeightBytes = 3 << 19;
  static bool weights_stream(const ConvParams& p, int tile) { return read_weight_bytes(p, tile) > kL2WeightBytes; }
  // Each value of U feeds one multiply per tile. With weights that stream and very few tiles the
  // GEMMs wait on the stream: 512 -> 512 at 4x4 and 3x3 (4 tiles of F(2x2), 16.8 MB) ran at
  // 0.66-0.83x im2win's speed (9.4 MB, each value feeding 9-16 pixels), at 5x5 (9 tiles) even,
  // at 7x7 (16 tiles) 1.1-1.2x, 256 -> 256 at 6x6 (9 tiles, 4.2 MB) 1.2-1.4x; F(4x4) at its
  // fewest, 8 tiles (512 -> 512 at 7x7, batch 2), 1.57x. Weights cold as in a network (96 MiB
  // written between calls), 1 and 2 threads, bench/tools/winograd_tiles.sh, session 33; until
  // then this bound was 28 tiles, measured before the U prefetch and the even blocks. Below
  // kMinStreamedTiles, leave the layer to im2win.
  static constexpr int64_t kMinStreamedTiles = 8;
  std::string declines(const ConvParams& p) const override {
    const int t = tile(p);
    const int64_t tiles = Geometry(p, t).tiles;
    if (!weights_stream(p, t) || tiles >= kMinStreamedTiles) return {};
    return "winograd leaves " + p.to_string() + " to im2win: its " + std::to_string(read_weight_bytes(p, t) >> 10) +
           " KiB of transformed weights would stream from memory for only " + std::to_string(tiles) + " tiles";
  }
  // Under a pooling (conv_bands.h) each band is a run of its own: its tiles start at its first
  // row, and every block of tiles reads all of U. Bands of whole tile rows waste no rows on
  // their edges (VGG's 18-row bands computed 20 with F(4x4)); where U streams from memory, a
  // band of fewer tiles than a block streams it for less work: VGG16's conv4_3 (28x28, 512 ->
  // 512, bands of 18 rows: 35 tiles, then run with F(2x2)) ran 1.7x slower fused with its
  // pooling than its unfused twin conv4_2. Such a band takes a block's tiles at least (or the
  // whole image).
  BandRows band_rows(const ConvParams& whole) const override {
    const int t = tile(whole);
    const Geometry geo(whole, t);
    BandRows rows;
    rows.multiple = t;
    rows.min_rows = t;
    if (weights_stream(whole, t)) {
      const int64_t block = block_tiles(tile_kernels(cpu_isa()));
      rows.min_rows = std::min(geo.ho, ceil_div(block, geo.tiles_w) * t);
    }
    return rows;
  }
  size_t workspace_bytes(const ConvParams& p) const override {
    const int t = tile(p);
    const int64_t floats = Geometry(p, t).positions * (position_stride(kMaxBlockTiles, p.in_channels) +
                                                       position_stride(kMaxBlockTiles, p.out_channels)) +
                           p.in_channels;
    return static_cast<size_t>(floats) * sizeof(float);
  }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(kPackedPositions * ceil_div(p.out_channels, kPanel) * p.in_channels * kPanel) *
           sizeof(float);
  }
  // U = G g G^T per (output, input) channel, in double, into [xi][panel][C][32] (zeros past the
  // last output channel), all 64 positions whatever the tile (the tile may depend on the spatial
  // size, packing may not). One (panel, input channel) at a time, its 32 output channels side by
  // side: the arithmetic runs across them in vectors, and each position's 32 values are stored
  // together (one output channel at a time stored 64 floats 128 bytes apart each: VGG-16's
  // weights took 0.7 s to pack).
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    const int64_t c_count = p.in_channels, co = p.out_channels, panels = ceil_div(co, kPanel);
    for (int64_t panel = 0; panel < panels; ++panel) {
      const int64_t o0 = panel * kPanel, cols = std::min<int64_t>(kPanel, co - o0);
      for (int64_t c = 0; c < c_count; ++c) {
        double g[9][kPanel] = {};  // the taps, output channels last (zeros past the last)
        for (int64_t o = 0; o < cols; ++o)
          for (int t = 0; t < 9; ++t) g[t][o] = weight_oihw[((o0 + o) * c_count + c) * 9 + t];
        double a[kPackedPoints][3][kPanel];  // G g
        for (int i = 0; i < kPackedPoints; ++i)
          for (int k = 0; k < 3; ++k)
            for (int o = 0; o < kPanel; ++o)
              a[i][k][o] = kG[i][0] * g[k][o] + kG[i][1] * g[3 + k][o] + kG[i][2] * g[6 + k][o];
        for (int i = 0; i < kPackedPoints; ++i)
          for (int k = 0; k < kPackedPoints; ++k) {
            const int64_t xi = kPackedPoints * i + k;
            float* u = packed + ((xi * panels + panel) * c_count + c) * kPanel;
            for (int o = 0; o < kPanel; ++o)
              u[o] = static_cast<float>(kG[k][0] * a[i][0][o] + kG[k][1] * a[i][1][o] + kG[k][2] * a[i][2][o]);
          }
      }
    }
  }

  // U (7x the weights: 64 positions of 3x3) in 2 MiB pages: with 4 KiB pages each process
  // placed it in L2 and the TLB by chance, ResNet-18's 28x28 and 14x14 layers ran 0.61-0.73 and
  // 0.82-1.03 ms from one process to the next, with 2 MiB pages 0.58-0.60 and 0.78-0.81 in every
  // one, the 7x7 ones (U streamed from memory) 1.38-1.46 -> 1.29-1.33 ms. Whole network, batch 1, 1 thread: 18.9
  // -> 17.3 ms; session creation 250 -> 450 ms, huge pages being slow to fault in on this
  // project's VMs (docs/PERFORMANCE.md, session 34).
  bool packed_weights_in_huge_pages() const override { return true; }

  bool supports_output_stride() const override { return true; }
  void run(const ConvParams& p, const float* input_nhwc, const float* packed, const float* bias,
           const float* residual_nhwc, float* output_nhwc, void* workspace, Activation act,
           int threads) const override {
    const int t_edge = tile(p);
    const Geometry geo(p, t_edge);
    const TileKernels& uk = tile_kernels(cpu_isa());
    const Transforms transforms = pick_transforms(cpu_isa(), t_edge);
    Job j;
    j.p = &p;
    j.geo = &geo;
    j.uk = &uk;
    j.input = input_nhwc;
    j.packed = packed;
    j.bias = bias;
    j.residual = residual_nhwc;
    j.output = output_nhwc;
    // Blocks of at most block_tiles() tiles, as many as that takes, of equal size: 100 tiles as
    // 50 + 50, not 56 + 44 (each block reads all of U once either way).
    j.block = ceil_div(geo.tiles, ceil_div(geo.tiles, block_tiles(uk)));
    j.v_stride = position_stride(j.block, p.in_channels);
    j.m_stride = position_stride(j.block, p.out_channels);
    float* ws = static_cast<float*>(workspace);
    j.v = ws;
    j.m = ws + geo.positions * j.v_stride;
    float* zeros = j.m + geo.positions * j.m_stride;
    std::memset(zeros, 0, static_cast<size_t>(p.in_channels) * sizeof(float));
    j.zeros = zeros;
    j.clip = activation_clamp(act);
    const int64_t pairs = geo.positions * geo.panels;
    const bool stream_weights = weights_stream(p, t_edge);
    const int nt = threads_for_work(threads, p.flops() / 2);
    // Per block of tiles, three steps, each split into tasks of the thread pool
    // (thread_pool.h), each starting when the one before is done: input transform (writes
    // V), the GEMMs of the (position, panel) pairs (V -> M), output transform (reads M). The
    // output transform of one block and the input transform of the next are one step: the
    // latter writes V only, and the GEMM that overwrites M comes after both.
    auto block_rows = [&](int64_t g0) { return std::min(j.block, geo.tiles - g0); };
    auto transform_step = [&](int64_t out_g0, int64_t in_g0) {  // either may be -1: none
      const int64_t out_rows = out_g0 >= 0 ? block_rows(out_g0) : 0, in_rows = in_g0 >= 0 ? block_rows(in_g0) : 0;
      const int64_t out_pieces = out_rows > 0 ? pieces_for(nt, out_rows, out_rows * geo.positions * p.out_channels) : 0;
      const int64_t in_pieces = in_rows > 0 ? pieces_for(nt, in_rows, in_rows * geo.positions * p.in_channels) : 0;
      auto piece = [&](int64_t k, int) {
        if (k < out_pieces)
          transforms.output(j, out_g0, out_rows * k / out_pieces, out_rows * (k + 1) / out_pieces);
        else
          transforms.input(j, in_g0, in_rows * (k - out_pieces) / in_pieces,
                           in_rows * (k - out_pieces + 1) / in_pieces);
      };
      parallel_tasks(nt, out_pieces + in_pieces, TaskFn(piece));
    };
    transform_step(-1, 0);
    for (int64_t g0 = 0; g0 < geo.tiles; g0 += j.block) {
      const int64_t rows = block_rows(g0);
      parallel_pieces(nt, pairs, pieces_for(nt, pairs, rows * geo.positions * p.in_channels * p.out_channels),
                      [&](int64_t first, int64_t last, int) {
                        for (int64_t pair = first; pair < last; ++pair) {
                          const int64_t next = pair + 1;
                          const float* next_u = stream_weights && next < last
                                                    ? u_panel(j, next / geo.panels, next % geo.panels)
                                                    : nullptr;
                          gemm(j, pair / geo.panels, pair % geo.panels, rows, next_u);
                        }
                      });
      transform_step(g0, g0 + j.block < geo.tiles ? g0 + j.block : -1);
    }
  }

 private:
  int forced_tile_;
};

}  // namespace

int winograd_tile(const ConvParams& p) {
  const int64_t tiles = Geometry(p, 4).tiles;
  if (3 * tiles > Geometry(p, 2).tiles || tiles < kMinF4Tiles) return 2;
  const int64_t tiles6 = Geometry(p, 6).tiles;
  if (64.0 * double(tiles6) > kF6Share * 36.0 * double(tiles) || tiles6 < kMinF6Tiles) return 4;
  // F(6x6) runs kMinF6Tiles tiles at least, which declines() never refuses.
  static_assert(kMinF6Tiles >= WinogradConv::kMinStreamedTiles, "F(6x6) would pick a tile declines() refuses");
  return 32 * (p.in_channels + p.out_channels) <= p.in_channels * p.out_channels ? 6 : 4;
}

const ConvAlgorithm& winograd_conv_algorithm_with_tile(int tile) {
  static const WinogradConv f2(2), f4(4), f6(6);
  return tile == 6 ? f6 : tile == 4 ? f4 : f2;
}

const ConvAlgorithm& winograd_conv_algorithm() {
  static const WinogradConv algorithm(0);
  return algorithm;
}

}  // namespace cpu
}  // namespace winfer
