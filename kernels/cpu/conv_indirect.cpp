// "indirect": the indirect convolution algorithm (Dukhan 2019; the scheme of XNNPACK's
// f32-igemm), on the im2win micro-kernels.
//
// Indirection buffer. Instead of copying each output pixel's receptive field into a matrix
// (im2col) or a window tensor (im2win), the kernel is given, for each output pixel and each
// tap (ky, kx), a pointer to the start of the input pixel the tap reads: its C channels are
// contiguous in NHWC, so a tap is one contiguous run of Cg floats (the group's channels, at
// pointer + g * Cg). Taps in the padding point at a zero vector of C floats. The pointers are
// laid out per tile of output pixels (conv_indirect.h): for tile t, Kw*Kh groups of
// kIndirectTile (14) pointers, one per pixel, so a kernel call reads tap s of its pixels from
// 14 consecutive slots. Tiles are balanced runs of at most 14 consecutive output pixels of an
// image (they may span output rows: a 7x7 output is 4 tiles of 12-13 pixels); a tile's slots
// past its last pixel repeat that pixel, so they are always valid addresses. Kernels with
// fewer rows (AVX2 and generic: MR = 6) split each tile into balanced sub-tiles, reading the
// same slots, so the buffer and the workspace do not depend on the ISA.
//
// When the buffer is built. The pointers depend on the input's address, which run() receives
// each call (the memory planner may place a tensor differently from one plan to the next), so
// the buffer is rebuilt into the workspace by every run(): Kh*Kw*Ho*Wo pointer writes against
// Kh*Kw*Ho*Wo*Cg*Co multiply-adds. Nothing can go stale: there is no state outside the
// workspace. Built all at once (before a barrier) it costs 0.15-2% of a 3x3 or 1x1 layer, but
// 22% of the 7x7/2 stem (C = 3: 49 pointers per 49*3*64 multiply-adds, a 4.9 MB buffer written
// to memory and read back), so where threads take whole tiles each tile is built just before
// it is computed, in L1 (docs/PERFORMANCE.md, "## indirect").
//
// Micro-kernel: TileKernels::indirect, the im2win tiles (14x32 on AVX-512, 6x16 on AVX2, 6x8
// generic) with segments = the Kh*Kw taps, seg_len = Cg: the same inner loop, bias and
// clamping epilogue (ukernel_conv_body.h).
//
// Weights are packed once into panels of kPanel = 32 output channels, [g][panel][Kw][Kh][Cg][32]
// (a group's last panel as wide as its remaining channels): exactly im2win's packed layout (a
// tap's Cg weight rows are contiguous either way), the buffer's taps being in the same (kx, ky)
// order.
//
// Threads. When one group's packed weights fit l2_weight_bytes() (they stay in L2 while tiles
// stream through them) without dwarfing the pixels (weights_dwarf_pixels(), conv_common.h: then
// the first tile would stream them all from memory) and there are at least 4 tiles per thread,
// each thread takes a contiguous share of the tiles and, tile by tile, builds its slots and
// computes all its channels. Otherwise the threads build the whole buffer, meet at a barrier, and
// split the work items (image, group, tile, panel) into contiguous chunks, ordered tile by tile,
// or panel by panel when the weights exceed L2 or dwarf the pixels (one panel stays in L2 while
// every tile of the image streams through it). Each output element is computed by the same kernel call
// whatever the thread count: results do not depend on it.
//
// Groups: per group the pointers are offset by the group's first channel and the weights are
// the group's panels. Depthwise convolutions are correct here too (Cg = 1, one column of a
// 32-wide panel) but wasteful; the engine routes them to the `depthwise` algorithm. Groups of
// fewer than 16 output channels run G at a time as one block-diagonal group (conv_common.h,
// merge_small_groups): run() hands the merged params to everything below.
#include "kernels/cpu/conv_indirect.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv_common.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_conv.h"

namespace winfer {
namespace cpu {

IndirectionLayout::IndirectionLayout(const ConvParams& p) {
  pixels = p.out_h() * p.out_w();
  tiles = ceil_div(pixels, kIndirectTile);
  taps = p.kernel_h * p.kernel_w;
  pointers = p.batch * tiles * taps * kIndirectTile;
}

int64_t IndirectionLayout::workspace_bytes(const ConvParams& p) const {
  return pointers * int64_t{sizeof(const float*)} + p.in_channels * int64_t{sizeof(float)};
}

float* zero_vector(const IndirectionLayout& layout, void* workspace) {
  return reinterpret_cast<float*>(static_cast<char*>(workspace) + layout.pointers * int64_t{sizeof(const float*)});
}

void build_indirection(const ConvParams& p, const IndirectionLayout& layout, const float* input_nhwc, void* workspace,
                       int64_t first, int64_t last) {
  const float** buffer = static_cast<const float**>(workspace);
  const float* const zero = zero_vector(layout, workspace);
  const int64_t wo = p.out_w(), image_floats = p.in_h * p.in_w * p.in_channels;
  const int64_t row_step = p.dilation_h * p.in_w * p.in_channels, col_step = p.dilation_w * p.in_channels;
  const int64_t kh = p.kernel_h, kw = p.kernel_w;
  for (int64_t u = first; u < last; ++u) {
    const int64_t n = u / layout.tiles, t = u % layout.tiles;
    const float* image = input_nhwc + n * image_floats;
    const float** tile = buffer + u * layout.taps * kIndirectTile;
    const int64_t p0 = layout.tile_first(t), p1 = layout.tile_last(t);
    int64_t oy = p0 / wo, ox = p0 % wo;
    for (int64_t m = 0; m < kIndirectTile; ++m) {
      if (m > 0 && p0 + m < p1 && ++ox == wo) {  // slots past the tile repeat its last pixel
        ox = 0;
        ++oy;
      }
      const int64_t iy0 = oy * p.stride_h - p.pad_top, ix0 = ox * p.stride_w - p.pad_left;
      const float** slot = tile + m;
      if (iy0 >= 0 && ix0 >= 0 && iy0 + (kh - 1) * p.dilation_h < p.in_h && ix0 + (kw - 1) * p.dilation_w < p.in_w) {
        // Every tap in the image (most pixels): no checks.
        const float* column = image + (iy0 * p.in_w + ix0) * p.in_channels;
        for (int64_t kx = 0; kx < kw; ++kx, column += col_step) {
          const float* tap = column;
          for (int64_t ky = 0; ky < kh; ++ky, tap += row_step, slot += kIndirectTile) *slot = tap;
        }
        continue;
      }
      for (int64_t kx = 0; kx < kw; ++kx) {
        const int64_t ix = ix0 + kx * p.dilation_w;
        const bool column_in = ix >= 0 && ix < p.in_w;
        for (int64_t ky = 0; ky < kh; ++ky, slot += kIndirectTile) {
          const int64_t iy = iy0 + ky * p.dilation_h;
          *slot = column_in && iy >= 0 && iy < p.in_h ? image + (iy * p.in_w + ix) * p.in_channels : zero;
        }
      }
    }
  }
}

namespace {

// Threads take whole tiles (building each just before computing it) when there are at least
// this many per thread, so that the split stays fair.
constexpr int64_t kMinTilesPerThread = 4;

// One run(), as tasks of the thread pool (thread_pool.h).
class IndirectRun {
 public:
  IndirectRun(const ConvParams& p, const float* input, const float* packed, const float* bias, const float* residual,
              float* output, void* workspace, Activation act)
      : p_(p),
        layout_(p),
        uk_(tile_kernels(cpu_isa())),
        input_(input),
        packed_(packed),
        bias_(bias),
        residual_(residual),
        output_(output),
        workspace_(workspace),
        buffer_(static_cast<const float* const*>(workspace)),
        clip_(activation_clamp(act)),
        cg_(p.in_channels_per_group()),
        cog_(p.out_channels_per_group()),
        panels_(ceil_div(cog_, kPanel)),
        tile_major_(tile_major(p, layout_)) {}

  // Tile by tile where one group's weights stay in L2 while the tiles pass, unless they dwarf the
  // pixels (weights_dwarf_pixels(), conv_common.h); panel by panel otherwise.
  static bool tile_major(const ConvParams& p, const IndirectionLayout& layout) {
    const int64_t k = layout.taps * p.in_channels_per_group();
    const int64_t weight_bytes = p.out_channels_per_group() * k * int64_t{sizeof(float)};
    const int64_t pixel_bytes = layout.pixels * k * int64_t{sizeof(float)};
    return weight_bytes <= l2_weight_bytes() && !weights_dwarf_pixels(weight_bytes, pixel_bytes);
  }

  // The whole convolution on up to `team` threads.
  void run(int team) const {
    const int64_t all_tiles = p_.batch * layout_.tiles;
    std::memset(zero_vector(layout_, workspace_), 0, sizeof(float) * static_cast<size_t>(p_.in_channels));
    if (tile_major_ && all_tiles >= kMinTilesPerThread * team) {
      // Each task builds the slots of one tile and computes all of it at once, while they
      // are in L1: the buffer never goes to memory (the 7x7/2 stem's is 4.9 MB).
      parallel_pieces(team, all_tiles, pieces_for(team, all_tiles, p_.flops() / 2),
                      [&](int64_t first, int64_t last, int) {
                        for (int64_t u = first; u < last; ++u) {
                          build_indirection(p_, layout_, input_, workspace_, u, u + 1);
                          for (int64_t g = 0; g < p_.groups; ++g)
                            for (int64_t panel = 0; panel < panels_; ++panel)
                              compute_tile(u / layout_.tiles, g, u % layout_.tiles, panel);
                        }
                      });
      return;
    }
    // Otherwise (few tiles, or weights beyond L2) the threads build the whole buffer, then
    // (all done) split the (image, group, tile, panel) items.
    parallel_pieces(
        team, all_tiles, pieces_for(team, all_tiles, all_tiles * layout_.taps * kIndirectTile),
        [&](int64_t first, int64_t last, int) { build_indirection(p_, layout_, input_, workspace_, first, last); });
    const int64_t items = p_.batch * p_.groups * layout_.tiles * panels_;
    parallel_pieces(team, items, pieces_for(team, items, p_.flops() / 2),
                    [&](int64_t first, int64_t last, int) { compute_items(first, last); });
  }

 private:
  // Items [first, last) of the (image, group, tile, panel) items.
  void compute_items(int64_t first, int64_t end) const {
    const int64_t per_group = layout_.tiles * panels_;
    for (int64_t i = first; i < end; ++i) {
      const int64_t ng = i / per_group, j = i % per_group;
      const int64_t tile = tile_major_ ? j / panels_ : j % layout_.tiles;
      const int64_t panel = tile_major_ ? j % panels_ : j / layout_.tiles;
      // Panel by panel, weights beyond L2 stream from memory: each tile also pulls its share of
      // the group's next panel into L2 (as im2win does) when this thread computes that panel.
      const bool stream_next = !tile_major_ && panel + 1 < panels_ && i + layout_.tiles < end;
      compute_tile(ng / p_.groups, ng % p_.groups, tile, panel, stream_next);
    }
  }

  // The pixels of tile `tile` of image n x the channels of one panel of group g; with
  // prefetch_next, the tile's share of the next panel is prefetched meanwhile.
  void compute_tile(int64_t n, int64_t g, int64_t tile, int64_t panel, bool prefetch_next = false) const {
    const int64_t p0 = layout_.tile_first(tile), rows = layout_.tile_last(tile) - p0;
    const float* const* slots = buffer_ + (n * layout_.tiles + tile) * layout_.taps * kIndirectTile;
    TileArgs a;
    a.weights_in_l2 = tile_major_;
    a.segments = layout_.taps;
    a.seg_len = cg_;
    a.seg_stride = 0;
    const int64_t width = panel_width(cog_, panel);  // floats per K row of this panel
    a.w_row_stride = width;
    a.w_seg_stride = cg_ * width;
    a.pixels_stride = kIndirectTile;
    a.pixel_offset = g * cg_;
    a.out_stride = p_.out_stride();
    a.clip = clip_;
    const int64_t co0 = g * cog_ + panel * kPanel;
    const float* w_panel = packed_ + panel_start(g, cog_, panel, layout_.taps * cg_);
    const int64_t out_offset = (n * layout_.pixels + p0) * p_.out_stride() + co0;
    const int block_cols = uk_.max_vecs * uk_.lanes;
    const int64_t subs = ceil_div(rows, uk_.max_rows);  // balanced sub-tiles of at most MR pixels
    for (int64_t c = 0; c < width; c += block_cols) {
      a.cols = static_cast<int>(std::min<int64_t>(block_cols, width - c));
      a.weights = w_panel + c;
      a.bias = bias_ != nullptr ? bias_ + co0 + c : nullptr;
      const int vecs = uk_.vecs_for(a.cols);
      for (int64_t s = 0; s < subs; ++s) {
        const int64_t m0 = rows * s / subs, m1 = rows * (s + 1) / subs;
        a.prefetch = nullptr;
        if (prefetch_next && c == 0) {
          const int64_t k = layout_.taps * cg_;
          set_prefetch_share(a, packed_ + panel_start(g, cog_, panel + 1, k),
                             k * panel_width(cog_, panel + 1) * int64_t{sizeof(float)}, tile * subs + s,
                             layout_.tiles * subs, k);
        }
        a.pixels = slots + m0;
        a.out = output_ + out_offset + m0 * p_.out_stride() + c;
        a.residual = residual_ != nullptr ? residual_ + out_offset + m0 * p_.out_channels + c : nullptr;
        uk_.pick(static_cast<int>(m1 - m0), vecs, width, /*indirect_rows=*/true)(a);
      }
    }
  }

  const ConvParams& p_;
  const IndirectionLayout layout_;
  const TileKernels& uk_;
  const float* input_;
  const float* packed_;
  const float* bias_;
  const float* residual_;
  float* output_;
  void* workspace_;
  const float* const* buffer_;
  Clamp clip_;
  int64_t cg_, cog_, panels_;
  bool tile_major_;
};

class IndirectConv final : public PanelWeightsAlgorithm {
 public:
  const char* name() const override { return "indirect"; }
  bool supports(const ConvParams& p) const override { return p.is_valid(); }
  size_t workspace_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(IndirectionLayout(p).workspace_bytes(p));
  }
  void run(const ConvParams& p, const float* input_nhwc, const float* packed, const float* bias,
           const float* residual_nhwc, float* output_nhwc, void* workspace, Activation act,
           int threads) const override {
    const ConvParams m = merge_small_groups(p);  // as the weights were packed (conv_common.h)
    const IndirectRun job(m, input_nhwc, packed, bias, residual_nhwc, output_nhwc, workspace, act);
    job.run(threads_for_work(threads, p.flops() / 2));
  }
};

}  // namespace

const ConvAlgorithm& indirect_conv_algorithm() {
  static const IndirectConv algorithm;
  return algorithm;
}

}  // namespace cpu
}  // namespace winfer
