// INT8 im2win and indirect convolutions (conv_s8.h): weight packing with the zero-point term
// folded into the bias, the u8 window tensor, the indirection pointers, and the tiling over
// the micro-kernels of ukernel_s8.h.
//
// Packed weights (s8_pack_conv), the same bytes for every ISA:
//   header (64 bytes: the shape and zero points it was packed for, checked by every run)
//   bias   int32 [G][panels][kS8Panel]  folded: q_b - z_x * sum_k q_w (zeros past Cog)
//   mult   float [G][panels][kS8Panel]  M[oc] (zeros past Cog)
//   w      s8    [G][panels][Kw][Kh][Cg4 / 4][kS8Panel][4]  (zeros past Cog and past Cg)
// with Cg4 = Cg rounded up to a multiple of 4 and panels = ceil(Cog / kS8Panel): K runs in
// im2win's window order (kw, kh, c), each K step of 4 channels one 128-byte row of 32 output
// channels x 4 bytes, the operand layout of vpdpbusd (4 u8 x s8 products per int32 lane).
//
// im2win, u8. Output row oh of group g reads a window row [Wp][Kh][Cg4]: for column x and tap
// kh the Cg channels of input pixel (oh*sh - pad_top + kh*dh, x - pad_left), then Cg4 - Cg
// filler bytes (their weights are 0), z_x where the tap lies in the padding. Pixel ow's
// receptive field is the run starting at column ow*sw: one run of Kw*Kh*Cg4 bytes (dw = 1) or
// Kw runs of Kh*Cg4 bytes dw*Kh*Cg4 apart. Unlike the FP32 im2win, taps in the padding are not
// skipped: they hold z_x, which the folded bias expects at every tap. Kh = 1 without padding and
// with Cg a multiple of 4 (1x1 convolutions): the input rows are the window rows, read in place.
// Threads own contiguous shares of the output rows (all images and groups) and a private set
// of R window rows each; a step transforms up to R rows, then computes them panel by panel
// (the panel's weights stay in L1/L2 across the step's tiles). Each output value is computed by
// the same kernel call whatever the thread count: results do not depend on it.
//
// Indirect: tiles of at most MR output pixels per image (balanced, spanning rows); per tile
// one pointer per tap (kw, kh: the weights' order) and pixel, to the input pixel's first
// channel or to a row of z_x; the group's first channel is the kernel's pixel_offset, and Cg
// need not be a multiple of 4 (the last 1-3 channels of a tap are the kernel's exact tail).
//
// A residual (S8Residual) is addressed like the output, tile by tile and panel by panel: the
// micro-kernel reads each output value's residual byte just before storing that value.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/conv_s8.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/ukernel_s8.h"

namespace winfer {
namespace cpu {
namespace {

constexpr uint32_t kConvMagic = 0x38534357;  // "WCS8"

struct ConvHeader {
  uint32_t magic;
  int32_t in_zero, out_zero, lo, hi, unused;
  int64_t groups, cg, cog, kh, kw;
};
static_assert(sizeof(ConvHeader) <= 64, "header fits its 64 bytes");

int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// The packed blob's parts.
struct ConvPacking {
  explicit ConvPacking(const ConvParams& p)
      : groups(p.groups),
        cg(p.in_channels_per_group()),
        cog(p.out_channels_per_group()),
        cg4(round_up(cg, 4)),
        panels(ceil_div(cog, kS8Panel)),
        panel_weight_bytes(p.kernel_w * p.kernel_h * cg4 * kS8Panel),
        bias_offset(64),
        mult_offset(bias_offset + round_up(groups * panels * kS8Panel * 4, 64)),
        weight_offset(mult_offset + round_up(groups * panels * kS8Panel * 4, 64)),
        bytes(weight_offset + groups * panels * panel_weight_bytes) {}
  int64_t groups, cg, cog, cg4, panels, panel_weight_bytes;
  int64_t bias_offset, mult_offset, weight_offset, bytes;

  int64_t panel_index(int64_t g, int64_t panel) const { return g * panels + panel; }
};

std::string where(const ConvParams& p) { return "INT8 convolution " + p.to_string() + ": "; }

void check_quant(const ConvParams& p, const S8ConvQuant& q, const char* kind) {
  const std::string at = std::string(kind) + " " + p.to_string() + ": ";
  if (q.in_zero < 0 || q.in_zero > 255) throw std::invalid_argument(at + "input zero point must be in 0..255");
  if (q.out_zero < 0 || q.out_zero > 255) throw std::invalid_argument(at + "output zero point must be in 0..255");
  if (q.lo < 0 || q.hi > 255 || q.lo > q.hi)
    throw std::invalid_argument(at + "output clamp must satisfy 0 <= lo <= hi <= 255");
  if (q.multiplier == nullptr) throw std::invalid_argument(at + "requantization multipliers missing");
  for (int64_t oc = 0; oc < p.out_channels; ++oc)
    if (!std::isfinite(q.multiplier[oc]) || q.multiplier[oc] < 0.f)
      throw std::invalid_argument(at + "multiplier of output channel " + std::to_string(oc) +
                                  " must be finite and >= 0, got " + std::to_string(q.multiplier[oc]));
}

// bias'[oc] = q_b - z_x * sum_k w, checked so that no partial sum of the accumulator can
// overflow int32: |bias'| + 255 * sum_k |w| < 2^31.
int32_t folded_bias(const std::string& at, int64_t oc, const int8_t* w, int64_t k, const S8ConvQuant& q) {
  int64_t sum = 0, abs_sum = 0;
  for (int64_t i = 0; i < k; ++i) {
    sum += w[i];
    abs_sum += std::abs(static_cast<int64_t>(w[i]));
  }
  const int64_t b = (q.bias != nullptr ? q.bias[oc] : 0) - int64_t{q.in_zero} * sum;
  if (std::abs(b) + 255 * abs_sum >= (int64_t{1} << 31))
    throw std::invalid_argument(at + "output channel " + std::to_string(oc) +
                                " can overflow the int32 accumulator (bias and K*255*128 too large)");
  return static_cast<int32_t>(b);
}

const ConvHeader& checked_header(const ConvParams& p, const void* packed, uint32_t magic) {
  const ConvHeader& h = *static_cast<const ConvHeader*>(packed);
  if (h.magic != magic || h.groups != p.groups || h.cg != p.in_channels_per_group() ||
      h.cog != p.out_channels_per_group() || h.kh != p.kernel_h || h.kw != p.kernel_w)
    throw std::invalid_argument(where(p) + "packed weights were packed for another shape or kind");
  return h;
}

// im2win computes tile by tile (all panels of a tile) up to this much packed weights per group,
// panel by panel beyond (ukernel weights then stream from L2 or memory once per step).
constexpr int64_t kTileMajorWeightBytes = 1 << 20;

// Everything the im2win and indirect runs derive from ConvParams.
struct Geometry {
  Geometry(const ConvParams& p, const ConvPacking& pk) {
    ho = p.out_h();
    wo = p.out_w();
    cg = pk.cg;
    cg4 = pk.cg4;
    wp = (wo - 1) * p.stride_w + (p.kernel_w - 1) * p.dilation_w + 1;
    row_bytes = wp * p.kernel_h * cg4;
    in_place =
        p.kernel_h == 1 && p.pad_top == 0 && p.pad_bottom == 0 && p.pad_left == 0 && p.pad_right == 0 && cg % 4 == 0;
    if (in_place) {
      pixel_stride = p.stride_w * p.in_channels;
      const bool contiguous = cg == p.in_channels && p.dilation_w == 1;
      segments = contiguous ? 1 : p.kernel_w;
      quads = (contiguous ? p.kernel_w * cg : cg) / 4;
      seg_stride = p.dilation_w * p.in_channels;
      block_rows = ho;
    } else {
      pixel_stride = p.stride_w * p.kernel_h * cg4;
      segments = p.dilation_w == 1 ? 1 : p.kernel_w;
      quads = p.kernel_w * p.kernel_h * cg4 / 4 / segments;
      seg_stride = p.dilation_w * p.kernel_h * cg4;
      block_rows = std::clamp<int64_t>(kWindowBytes / std::max<int64_t>(row_bytes, 1), 1, ho);
    }
    w_seg_stride = p.kernel_h * cg4 * kS8Panel;
  }
  static constexpr int64_t kWindowBytes = 128 << 10;
  int64_t ho, wo, cg, cg4, wp, row_bytes;
  bool in_place;
  int64_t pixel_stride, segments, quads, seg_stride, block_rows, w_seg_stride;
  int64_t workspace_bytes_per_thread() const { return in_place ? 0 : block_rows * row_bytes; }
};

// Fills `n` window cells of cg4 bytes, `stride` bytes apart, from input pixels `step` bytes
// apart (cg bytes each, then cg4 - cg bytes of z_x), or all with z_x when src is null. Thin
// channel counts (a stem's 3) are byte loops: memcpy/memset calls of 3 and 1 bytes per cell
// made the window of ResNet-50's 7x7 stem cost more than its arithmetic.
inline void fill_cells(uint8_t* d, int64_t n, int64_t stride, const uint8_t* src, int64_t step, int64_t cg, int64_t cg4,
                       uint8_t zx) {
  if (cg4 <= 16) {
    for (int64_t x = 0; x < n; ++x, d += stride) {
      int64_t c = 0;
      if (src != nullptr)
        for (; c < cg; ++c) d[c] = src[x * step + c];
      for (; c < cg4; ++c) d[c] = zx;
    }
    return;
  }
  for (int64_t x = 0; x < n; ++x, d += stride) {
    if (src == nullptr) {
      std::memset(d, zx, static_cast<size_t>(cg4));
      continue;
    }
    std::memcpy(d, src + x * step, static_cast<size_t>(cg));
    if (cg4 > cg) std::memset(d + cg, zx, static_cast<size_t>(cg4 - cg));
  }
}

// The window row of output row oh (image `image`, group g) into dst [wp][Kh][cg4].
void transform_row(const ConvParams& p, const Geometry& geo, const uint8_t* image, int64_t g, int64_t oh, uint8_t zx,
                   uint8_t* dst) {
  const int64_t cg = geo.cg, cg4 = geo.cg4, x_stride = p.kernel_h * cg4;
  // Window columns [x0, x1) hold input columns [0, W).
  const int64_t x0 = std::min(p.pad_left, geo.wp), x1 = std::min(p.pad_left + p.in_w, geo.wp);
  for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
    const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
    uint8_t* d = dst + kh * cg4;
    if (ih < 0 || ih >= p.in_h) {
      fill_cells(d, geo.wp, x_stride, nullptr, 0, cg, cg4, zx);
      continue;
    }
    const uint8_t* row = image + ih * p.in_w * p.in_channels + g * cg;
    fill_cells(d, x0, x_stride, nullptr, 0, cg, cg4, zx);
    fill_cells(d + x0 * x_stride, x1 - x0, x_stride, row, p.in_channels, cg, cg4, zx);
    fill_cells(d + x1 * x_stride, geo.wp - x1, x_stride, nullptr, 0, cg, cg4, zx);
  }
}

// The panel's part of a tile's arguments.
void set_panel(S8TileArgs& a, const ConvPacking& pk, const uint8_t* packed, int64_t g, int64_t panel) {
  const int64_t i = pk.panel_index(g, panel);
  a.bias = reinterpret_cast<const int32_t*>(packed + pk.bias_offset) + i * kS8Panel;
  a.mult = reinterpret_cast<const float*>(packed + pk.mult_offset) + i * kS8Panel;
  a.weights = reinterpret_cast<const int8_t*>(packed + pk.weight_offset + i * pk.panel_weight_bytes);
  a.cols = static_cast<int>(std::min<int64_t>(kS8Panel, pk.cog - panel * kS8Panel));
}

void set_epilogue(S8TileArgs& a, const ConvHeader& h, const S8Residual* residual) {
  a.out_zero = h.out_zero;
  a.lo = h.lo;
  a.hi = h.hi;
  a.res = nullptr;
  if (residual != nullptr) {
    a.res_stride = residual->pixel_stride;
    a.res_zero = residual->zero;
    a.res_scale = residual->scale;
  }
}

void check_residual(const ConvParams& p, const S8Residual* r) {
  if (r == nullptr) return;
  const std::string at = where(p) + "residual: ";
  if (r->data == nullptr) throw std::invalid_argument(at + "data is null");
  if (r->pixel_stride < p.out_channels)
    throw std::invalid_argument(at + "pixel stride " + std::to_string(r->pixel_stride) + " is below the " +
                                std::to_string(p.out_channels) + " output channels");
  if (r->zero < 0 || r->zero > 255)
    throw std::invalid_argument(at + "zero point must be in 0..255, got " + std::to_string(r->zero));
  if (!std::isfinite(r->scale))
    throw std::invalid_argument(at + "scale must be finite, got " + std::to_string(r->scale));
}

}  // namespace

size_t s8_conv_packed_bytes(const ConvParams& p) {
  if (!p.is_valid()) throw std::invalid_argument(where(p) + "invalid parameters");
  return static_cast<size_t>(ConvPacking(p).bytes);
}

void s8_pack_conv(const ConvParams& p, const int8_t* weight_oihw, const S8ConvQuant& q, void* packed) {
  if (!p.is_valid()) throw std::invalid_argument(where(p) + "invalid parameters");
  check_quant(p, q, "INT8 convolution");
  const ConvPacking pk(p);
  uint8_t* base = static_cast<uint8_t*>(packed);
  std::memset(base, 0, static_cast<size_t>(pk.bytes));
  ConvHeader h{};
  h.magic = kConvMagic;
  h.in_zero = q.in_zero;
  h.out_zero = q.out_zero;
  h.lo = q.lo;
  h.hi = q.hi;
  h.groups = p.groups;
  h.cg = pk.cg;
  h.cog = pk.cog;
  h.kh = p.kernel_h;
  h.kw = p.kernel_w;
  std::memcpy(base, &h, sizeof h);
  const int64_t k = pk.cg * p.kernel_h * p.kernel_w;
  const std::string at = where(p);
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t j = 0; j < pk.cog; ++j) {
      const int64_t oc = g * pk.cog + j, panel = j / kS8Panel, col = j % kS8Panel, i = pk.panel_index(g, panel);
      const int8_t* w = weight_oihw + oc * k;  // [Cg][Kh][Kw]
      const int32_t bias = folded_bias(at, oc, w, k, q);
      std::memcpy(base + pk.bias_offset + (i * kS8Panel + col) * 4, &bias, 4);
      std::memcpy(base + pk.mult_offset + (i * kS8Panel + col) * 4, &q.multiplier[oc], 4);
      int8_t* dst = reinterpret_cast<int8_t*>(base + pk.weight_offset + i * pk.panel_weight_bytes);
      for (int64_t kw = 0; kw < p.kernel_w; ++kw)
        for (int64_t kh = 0; kh < p.kernel_h; ++kh)
          for (int64_t c = 0; c < pk.cg; ++c) {
            const int64_t kk = (kw * p.kernel_h + kh) * pk.cg4 + c;  // K index in window order
            dst[(kk / 4 * kS8Panel + col) * 4 + kk % 4] = w[(c * p.kernel_h + kh) * p.kernel_w + kw];
          }
    }
}

size_t s8_im2win_workspace_bytes(const ConvParams& p, int threads) {
  if (!p.is_valid()) throw std::invalid_argument(where(p) + "invalid parameters");
  const ConvPacking pk(p);
  return static_cast<size_t>(Geometry(p, pk).workspace_bytes_per_thread() * std::max(threads, 1));
}

void s8_im2win_conv(const ConvParams& p, const uint8_t* input, const void* packed, uint8_t* output, void* workspace,
                    int threads, const S8Residual* residual) {
  const ConvPacking pk(p);
  const ConvHeader& h = checked_header(p, packed, kConvMagic);
  check_residual(p, residual);
  const Geometry geo(p, pk);
  const S8TileKernels& uk = s8_tile_kernels(s8_isa());
  const uint8_t* pb = static_cast<const uint8_t*>(packed);
  const uint8_t zx = static_cast<uint8_t>(h.in_zero);
  const int64_t units = p.batch * p.groups * geo.ho, out_stride = p.out_stride();
  const int64_t image_bytes = p.in_h * p.in_w * p.in_channels;
  // Workspace slots are per thread of the team asked for; a smaller team uses the first ones.
  const int nt = std::max(1, std::min<int>(threads_for_work(threads, p.flops() / 2), static_cast<int>(units)));
  // Units [u_begin, u_end) on the thread of workspace slot `slot`.
  auto body = [&](int64_t u_begin, int64_t u_end, int slot) {
    uint8_t* slots = static_cast<uint8_t*>(workspace) + slot * geo.workspace_bytes_per_thread();
    S8TileArgs a{};
    set_epilogue(a, h, residual);
    a.segments = geo.segments;
    a.quads = geo.quads;
    a.tail = 0;
    a.seg_stride = geo.seg_stride;
    a.w_seg_stride = geo.w_seg_stride;
    a.out_stride = out_stride;
    const uint8_t* pixels[kS8MaxRows];
    a.pixels = pixels;
    for (int64_t u = u_begin; u < u_end;) {
      const int64_t oh0 = u % geo.ho, ng = u / geo.ho, n = ng / p.groups, g = ng % p.groups;
      const int64_t rows = std::min({geo.block_rows, u_end - u, geo.ho - oh0});
      const uint8_t* image = input + n * image_bytes;
      if (!geo.in_place)
        for (int64_t r = 0; r < rows; ++r) transform_row(p, geo, image, g, oh0 + r, zx, slots + r * geo.row_bytes);
      const int64_t npix = rows * geo.wo, tiles = ceil_div(npix, uk.max_rows);
      uint8_t* out0 = output + (n * geo.ho + oh0) * geo.wo * out_stride + g * pk.cog;
      const uint8_t* res0 =
          residual != nullptr ? residual->data + (n * geo.ho + oh0) * geo.wo * a.res_stride + g * pk.cog : nullptr;
      // Tile-major (a tile's pixels stay in L1 across every panel) while the group's weights
      // stay in L2; panel-major (one panel across the step's tiles) beyond.
      const bool tile_major = pk.panels * pk.panel_weight_bytes <= kTileMajorWeightBytes;
      for (int64_t i = 0; i < pk.panels * tiles; ++i) {
        const int64_t panel = tile_major ? i % pk.panels : i / tiles, tile = tile_major ? i / pk.panels : i % tiles;
        const int64_t p0 = npix * tile / tiles, p1 = npix * (tile + 1) / tiles;
        if (panel == 0 || !tile_major)
          for (int64_t px = p0; px < p1; ++px) {
            const int64_t r = px / geo.wo, ow = px % geo.wo;
            const uint8_t* start = geo.in_place ? image + (oh0 + r) * p.stride_h * p.in_w * p.in_channels + g * geo.cg
                                                : slots + r * geo.row_bytes;
            pixels[px - p0] = start + ow * geo.pixel_stride;
          }
        set_panel(a, pk, pb, g, panel);
        a.out = out0 + p0 * out_stride + panel * kS8Panel;
        if (res0 != nullptr) a.res = res0 + p0 * a.res_stride + panel * kS8Panel;
        uk.fn[p1 - p0](a);
      }
      u += rows;
    }
  };
  parallel_pieces(nt, units, pieces_for(nt, units, p.flops() / 8), body);  // INT8: ~4x the FP32 rate
}

void s8_indirect_conv(const ConvParams& p, const uint8_t* input, const void* packed, uint8_t* output, int threads,
                      const S8Residual* residual) {
  const ConvPacking pk(p);
  const ConvHeader& h = checked_header(p, packed, kConvMagic);
  check_residual(p, residual);
  const S8TileKernels& uk = s8_tile_kernels(s8_isa());
  const uint8_t* pb = static_cast<const uint8_t*>(packed);
  const int64_t ho = p.out_h(), wo = p.out_w(), npix = ho * wo, tiles = ceil_div(npix, uk.max_rows);
  const int64_t taps = p.kernel_h * p.kernel_w, units = p.batch * tiles, out_stride = p.out_stride();
  const std::vector<uint8_t> zero_row(static_cast<size_t>(p.in_channels), static_cast<uint8_t>(h.in_zero));
  const int nt = std::max(1, std::min<int>(threads_for_work(threads, p.flops() / 2), static_cast<int>(units)));
  auto body = [&](int64_t u_begin, int64_t u_end, int) {
    std::vector<const uint8_t*> ptrs(static_cast<size_t>(taps * uk.max_rows));
    S8TileArgs a{};
    set_epilogue(a, h, residual);
    a.pixels = ptrs.data();
    a.segments = taps;
    a.quads = pk.cg / 4;
    a.tail = static_cast<int>(pk.cg % 4);
    a.pixels_stride = uk.max_rows;
    a.w_seg_stride = pk.cg4 * kS8Panel;
    a.out_stride = out_stride;
    for (int64_t u = u_begin; u < u_end; ++u) {
      const int64_t n = u / tiles, tile = u % tiles, p0 = npix * tile / tiles, p1 = npix * (tile + 1) / tiles;
      const uint8_t* image = input + n * p.in_h * p.in_w * p.in_channels;
      for (int64_t px = p0; px < p1; ++px) {
        const int64_t oy = px / wo, ox = px % wo;
        for (int64_t kw = 0; kw < p.kernel_w; ++kw)
          for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
            const int64_t iy = oy * p.stride_h - p.pad_top + kh * p.dilation_h;
            const int64_t ix = ox * p.stride_w - p.pad_left + kw * p.dilation_w;
            const bool inside = iy >= 0 && iy < p.in_h && ix >= 0 && ix < p.in_w;
            ptrs[(kw * p.kernel_h + kh) * uk.max_rows + (px - p0)] =
                inside ? image + (iy * p.in_w + ix) * p.in_channels : zero_row.data();
          }
      }
      uint8_t* out0 = output + (n * npix + p0) * out_stride;
      const uint8_t* res0 = residual != nullptr ? residual->data + (n * npix + p0) * a.res_stride : nullptr;
      for (int64_t g = 0; g < p.groups; ++g) {
        // The zero row is C bytes: offset by g * Cg it still holds the Cg bytes read.
        a.pixel_offset = g * pk.cg;
        for (int64_t panel = 0; panel < pk.panels; ++panel) {
          set_panel(a, pk, pb, g, panel);
          a.out = out0 + g * pk.cog + panel * kS8Panel;
          if (res0 != nullptr) a.res = res0 + g * pk.cog + panel * kS8Panel;
          uk.indirect[p1 - p0](a);
        }
      }
    }
  };
  parallel_pieces(nt, units, pieces_for(nt, units, p.flops() / 8), body);  // INT8: ~4x the FP32 rate
}

}  // namespace cpu
}  // namespace winfer
