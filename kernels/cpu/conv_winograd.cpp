// "winograd": Winograd's minimal filtering F(2x2, 3x3) for 3x3 stride-1 convolutions (Lavin and
// Gray, 2016). Each 2x2 block of output pixels ("tile") is computed from a 4x4 input patch with
// 16 multiplications per (input channel, output channel) instead of 36: 2.25x fewer
// multiply-adds than every other algorithm here, which all run at 80-90% of the FMA peak on
// these layers and so cannot get faster any other way.
//
//   V = B^T d B    (input patch d, 4x4, per channel)       the input transform
//   U = G g G^T    (kernel g, 3x3, per output x input)     the weight transform (at packing)
//   M = sum_c U (.) V    for each of the 16 positions xi:  16 GEMMs  [tiles x C] x [C x Co]
//   Y = A^T M A    (2x2 outputs)                           the output transform, + bias,
//                                                          residual, activation
//
// The 16 GEMMs are the convolution micro-kernel's (ukernel_conv.h) over a block of T tiles:
// A rows are V[xi][tile] (C contiguous floats), the weights U[xi] packed in panels of 32 output
// channels [xi][panel][C][32], exactly the layout the micro-kernel streams. Tiles are taken in
// blocks of T (4 x the kernel's rows) so that V and M of a block stay in L2; the threads
// transform disjoint tiles, compute disjoint (xi, panel) pairs, and meet at a barrier in
// between. Each output element is computed the same way whatever the thread count (bitwise).
//
// Precision: the transforms add and subtract up to 4 inputs, so the error bound is a few times
// that of a direct sum (measured: max relative error ~1e-6 on the tests' shapes); F(4x4, 3x3)
// would save more multiplications at a larger error, and is not done.
//
// Weights: 16/9 of the OIHW size (U has 16 values per 3x3 kernel), not unpackable (the
// transform is not a permutation): a model packed for another algorithm keeps serving this one
// through unpack + pack. Workspace: one block's V and M, plus a zero row for the padding.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_conv.h"

namespace winfer {
namespace cpu {
namespace {

constexpr int64_t kPositions = 16;  // 4x4 transformed values per tile

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
  explicit Geometry(const ConvParams& p)
      : ho(p.out_h()),
        wo(p.out_w()),
        tiles_h(ceil_div(ho, 2)),
        tiles_w(ceil_div(wo, 2)),
        tiles(p.batch * tiles_h * tiles_w),
        panels(ceil_div(p.out_channels, kPanel)) {}
  int64_t ho, wo, tiles_h, tiles_w, tiles, panels;
};

// Tiles per block: a whole number of micro-kernel calls (the kernel's MR rows).
int64_t block_tiles(const TileKernels& uk) { return 4 * uk.max_rows; }
// The most tiles of any ISA's block, which sizes the workspace (it cannot depend on the ISA
// picked at run time, which tests may lower).
constexpr int64_t kMaxBlockTiles = 4 * kMaxTileRows;

// V = B^T d B for channels [c, c + W) of one tile: d[i][j] read through row pointers (the zero
// row where the patch lies in the padding), V[xi] written xi_stride floats apart.
template <int W>
WINFER_ALWAYS_INLINE inline void input_transform_lanes(const float* const (&d)[4][4], int64_t c, float* v,
                                                       int64_t xi_stride) {
  using L = Lane<W>;
  typename L::V t[4][4];
  for (int j = 0; j < 4; ++j) {
    const auto d0 = L::ld(d[0][j] + c), d1 = L::ld(d[1][j] + c), d2 = L::ld(d[2][j] + c), d3 = L::ld(d[3][j] + c);
    t[0][j] = d0 - d2;
    t[1][j] = d1 + d2;
    t[2][j] = d2 - d1;
    t[3][j] = d1 - d3;
  }
  for (int i = 0; i < 4; ++i) {
    float* row = v + 4 * i * xi_stride + c;
    L::st(row, t[i][0] - t[i][2]);
    L::st(row + xi_stride, t[i][1] + t[i][2]);
    L::st(row + 2 * xi_stride, t[i][2] - t[i][1]);
    L::st(row + 3 * xi_stride, t[i][1] - t[i][3]);
  }
}

// Y = A^T M A (+ bias, residual, clamp) for output channels [o, o + W) of one tile; out[i][j] is
// null for output pixels past the edge.
template <int W>
WINFER_ALWAYS_INLINE inline void output_transform_lanes(const float* m, int64_t xi_stride, int64_t o,
                                                        float* const (&out)[2][2], const float* const (&res)[2][2],
                                                        const float* bias, Clamp clip) {
  using L = Lane<W>;
  using V = typename L::V;
  V s[2][4];
  for (int j = 0; j < 4; ++j) {
    const V m0 = L::ld(m + j * xi_stride + o), m1 = L::ld(m + (4 + j) * xi_stride + o);
    const V m2 = L::ld(m + (8 + j) * xi_stride + o), m3 = L::ld(m + (12 + j) * xi_stride + o);
    s[0][j] = m0 + m1 + m2;
    s[1][j] = m1 - m2 - m3;
  }
  const V b = bias != nullptr ? L::ld(bias + o) : L::splat(0.f);
  const V lo = L::splat(clip.lo), hi = L::splat(clip.hi);
  for (int i = 0; i < 2; ++i) {
    const V y[2] = {s[i][0] + s[i][1] + s[i][2], s[i][1] - s[i][2] - s[i][3]};
    for (int j = 0; j < 2; ++j) {
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
  float* v;            // [16][T][C]
  float* m;            // [16][T][Co]
  const float* zeros;  // C zero floats
  Clamp clip;
  int64_t block;  // T
};

// Tile g (over the batch) -> image n, tile row th, tile column tw.
struct TilePos {
  int64_t n, th, tw;
};
inline TilePos tile_pos(const Geometry& geo, int64_t g) {
  return {g / (geo.tiles_h * geo.tiles_w), (g / geo.tiles_w) % geo.tiles_h, g % geo.tiles_w};
}

template <int kLanes>
WINFER_ALWAYS_INLINE inline void input_tiles_body(const Job& j, int64_t g0, int64_t first, int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t c_count = p.in_channels, xi_stride = j.block * c_count;
  for (int64_t t = first; t < last; ++t) {
    const TilePos at = tile_pos(*j.geo, g0 + t);
    const float* image = j.input + at.n * p.in_h * p.in_w * c_count;
    const float* d[4][4];
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < 4; ++k) {
        const int64_t ih = 2 * at.th - p.pad_top + i, iw = 2 * at.tw - p.pad_left + k;
        d[i][k] = ih >= 0 && ih < p.in_h && iw >= 0 && iw < p.in_w ? image + (ih * p.in_w + iw) * c_count : j.zeros;
      }
    float* v = j.v + t * c_count;
    int64_t c = 0;
    for (; c + kLanes <= c_count; c += kLanes) input_transform_lanes<kLanes>(d, c, v, xi_stride);
    for (; c < c_count; ++c) input_transform_lanes<1>(d, c, v, xi_stride);
  }
}

template <int kLanes>
WINFER_ALWAYS_INLINE inline void output_tiles_body(const Job& j, int64_t g0, int64_t first, int64_t last) {
  const ConvParams& p = *j.p;
  const int64_t co = p.out_channels, xi_stride = j.block * co;
  for (int64_t t = first; t < last; ++t) {
    const TilePos at = tile_pos(*j.geo, g0 + t);
    float* out[2][2];
    const float* res[2][2];
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 2; ++k) {
        const int64_t oh = 2 * at.th + i, ow = 2 * at.tw + k;
        const bool inside = oh < j.geo->ho && ow < j.geo->wo;
        const int64_t pixel = (at.n * j.geo->ho + oh) * j.geo->wo + ow;
        out[i][k] = inside ? j.output + pixel * p.out_stride() : nullptr;
        res[i][k] = inside && j.residual != nullptr ? j.residual + pixel * co : nullptr;
      }
    const float* m = j.m + t * co;
    int64_t o = 0;
    for (; o + kLanes <= co; o += kLanes) output_transform_lanes<kLanes>(m, xi_stride, o, out, res, j.bias, j.clip);
    for (; o < co; ++o) output_transform_lanes<1>(m, xi_stride, o, out, res, j.bias, j.clip);
  }
}

WINFER_TARGET_AVX512 void input_tiles_avx512(const Job& j, int64_t g0, int64_t a, int64_t b) {
  input_tiles_body<16>(j, g0, a, b);
}
WINFER_TARGET_AVX2 void input_tiles_avx2(const Job& j, int64_t g0, int64_t a, int64_t b) {
  input_tiles_body<8>(j, g0, a, b);
}
void input_tiles_generic(const Job& j, int64_t g0, int64_t a, int64_t b) { input_tiles_body<4>(j, g0, a, b); }
WINFER_TARGET_AVX512 void output_tiles_avx512(const Job& j, int64_t g0, int64_t a, int64_t b) {
  output_tiles_body<16>(j, g0, a, b);
}
WINFER_TARGET_AVX2 void output_tiles_avx2(const Job& j, int64_t g0, int64_t a, int64_t b) {
  output_tiles_body<8>(j, g0, a, b);
}
void output_tiles_generic(const Job& j, int64_t g0, int64_t a, int64_t b) { output_tiles_body<4>(j, g0, a, b); }

using TilesFn = void (*)(const Job&, int64_t, int64_t, int64_t);
struct Transforms {
  TilesFn input, output;
};
Transforms pick_transforms(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return {input_tiles_avx512, output_tiles_avx512};
    case Isa::kAvx2: return {input_tiles_avx2, output_tiles_avx2};
    default: return {input_tiles_generic, output_tiles_generic};
  }
}

// M[xi][tiles][panel's columns] = V[xi][tiles] x U[xi][panel], for `rows` tiles of the block.
// With prefetch_next, the U panel after this one (the next pair's, contiguous) is brought into
// L2 meanwhile, a share per micro-tile: transformed weights beyond L2 (ResNet's 7x7 stage,
// 16.8 MB for 512 -> 512) then stream from memory while the arithmetic runs.
void gemm(const Job& j, int64_t xi, int64_t panel, int64_t rows, bool prefetch_next) {
  const ConvParams& p = *j.p;
  const TileKernels& uk = *j.uk;
  const int64_t c_count = p.in_channels, co = p.out_channels;
  const int nr = uk.max_vecs * uk.lanes;
  const int64_t panel_cols = std::min<int64_t>(kPanel, co - panel * kPanel);
  const float* u = j.packed + (xi * j.geo->panels + panel) * c_count * kPanel;
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
  const int64_t micro_tiles = ceil_div(rows, int64_t{uk.max_rows});
  for (int64_t m0 = 0; m0 < rows; m0 += uk.max_rows) {
    const int mr = static_cast<int>(std::min<int64_t>(uk.max_rows, rows - m0));
    for (int m = 0; m < mr; ++m) pixels[m] = j.v + (xi * j.block + m0 + m) * c_count;
    if (prefetch_next)
      set_prefetch_share(a, u + c_count * kPanel, c_count * kPanel * int64_t{sizeof(float)}, m0 / uk.max_rows,
                         micro_tiles, c_count);
    for (int64_t c = 0; c < panel_cols; c += nr) {
      a.cols = static_cast<int>(std::min<int64_t>(nr, panel_cols - c));
      a.weights = u + c;
      a.out = j.m + (xi * j.block + m0) * co + panel * kPanel + c;
      uk.fn[mr][ceil_div(a.cols, uk.lanes)](a);
      a.prefetch = nullptr;  // the first column block has fetched the share
    }
  }
}

class WinogradConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "winograd"; }
  // 3x3 stride-1 dense layers with at least kMinChannels inputs: with fewer, the 16 GEMMs are too
  // short (K = C) to pay for the transforms (VGG16's first layer, C = 3: 3.6 ms against
  // im2win's 1.7), and the layer is better left to the fallback.
  static constexpr int64_t kMinChannels = 16;
  bool supports(const ConvParams& p) const override {
    return p.is_valid() && p.groups == 1 && p.kernel_h == 3 && p.kernel_w == 3 && p.stride_h == 1 && p.stride_w == 1 &&
           p.dilation_h == 1 && p.dilation_w == 1 && p.in_channels >= kMinChannels;
  }
  // Transformed weights beyond L2 come from memory on every run (a network's do not stay in
  // the caches): run() then prefetches the next U panel during each GEMM.
  bool weights_stream(const ConvParams& p) const {
    return static_cast<int64_t>(packed_weight_bytes(p)) > kL2WeightBytes;
  }
  // Transformed weights are 16/9 of the layer's, and each of their values feeds one multiply
  // per tile. With weights that stream and few tiles (ResNet's 7x7 stage at batch 1: 16 tiles,
  // 16.8 MB for 512 -> 512) the GEMMs wait on the stream: measured 2.8-2.9 ms against im2win's
  // 1.8-2.5 ms (9.4 MB, each value feeding 49 pixels) with weights cold, as they are in a
  // network (medians of alternating runs, docs/PERFORMANCE.md). Below kMinStreamedTiles, leave
  // the layer to im2win.
  static constexpr int64_t kMinStreamedTiles = 2 * kMaxTileRows;
  std::string declines(const ConvParams& p) const override {
    const int64_t tiles = Geometry(p).tiles;
    if (!weights_stream(p) || tiles >= kMinStreamedTiles) return {};
    return "winograd leaves " + p.to_string() + " to im2win: its " + std::to_string(packed_weight_bytes(p) >> 10) +
           " KiB of transformed weights would stream from memory for only " + std::to_string(tiles) + " tiles";
  }
  size_t workspace_bytes(const ConvParams& p) const override {
    const int64_t floats = kPositions * kMaxBlockTiles * (p.in_channels + p.out_channels) + p.in_channels;
    return static_cast<size_t>(floats) * sizeof(float);
  }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(kPositions * ceil_div(p.out_channels, kPanel) * p.in_channels * kPanel) * sizeof(float);
  }
  // U = G g G^T per (output, input) channel, in double, into [xi][panel][C][32] (zeros past the
  // last output channel).
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    std::memset(packed, 0, packed_weight_bytes(p));
    const int64_t c_count = p.in_channels, panels = ceil_div(p.out_channels, kPanel);
    for (int64_t o = 0; o < p.out_channels; ++o)
      for (int64_t c = 0; c < c_count; ++c) {
        const float* g = weight_oihw + (o * c_count + c) * 9;
        double a[4][3];  // G g
        for (int k = 0; k < 3; ++k) {
          a[0][k] = g[k];
          a[1][k] = 0.5 * (double(g[k]) + g[3 + k] + g[6 + k]);
          a[2][k] = 0.5 * (double(g[k]) - g[3 + k] + g[6 + k]);
          a[3][k] = g[6 + k];
        }
        for (int i = 0; i < 4; ++i) {
          const double u[4] = {a[i][0], 0.5 * (a[i][0] + a[i][1] + a[i][2]), 0.5 * (a[i][0] - a[i][1] + a[i][2]),
                               a[i][2]};
          for (int k = 0; k < 4; ++k) {
            const int64_t xi = 4 * i + k;
            packed[((xi * panels + o / kPanel) * c_count + c) * kPanel + o % kPanel] = static_cast<float>(u[k]);
          }
        }
      }
  }

  bool supports_output_stride() const override { return true; }
  void run(const ConvParams& p, const float* input_nhwc, const float* packed, const float* bias,
           const float* residual_nhwc, float* output_nhwc, void* workspace, Activation act,
           int threads) const override {
    const Geometry geo(p);
    const TileKernels& uk = tile_kernels(cpu_isa());
    const Transforms transforms = pick_transforms(cpu_isa());
    Job j;
    j.p = &p;
    j.geo = &geo;
    j.uk = &uk;
    j.input = input_nhwc;
    j.packed = packed;
    j.bias = bias;
    j.residual = residual_nhwc;
    j.output = output_nhwc;
    j.block = block_tiles(uk);
    float* ws = static_cast<float*>(workspace);
    j.v = ws;
    j.m = ws + kPositions * kMaxBlockTiles * p.in_channels;
    float* zeros = j.m + kPositions * kMaxBlockTiles * p.out_channels;
    std::memset(zeros, 0, static_cast<size_t>(p.in_channels) * sizeof(float));
    j.zeros = zeros;
    j.clip = activation_clamp(act);
    const int64_t pairs = kPositions * geo.panels;
    const bool stream_weights = weights_stream(p);
    const int nt = threads_for_work(threads, p.flops() / 2);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
      const int t = omp_get_thread_num(), team = omp_get_num_threads();
      for (int64_t g0 = 0; g0 < geo.tiles; g0 += j.block) {
        const int64_t rows = std::min(j.block, geo.tiles - g0);
        transforms.input(j, g0, rows * t / team, rows * (t + 1) / team);
#pragma omp barrier
        const int64_t pair_end = pairs * (t + 1) / team;
        for (int64_t pair = pairs * t / team; pair < pair_end; ++pair)
          gemm(j, pair / geo.panels, pair % geo.panels, rows, stream_weights && pair + 1 < pair_end);
#pragma omp barrier
        transforms.output(j, g0, rows * t / team, rows * (t + 1) / team);
        // The next block's input transform writes V only; its GEMM, which overwrites M, starts
        // after the next barrier, when every thread is done reading this block's M.
      }
    }
  }
};

}  // namespace

const ConvAlgorithm& winograd_conv_algorithm() {
  static const WinogradConv algorithm;
  return algorithm;
}

}  // namespace cpu
}  // namespace winfer
