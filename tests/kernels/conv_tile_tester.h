// One call of a convolution micro-kernel (kernels/cpu/ukernel_conv.h) on random data, checked
// against a float64 sum: the tester of both the im2win and the indirect micro-kernel tests. In
// the manner of XNNPACK's GemmMicrokernelTester: a case sets what it is about, leaves the rest
// at the defaults, and calls test() with an ISA's kernel table, e.g.
//
//   ConvTileTester().rows(14).vecs(2).cols(31).segments(3).seg_len(5).seg_stride(11)
//       .residual(true).activation(kRelu6).test(cpu::tile_kernels(isa));
//
// The pixels are found the way one of the two algorithms finds them (TileArgs): im2win's, one
// pointer per pixel with its segments seg_stride floats apart (the pixels pixel_step floats
// apart, so that their runs overlap as in the window tensor); or indirect(true), one pointer per
// pixel and segment (tap) from a [tap][pixels_stride] buffer, every third one at a zero vector,
// each offset by pixel_offset. The weights are one panel, kPanel wide or narrower
// (panel_width: the narrow kernels), exactly as large as the rows the call reads, so that a
// sanitizer build sees a read past them; a call covers `cols` columns from col0. The kernel is
// the one TileKernels::pick gives, as the algorithms call it.
//
// Checked: every output against the float64 sum (bias, residual, activation), every float
// around the tile (columns past `cols`, the row padding) unchanged, a separate residual
// unchanged. Inputs, weights, bias and residual are random, never zeros: a kernel that drops a
// term shows.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/conv_indirect.h"
#include "kernels/common/conv_params.h"
#include "kernels/cpu/ukernel_conv.h"
#include "reference.h"
#include "test_util.h"

namespace winfer {
namespace test {

class ConvTileTester {
 public:
  // The tile: `rows` pixels (MR) x `vecs` vectors, of which the call stores `cols` columns
  // (0: all of them, vecs * lanes).
  ConvTileTester& rows(int v) {
    rows_ = v;
    return *this;
  }
  ConvTileTester& vecs(int v) {
    vecs_ = v;
    return *this;
  }
  ConvTileTester& cols(int v) {
    cols_ = v;
    return *this;
  }
  // The weight panel: its width (kPanel, or a group's narrower last panel) and the call's
  // first column in it.
  ConvTileTester& panel_width(int64_t v) {
    panel_width_ = v;
    return *this;
  }
  ConvTileTester& col0(int64_t v) {
    col0_ = v;
    return *this;
  }
  // K = segments * seg_len; each segment's weights start w_seg_rows panel rows after the
  // previous one's (default seg_len: contiguous; more leaves rows the call skips, as im2win does
  // for taps in the padding).
  ConvTileTester& segments(int64_t v) {
    segments_ = v;
    return *this;
  }
  ConvTileTester& seg_len(int64_t v) {
    seg_len_ = v;
    return *this;
  }
  ConvTileTester& w_seg_rows(int64_t v) {
    w_seg_rows_ = v;
    return *this;
  }
  // im2win's pixels: floats from one segment of a pixel to the next (default seg_len), and from
  // one pixel to the next.
  ConvTileTester& seg_stride(int64_t v) {
    seg_stride_ = v;
    return *this;
  }
  ConvTileTester& pixel_step(int64_t v) {
    pixel_step_ = v;
    return *this;
  }
  // im2win's left/right padding (TileArgs::skip_first, skip_last): the first pixel takes no
  // part in the first `skip_first` K steps, the last pixel none in the last `skip_last`. The
  // pixels' values there are random like the rest: a kernel that does not skip them shows.
  ConvTileTester& skip_first(int64_t v) {
    skip_first_ = v;
    return *this;
  }
  ConvTileTester& skip_last(int64_t v) {
    skip_last_ = v;
    return *this;
  }
  // The indirect entry: pointers `pixels_stride` apart per tap (default rows), offset by
  // pixel_offset floats (a group's first channel).
  ConvTileTester& indirect(bool v) {
    indirect_ = v;
    return *this;
  }
  ConvTileTester& pixels_stride(int64_t v) {
    pixels_stride_ = v;
    return *this;
  }
  ConvTileTester& pixel_offset(int64_t v) {
    pixel_offset_ = v;
    return *this;
  }
  // The epilogue: bias or none, a residual (a separate buffer, or the output itself as when the
  // planner lets the output take over the residual's storage), the activation.
  ConvTileTester& bias(bool v) {
    bias_ = v;
    return *this;
  }
  ConvTileTester& residual(bool v) {
    residual_ = v;
    return *this;
  }
  ConvTileTester& residual_in_place(bool v) {
    residual_in_place_ = v;
    if (v) residual_ = true;
    return *this;
  }
  ConvTileTester& activation(Activation v) {
    activation_ = v;
    return *this;
  }
  // A prefetch share (TileArgs::prefetch): a hint that must not change any result.
  ConvTileTester& prefetch(bool v) {
    prefetch_ = v;
    return *this;
  }
  // TileArgs::weights_in_l2: the kernels then do not prefetch the weight rows (AVX-512's
  // assembly loop of a 14-pixel row tile has a loop of its own for each): a hint.
  ConvTileTester& weights_in_l2(bool v) {
    weights_in_l2_ = v;
    return *this;
  }
  // Several tiles in one call (TileArgs::tiles): tile t's pixels rows * pixel_step floats after
  // tile t-1's (as in an in-place 1x1 run), its outputs rows output rows after; im2win only.
  ConvTileTester& tiles(int64_t v) {
    tiles_ = v;
    return *this;
  }
  ConvTileTester& seed(uint32_t v) {
    seed_ = v;
    return *this;
  }

  std::string describe(const cpu::TileKernels& uk) const {
    std::ostringstream s;
    s << "isa " << uk.isa << (indirect_ ? " indirect" : " im2win") << " tile " << rows_ << "x" << vecs_ << " cols "
      << cols(uk) << " col0 " << col0_ << " panel " << panel_width_ << " segments " << segments_ << "x" << seg_len_
      << " weight rows apart " << w_seg_rows() << " stride " << (indirect_ ? pixels_stride() : seg_stride())
      << (indirect_ ? " offset " + std::to_string(pixel_offset_) : std::string()) << (bias_ ? " bias" : " nobias")
      << (residual_ ? (residual_in_place_ ? " residual in place" : " residual") : "") << (prefetch_ ? " prefetch" : "")
      << (weights_in_l2_ ? " weights in L2" : "") << " skip first " << skip_first_ << " last " << skip_last_
      << " tiles " << tiles_ << " act " << activation_name(activation_);
    return s.str();
  }

  void test(const cpu::TileKernels& uk) const {
    INFO(describe(uk));
    const int n_cols = cols(uk);
    const int64_t width = panel_width_;
    // The kernel's contract: vecs = ceil(cols / lanes); the columns within the panel, and a wide
    // panel's whole vectors too (only the narrow kernels mask their last one).
    REQUIRE(rows_ >= 1);
    REQUIRE(rows_ <= uk.max_rows);
    REQUIRE(tiles_ >= 1);
    REQUIRE((tiles_ == 1 || !indirect_));
    const int total_rows = static_cast<int>(rows_ * tiles_);  // pixels over all the call's tiles
    REQUIRE(vecs_ >= 1);
    REQUIRE(vecs_ <= uk.max_vecs);
    REQUIRE(n_cols > (vecs_ - 1) * uk.lanes);
    REQUIRE(n_cols <= vecs_ * uk.lanes);
    REQUIRE(width <= cpu::kPanel);
    REQUIRE(col0_ + n_cols <= width);
    if (width == cpu::kPanel) REQUIRE(col0_ + vecs_ * uk.lanes <= width);

    const int64_t weight_rows = std::max<int64_t>(segments_ - 1, 0) * w_seg_rows() + seg_len_;
    const std::vector<float> weights = random_floats(static_cast<size_t>(weight_rows * width), seed_ + 1);
    const std::vector<float> bias = random_floats(static_cast<size_t>(width), seed_ + 2);
    const int64_t out_stride = cpu::kPanel + 7;
    constexpr float kSentinel = 1234.5f;
    std::vector<float> out(static_cast<size_t>(total_rows * out_stride), kSentinel);
    const std::vector<float> residual = random_floats(out.size(), seed_ + 3, -2.f, 2.f);
    if (residual_in_place_)
      for (int m = 0; m < total_rows; ++m)
        std::copy_n(residual.begin() + m * out_stride, n_cols, out.begin() + m * out_stride);
    Pixels px = make_pixels();

    cpu::TileArgs a;
    a.pixels = px.pointers.data();
    a.segments = segments_;
    a.seg_len = seg_len_;
    a.seg_stride = indirect_ ? 0 : seg_stride();
    a.w_seg_stride = w_seg_rows() * width;
    a.w_row_stride = width;
    a.weights = weights.data() + col0_;
    a.bias = bias_ ? bias.data() + col0_ : nullptr;
    a.out = out.data();
    a.out_stride = out_stride;
    a.residual = !residual_ ? nullptr : residual_in_place_ ? out.data() : residual.data();
    a.cols = n_cols;
    a.clip = cpu::activation_clamp(activation_);
    a.pixels_stride = indirect_ ? pixels_stride() : 0;
    a.pixel_offset = indirect_ ? pixel_offset_ : 0;
    REQUIRE((!indirect_ || (skip_first_ == 0 && skip_last_ == 0)));
    a.skip_first = skip_first_;
    a.skip_last = skip_last_;
    a.tiles = tiles_;
    a.tile_pixel_step = rows_ * pixel_step_;
    a.tile_out_step = rows_ * out_stride;
    a.weights_in_l2 = weights_in_l2_;
    if (prefetch_)
      cpu::set_prefetch_share(a, weights.data(), static_cast<int64_t>(weights.size() * sizeof(float)), 0, 1,
                              segments_ * seg_len_);
    const cpu::TileFn kernel = uk.pick(rows_, vecs_, width, indirect_);
    REQUIRE(static_cast<bool>(kernel));
    kernel(a);

    const int64_t terms = segments_ * seg_len_ + 1 + (residual_ ? 1 : 0);
    for (int m = 0; m < total_rows; ++m) {
      INFO("pixel ", m);
      const int tile_row = m % rows_;  // the pixel's place in its tile
      std::vector<double> want(static_cast<size_t>(n_cols)), abs_sum(want.size());
      for (int j = 0; j < n_cols; ++j) {
        double sum = bias_ ? bias[static_cast<size_t>(col0_ + j)] : 0.0, abs = std::abs(sum);
        for (int64_t s = 0; s < segments_; ++s) {
          const float* x = px.segment(m, s);
          const float* w = weights.data() + s * w_seg_rows() * width + col0_ + j;
          for (int64_t l = 0; l < seg_len_; ++l) {
            const int64_t step = s * seg_len_ + l;  // the K step, counted over the segments
            if (tile_row == 0 && step < skip_first_) continue;
            if (tile_row == rows_ - 1 && step >= segments_ * seg_len_ - skip_last_) continue;
            const double xw = static_cast<double>(x[l]) * w[l * width];
            sum += xw;
            abs += std::abs(xw);
          }
        }
        if (residual_) {
          const double r = residual[static_cast<size_t>(m * out_stride + j)];
          sum += r;
          abs += std::abs(r);
        }
        want[static_cast<size_t>(j)] = ref::activate(sum, activation_);
        abs_sum[static_cast<size_t>(j)] = abs;
      }
      check_close(out.data() + m * out_stride, want, abs_sum, terms, "tile vs float64");
      for (int64_t j = n_cols; j < out_stride; ++j) {
        INFO("column ", j);
        CHECK(out[static_cast<size_t>(m * out_stride + j)] == kSentinel);
      }
    }
    if (residual_ && !residual_in_place_) CHECK(residual == random_floats(out.size(), seed_ + 3, -2.f, 2.f));
  }

 private:
  // Where the call finds its pixels, and the float64 side's view of them.
  struct Pixels {
    std::vector<float> input, zero;
    std::vector<const float*> pointers;
    bool indirect = false;
    int64_t seg_stride = 0, pixels_stride = 0, offset = 0;
    const float* segment(int m, int64_t s) const {
      return indirect ? pointers[static_cast<size_t>(s * pixels_stride + m)] + offset : pointers[m] + s * seg_stride;
    }
  };

  Pixels make_pixels() const {
    Pixels px;
    px.indirect = indirect_;
    if (!indirect_) {
      // rows pointers pixel_step floats apart into one buffer exactly as long as they read.
      px.seg_stride = seg_stride();
      const int64_t span = std::max<int64_t>(segments_ - 1, 0) * seg_stride() + seg_len_;
      const int64_t total_rows = rows_ * tiles_;
      px.input = random_floats(static_cast<size_t>((total_rows - 1) * pixel_step_ + span), seed_);
      for (int64_t m = 0; m < total_rows; ++m) px.pointers.push_back(px.input.data() + m * pixel_step_);
      return px;
    }
    // segments x pixels_stride slots, those past `rows` null (never read); every third at the
    // zero vector, the others at one of 9 input pixels.
    px.pixels_stride = pixels_stride();
    px.offset = pixel_offset_;
    const int64_t pixel_floats = pixel_offset_ + seg_len_, sources = 9;
    px.input = random_floats(static_cast<size_t>(sources * pixel_floats), seed_);
    px.zero.assign(static_cast<size_t>(pixel_floats), 0.f);
    px.pointers.assign(static_cast<size_t>(std::max<int64_t>(segments_ * px.pixels_stride, 1)), nullptr);
    for (int64_t t = 0; t < segments_; ++t)
      for (int m = 0; m < rows_; ++m) {
        const int64_t k = t * px.pixels_stride + m;
        px.pointers[static_cast<size_t>(k)] =
            k % 3 == 2 ? px.zero.data() : px.input.data() + (k * 5 % sources) * pixel_floats;
      }
    return px;
  }

  int cols(const cpu::TileKernels& uk) const { return cols_ > 0 ? cols_ : vecs_ * uk.lanes; }
  int64_t w_seg_rows() const { return w_seg_rows_ >= 0 ? w_seg_rows_ : seg_len_; }
  int64_t seg_stride() const { return seg_stride_ >= 0 ? seg_stride_ : seg_len_; }
  int64_t pixels_stride() const { return pixels_stride_ > 0 ? pixels_stride_ : rows_; }

  int rows_ = 1, vecs_ = 1, cols_ = 0;
  int64_t panel_width_ = cpu::kPanel, col0_ = 0;
  int64_t segments_ = 1, seg_len_ = 1, w_seg_rows_ = -1;
  int64_t seg_stride_ = -1, pixel_step_ = 5;
  bool indirect_ = false;
  int64_t pixels_stride_ = 0, pixel_offset_ = 0;
  bool bias_ = true, residual_ = false, residual_in_place_ = false;
  Activation activation_ = Activation::kNone;
  bool prefetch_ = false, weights_in_l2_ = false;
  int64_t skip_first_ = 0, skip_last_ = 0;
  int64_t tiles_ = 1;
  uint32_t seed_ = 1;
};

// The table's shape: what the algorithms assume of every ISA's (tile sizes within the arrays,
// a panel covered by whole column blocks, a tile within the indirection buffer's).
inline void check_tile_table(const cpu::TileKernels& uk, cpu::Isa isa) {
  CHECK(std::string(uk.isa) == isa_name(isa));
  REQUIRE(uk.max_rows >= 1);
  REQUIRE(uk.max_rows <= cpu::kMaxTileRows);
  REQUIRE(uk.max_rows <= cpu::kIndirectTile);
  REQUIRE(uk.max_vecs >= 1);
  REQUIRE(uk.max_vecs <= cpu::kMaxTileVecs);
  REQUIRE(cpu::kPanel % (uk.max_vecs * uk.lanes) == 0);
}

// Every tile shape (rows x vecs) of every ISA this machine runs, each with the column counts a
// call may have (a full block, one column into its last vector, one short of full), through
// the cases below; `indirect` picks the entry. Per shape:
//   - no segment (a window entirely in the padding, a tile of zero taps): the bias alone;
//   - one long contiguous run (im2win with dilation 1; one tap of 37 channels, the pointers
//     packed tightly), at the panel's start and at its end;
//   - three strided segments with gaps between their weight rows (dilation along W, taps in
//     the padding skipped), at the panel's end; indirect: offset by a group's channels;
//   - nine taps of 7 channels in a 14-wide pointer buffer (indirect), or nine segments with
//     gaps between them (im2win);
//   - a residual, separate or in place, with a prefetch share, every activation;
//   - a narrow last panel: its last block ending at the panel row's end, and a panel that is
//     one block, with and without a residual.
// Bias and activation alternate between shapes so that each meets each.
inline void check_every_tile_shape(bool indirect, uint32_t seed) {
  constexpr Activation kActs[] = {Activation::kNone, Activation::kRelu, Activation::kRelu6};
  for (cpu::Isa isa : runnable_isas()) {
    const cpu::TileKernels& uk = cpu::tile_kernels(isa);
    check_tile_table(uk, isa);
    for (int rows = 1; rows <= uk.max_rows; ++rows)
      for (int vecs = 1; vecs <= uk.max_vecs; ++vecs) {
        const int width = vecs * uk.lanes;
        for (int cols : {width, (vecs - 1) * uk.lanes + 1, width - 1}) {
          if (cols < 1) continue;
          const bool odd = (rows + vecs + cols) % 2 == 1;
          const Activation act = kActs[(rows + cols) % 3];
          ConvTileTester t;
          t.rows(rows).vecs(vecs).cols(cols).indirect(indirect);
          if (cols == width)
            ConvTileTester(t).segments(0).seg_len(5).bias(true).activation(Activation::kRelu).seed(seed += 3).test(uk);
          ConvTileTester(t)
              .segments(1)
              .seg_len(37)
              .bias(odd)
              .weights_in_l2(odd)
              .activation(odd ? Activation::kRelu6 : Activation::kNone)
              .seed(seed += 3)
              .test(uk);
          // Long segments (several 16-step groups and a rest: AVX-512's assembly row loop) with
          // a prefetch share, the weight rows prefetched or not.
          ConvTileTester(t)
              .segments(2)
              .seg_len(40)
              .seg_stride(45)
              .w_seg_rows(41)
              .prefetch(true)
              .weights_in_l2(!odd)
              .bias(!odd)
              .residual(odd)
              .activation(act)
              .seed(seed += 3)
              .test(uk);
          ConvTileTester(t)
              .col0(cpu::kPanel - width)
              .segments(1)
              .seg_len(37)
              .bias(!odd)
              .activation(odd ? Activation::kNone : Activation::kRelu6)
              .seed(seed += 3)
              .test(uk);
          ConvTileTester(t)
              .col0(cpu::kPanel - width)
              .segments(3)
              .seg_len(5)
              .seg_stride(11)
              .w_seg_rows(7)
              .pixels_stride(cpu::kIndirectTile)
              .pixel_offset(3)
              .bias(!odd)
              .activation(odd ? Activation::kNone : Activation::kRelu)
              .seed(seed += 3)
              .test(uk);
          ConvTileTester(t)
              .segments(9)
              .seg_len(7)
              .seg_stride(10)
              .w_seg_rows(odd ? 7 : 8)
              .pixels_stride(cpu::kIndirectTile)
              .pixel_offset(odd ? 3 : 0)
              .bias(odd)
              .activation(odd ? Activation::kRelu : Activation::kNone)
              .seed(seed += 3)
              .test(uk);
          ConvTileTester(t)
              .segments(2)
              .seg_len(9)
              .seg_stride(13)
              .pixel_offset(2)
              .bias(!odd)
              .residual(true)
              .residual_in_place(rows % 2 == 0)
              .prefetch(true)
              .activation(act)
              .seed(seed += 3)
              .test(uk);
          if (!indirect) {
            // Taps in the left/right padding skipped: a 3x3 row's first/last column in one
            // contiguous run (K = 3 taps of 12), one tap per segment (a top row: segments
            // = kw), cuts inside a segment with a prefetch share, and a one-pixel tile at
            // both edges whose skips overlap (Wo = 1).
            ConvTileTester(t)
                .segments(1)
                .seg_len(36)
                .skip_first(12)
                .skip_last(odd ? 0 : 12)
                .bias(odd)
                .activation(act)
                .seed(seed += 3)
                .test(uk);
            ConvTileTester(t)
                .segments(3)
                .seg_len(5)
                .seg_stride(11)
                .w_seg_rows(7)
                .skip_first(odd ? 0 : 5)
                .skip_last(5)
                .residual(odd)
                .activation(act)
                .seed(seed += 3)
                .test(uk);
            ConvTileTester(t)
                .segments(3)
                .seg_len(6)
                .seg_stride(9)
                .skip_first(8)
                .skip_last(4)
                .prefetch(true)
                .bias(!odd)
                .activation(act)
                .seed(seed += 3)
                .test(uk);
            ConvTileTester(t).segments(1).seg_len(10).skip_first(7).skip_last(6).seed(seed += 3).test(uk);
            // Padding pieces of 16 steps and more (AVX-512's assembly row loop without its first
            // pixel, its last, or both where the two skips overlap), weight rows prefetched or not.
            ConvTileTester(t)
                .segments(1)
                .seg_len(60)
                .skip_first(20)
                .skip_last(21)
                .weights_in_l2(odd)
                .residual(!odd)
                .activation(act)
                .seed(seed += 3)
                .test(uk);
            ConvTileTester(t)
                .segments(1)
                .seg_len(45)
                .skip_first(35)
                .skip_last(33)
                .weights_in_l2(!odd)
                .bias(odd)
                .seed(seed += 3)
                .test(uk);
            // Several tiles per call (an in-place 1x1 run): a residual (separate or in place),
            // the narrow entry, and skips, which apply to every tile alike.
            ConvTileTester(t)
                .tiles(3)
                .segments(1)
                .seg_len(odd ? 16 : 37)
                .pixel_step(odd ? 16 : 37)
                .residual(true)
                .residual_in_place(rows % 2 == 1)
                .bias(odd)
                .activation(act)
                .seed(seed += 3)
                .test(uk);
            ConvTileTester(t)
                .tiles(2)
                .segments(2)
                .seg_len(6)
                .seg_stride(9)
                .skip_first(4)
                .skip_last(odd ? 3 : 0)
                .seed(seed += 3)
                .test(uk);
            if (cols < cpu::kPanel)
              ConvTileTester(t)
                  .panel_width(cols)
                  .tiles(4)
                  .segments(1)
                  .seg_len(24)
                  .pixel_step(24)
                  .bias(!odd)
                  .residual(odd)
                  .activation(act)
                  .seed(seed += 3)
                  .test(uk);
            if (cols < cpu::kPanel)
              ConvTileTester(t)
                  .panel_width(cols)
                  .segments(1)
                  .seg_len(27)
                  .skip_first(9)
                  .skip_last(9)
                  .residual(true)
                  .activation(act)
                  .seed(seed += 3)
                  .test(uk);
          }
          if (cols < cpu::kPanel) {
            ConvTileTester(t)
                .panel_width(cpu::kPanel - 1)
                .col0(cpu::kPanel - 1 - cols)
                .segments(3)
                .seg_len(5)
                .seg_stride(11)
                .w_seg_rows(7)
                .pixels_stride(cpu::kIndirectTile)
                .pixel_offset(1)
                .bias(odd)
                .residual(odd)
                .activation(act)
                .seed(seed += 3)
                .test(uk);
            ConvTileTester(t)
                .panel_width(cols)
                .segments(1)
                .seg_len(19)
                .bias(!odd)
                .residual(!odd)
                .activation(kActs[(rows + cols + 1) % 3])
                .seed(seed += 3)
                .test(uk);
          }
        }
      }
  }
}

}  // namespace test
}  // namespace winfer
