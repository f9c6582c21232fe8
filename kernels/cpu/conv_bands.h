// A convolution whose output only a row-windowed consumer reads (a max pooling, a depthwise
// convolution), computed band by band so that the convolution's full output never exists: for
// each image, the consumer's output rows are taken in groups; the convolution rows a group's
// windows read are computed by the algorithm itself on a sub-problem (the input rows they
// read, with the padding that falls inside the band) into a band buffer in the workspace, and
// the consumer reads them from there while they are in cache.
//
// Rows that two groups share (windows overlap when the consumer's kernel > its stride) are
// computed once: they move to the top of the buffer for the next group.
//
// When one image's whole convolution output fits in a band, a band holds several images (as
// many as fit, at most half the batch): a small layer (ShuffleNet's stages 3 and 4, 14x14 and
// 7x7) then runs as a few calls with the work of several images each instead of one call per
// image, which on two threads split into pieces too small to scale (stage 4's pair 1.26x at
// batch 8 before).
//
// A band's size depends on the threads that compute and read it (BandSizing): a band one
// thread runs alone (a one-thread session, or one run of a batch run side by side) is 256 KiB,
// which stays in that core's L2 next to the algorithm's scratch and the weights; a band the
// threads share is 1 MiB, so that each thread's part is not too small to be worth a parallel
// call (EfficientNet-B0 at batch 1 on 2 threads ran 1.07x the time with 256 KiB bands, 1.03x
// with 512 KiB; on one thread 256 KiB ran as fast or up to 3% faster, docs/PERFORMANCE.md
// session 30, and holds a quarter of the memory).
//
// On several threads the bands are not split between the threads (two parallel calls per band,
// each a few microseconds of work: MobileNetV2's fused pairs ran no faster on 2 threads than on
// 1): each thread takes whole images, or contiguous ranges of an image's consumer rows, and runs
// their bands alone in a "lane" of the workspace of its own: kLanes lanes of band_bytes / kLanes
// where an image takes several bands, one lane per image of a band of whole images (at most
// kLanes), each with its scratch; no more lanes than the session has threads, and none on one
// thread (its workspace would hold lanes no run uses). Rows that two ranges' windows share are
// computed by both.
//
// Every convolution row is computed by the same algorithm, reading the same taps, so the
// result is the whole convolution's bit for bit (for algorithms that compute a pixel the same
// way whatever the rows around it or the batch).
//
// Users: ConvPool (kernels/cpu/conv_pool.h) and ConvThenConv (kernels/cpu/conv_then_conv.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>

#include "kernels/cpu/conv_algorithm.h"
#include "kernels/cpu/cpu_caches.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/thread_pool.h"

namespace winfer {

// How the consumer reads the convolution's output along H: its window and its output rows.
struct RowWindow {
  int64_t kernel = 1, stride = 1, pad_top = 0, dilation = 1;
  int64_t out_rows = 0;
};

// The rows [top, bottom) that the windows of output rows [a, b) read along H (kernel, stride,
// top padding, dilation); what lies outside [0, input rows) is padding.
struct RowSpan {
  int64_t top, bottom;
};
inline RowSpan window_rows(int64_t a, int64_t b, int64_t kernel, int64_t stride, int64_t pad_top, int64_t dilation) {
  return {a * stride - pad_top, (b - 1) * stride - pad_top + (kernel - 1) * dilation + 1};
}

// What a layer's bands are sized for: the most threads that will run them (the session's) and
// the bytes of a band (0: the default for those threads, ConvBands::default_band_bytes).
struct BandSizing {
  int threads = 1;
  int64_t band_bytes = 0;
};

class ConvBands {
 public:
  // A band the threads share. Stays in L2 from the write to the read. VGG16 conv1_2 under a
  // pooling: 8 pooled rows = 16 rows of 224 x 64 floats, 896 KiB.
  static constexpr int64_t kSharedBandBytes = 1 << 20;
  // A band one thread runs alone (the header says why).
  static constexpr int64_t kOneThreadBandBytes = 256 << 10;
  static int64_t default_band_bytes(int threads) { return threads <= 1 ? kOneThreadBandBytes : kSharedBandBytes; }
  // Most lanes a workspace holds for threads that run bands on their own: 2 to lane_count_
  // threads take a lane each; more split each band between them.
  static constexpr int kLanes = 4;

  // One group of consumer rows [o0, o1): the convolution rows its windows read are [r0, r1),
  // of which [r0, kept) are still in the buffer from the previous group.
  struct Band {
    int64_t o0, o1, r0, kept, r1;
  };

  // `conv` is the whole layer (any batch). As many consumer rows per band as keep a band's
  // convolution rows within the sizing's band bytes (at least one), or the more the algorithm
  // asks for (ConvAlgorithm::band_rows: winograd's block of tiles). run() takes any thread
  // count; more threads than sizing.threads split each band between them instead of lanes.
  ConvBands(const ConvAlgorithm& algorithm, const ConvParams& conv, const RowWindow& consumer, BandSizing sizing)
      : algorithm_(algorithm), conv_(conv), consumer_(consumer) {
    const int64_t band_bytes = sizing.band_bytes > 0 ? sizing.band_bytes : default_band_bytes(sizing.threads);
    const int max_lanes = std::min(kLanes, sizing.threads);
    const int64_t row_bytes = conv_.out_w() * conv_.out_channels * int64_t{sizeof(float)};
    rows_per_band_ = algorithm_band_rows(band_bytes / (row_bytes * consumer_.stride));

    // Whole images per band: only when the consumer reads every convolution row and those read
    // every input row (a batch of images then keeps the input's and the output's image strides).
    const RowSpan read =
        window_rows(0, consumer_.out_rows, consumer_.kernel, consumer_.stride, consumer_.pad_top, consumer_.dilation);
    if (rows_per_band_ == consumer_.out_rows && read.top <= 0 && read.bottom >= conv_.out_h() &&
        rows_problem(0, conv_.out_h()).in_h == conv_.in_h) {
      // At most half the batch: the band then stays at most half the convolution's whole
      // output, which the pair exists not to store.
      images_per_band_ =
          std::clamp<int64_t>(band_bytes / std::max<int64_t>(1, conv_.out_h() * row_bytes), 1, (conv_.batch + 1) / 2);
    }
    int64_t rows = 0, lane_rows = 0, workspace = 0;
    const auto measure = [&](const Band& b, int64_t images, int64_t* most_rows) {
      *most_rows = std::max(*most_rows, b.r1 - b.r0);
      if (b.r1 > b.kept)
        workspace = std::max<int64_t>(workspace, algorithm_.workspace_bytes(rows_problem(b.kept, b.r1, images)));
    };
    for_each_band([&](const Band& b) { measure(b, images_per_band_, &rows); });
    // Lanes where they hold about what one band does: an image of several bands gets kLanes
    // lanes of a kLanes-th of the band's rows; a band of several whole images gets a lane per
    // image (at most kLanes), each lane one image, where the weights stay in L2 (a lane reads
    // them once per image: VGG16's conv5_3, 9.4 MB, read 8 times instead of 4 at batch 8 ran
    // 3% slower). A band of one whole image gets two lanes where the batch gives each of two
    // threads whole images (at least 4 images): EfficientNet's expand outputs of 0.5-0.75 MiB per
    // image (28x28x240, 14x14x672) ran 8-15% slower at batch 8 on 2 threads than the layers
    // unfused while each band's four calls (convolution, SiLU, depthwise, SiLU) were split
    // between the threads; with a lane per thread, 0-3%. It costs a second band of workspace.
    // Otherwise a single image in one band keeps splitting its band between the threads.
    // A lane's bands are no smaller than the algorithm's smallest (ConvAlgorithm::band_rows);
    // where that is a whole band, lanes would only split the band's work less evenly.
    const int64_t least_rows = algorithm_band_rows(1);
    if (max_lanes < 2) {
      // One thread: no lanes.
    } else if (images_per_band_ == 1 && rows_per_band_ < consumer_.out_rows &&
               (least_rows == 1 || least_rows < rows_per_band_)) {
      lane_rows_per_band_ = std::max<int64_t>(least_rows, rows_per_band_ / kLanes);
      lane_count_ = max_lanes;
    } else if (rows_per_band_ == consumer_.out_rows && (images_per_band_ > 1 || lane_splits(2) == 1) &&
               int64_t(algorithm_.packed_weight_bytes(conv_)) <= cpu::l2_weight_bytes()) {
      lane_rows_per_band_ = consumer_.out_rows;
      lane_count_ = static_cast<int>(std::clamp<int64_t>(images_per_band_, 2, max_lanes));
    }
    for_each_lane_band([&](const Band& b) { measure(b, 1, &lane_rows); });
    // Rounded to 64 bytes: the scratch after the band keeps the arena's alignment.
    band_floats_ = static_cast<size_t>((images_per_band_ * rows * row_floats() + 15) / 16 * 16);
    lane_band_floats_ = static_cast<size_t>((lane_rows * row_floats() + 15) / 16 * 16);
    scratch_bytes_ = static_cast<size_t>(workspace);
  }

  // The consumer may need scratch of its own while it reads a band: it shares the region the
  // convolution's sub-problems use (they never run at the same time).
  void reserve_scratch(size_t bytes) { scratch_bytes_ = std::max(scratch_bytes_, bytes); }
  // Band buffer plus the scratch, or the lanes, whichever is larger.
  size_t workspace_bytes() const {
    const size_t one = (band_floats_ + scratch_floats()) * sizeof(float);
    return lanes() ? std::max(one, lane_count_ * lane_bytes()) : one;
  }
  int64_t row_floats() const { return conv_.out_w() * conv_.out_channels; }
  // Images a band holds: 1 unless one image's whole convolution output fits in a band. When
  // more, every band covers whole images (one band per group of images).
  int64_t images_per_band() const { return images_per_band_; }

  // f(band) for one image's groups of consumer rows, in order.
  template <class F>
  void for_each_band(F f) const {
    for_each_band_of(0, consumer_.out_rows, rows_per_band_, f);
  }

  // f(band) for every band a lane may run (of one image): every band of every range of
  // consumer rows that run_lanes() cuts on 2 to lane_count_ threads. (Every one: a range's last
  // band may be shorter, and a shorter sub-problem may need more scratch: im2win's window
  // blocks of 9 rows are larger than those of 16.)
  template <class F>
  void for_each_lane_band(F f) const {
    for (int threads = 2; threads <= lane_count_; ++threads) {
      const int64_t splits = lane_splits(threads);
      for (int64_t k = 0; k < splits; ++k)
        for_each_band_of(lane_range_begin(k, splits), lane_range_begin(k + 1, splits), lane_rows_per_band_, f);
    }
  }

  // f(band) for the groups of `per_band` consumer rows of the range [o_begin, o_end), in order;
  // the range's first band computes all its rows.
  template <class F>
  void for_each_band_of(int64_t o_begin, int64_t o_end, int64_t per_band, F f) const {
    const int64_t ho = conv_.out_h();
    int64_t computed_end = 0;  // convolution rows [.., computed_end) are in the buffer
    for (int64_t o0 = o_begin; o0 < o_end; o0 += per_band) {
      Band b;
      b.o0 = o0;
      b.o1 = std::min(o_end, o0 + per_band);
      // The convolution rows the group's windows read, within [0, Ho).
      const RowSpan read =
          window_rows(b.o0, b.o1, consumer_.kernel, consumer_.stride, consumer_.pad_top, consumer_.dilation);
      b.r0 = std::max<int64_t>(0, read.top);
      b.r1 = std::max(b.r0, std::min(ho, read.bottom));
      b.kept = std::clamp(computed_end, b.r0, b.r1);
      f(b);
      computed_end = std::max(computed_end, b.r1);
    }
  }

  // The convolution's epilogue: its weights (the algorithm's layout), bias (may be null), its
  // clamp and an element-wise function after it (EfficientNet's SiLU, MobileNetV3's Hardswish),
  // applied to each band's new rows while they are in cache.
  struct Conv {
    const float* packed = nullptr;
    const float* bias = nullptr;
    Activation act = Activation::kNone;
    std::optional<PointwiseFn> pointwise;
  };

  // For each group of images [n, n + images) (one image unless images_per_band() > 1) and band
  // b, in order: the band's new convolution rows are computed (conv's activation and pointwise
  // function applied), then
  // consume(n, images, b, rows, scratch, threads) reads convolution rows [b.r0, b.r1) of those
  // images at `rows` (NHWC: per image, b.r1 - b.r0 rows of row_floats()) on `threads` threads;
  // `scratch` is the consumer's reserved scratch. On 2 to lane_count_ threads the bands of different
  // images (or row ranges) run at the same time, each on one thread (lanes, above).
  template <class Consume>
  void run(const float* input_nhwc, const Conv& conv, void* workspace, int threads, Consume&& consume) const {
    if (threads >= 2 && threads <= lane_count_) return run_lanes(input_nhwc, conv, workspace, threads, consume);
    float* band = static_cast<float*>(workspace);
    void* scratch = scratch_bytes_ > 0 ? band + band_floats_ : nullptr;
    for (int64_t n = 0; n < conv_.batch; n += images_per_band_) {
      const int64_t images = std::min(images_per_band_, conv_.batch - n);
      run_rows(input_nhwc, conv, n, images, 0, consumer_.out_rows, rows_per_band_, band, scratch, threads, consume);
    }
  }

 private:
  // The bands of consumer rows [o_begin, o_end) of images [n, n + images), each band's new
  // rows computed into `band`, then consumed; the algorithm and the consumer on `threads`.
  template <class Consume>
  void run_rows(const float* input_nhwc, const Conv& conv, int64_t n, int64_t images, int64_t o_begin, int64_t o_end,
                int64_t per_band, float* band, void* scratch, int threads, Consume& consume) const {
    const int64_t row = row_floats();
    const int64_t in_row_floats = conv_.in_w * conv_.in_channels;
    const float* image = input_nhwc + n * conv_.in_h * in_row_floats;
    int64_t buffer_r0 = 0;  // convolution row held in the buffer's first row
    for_each_band_of(o_begin, o_end, per_band, [&](const Band& b) {
      // Rows shared with the previous group move to the top.
      if (b.kept > b.r0)
        std::memmove(band, band + (b.r0 - buffer_r0) * row, static_cast<size_t>((b.kept - b.r0) * row) * sizeof(float));
      buffer_r0 = b.r0;
      if (b.r1 > b.kept) {
        const int64_t ih0 = std::max<int64_t>(0, b.kept * conv_.stride_h - conv_.pad_top);
        float* fresh = band + (b.kept - b.r0) * row;
        algorithm_.run(rows_problem(b.kept, b.r1, images), image + ih0 * in_row_floats, conv.packed, conv.bias, fresh,
                       scratch, conv.act, threads);
        // The new rows only (kept rows had it already); several images' bands are whole images
        // (kept == r0), so the new rows of all of them are contiguous.
        if (conv.pointwise)
          pointwise_activation(fresh, fresh, images * (b.r1 - b.kept) * row, *conv.pointwise, threads);
      }
      consume(n, images, b, static_cast<const float*>(band), scratch, threads);
    });
  }

  // Lanes: tasks of whole images, or of an image's consumer rows cut into contiguous ranges
  // where the images are fewer than 2 per thread; each task runs its bands alone, in the lane
  // of the thread that took it (slot < threads <= lane_count_).
  template <class Consume>
  void run_lanes(const float* input_nhwc, const Conv& conv, void* workspace, int threads, Consume& consume) const {
    const int64_t splits = lane_splits(threads);
    auto task = [&](int64_t t, int slot) {
      const int64_t n = t / splits, k = t % splits;
      float* band = static_cast<float*>(workspace) + slot * (lane_bytes() / sizeof(float));
      void* scratch = scratch_bytes_ > 0 ? band + lane_band_floats_ : nullptr;
      run_rows(input_nhwc, conv, n, 1, lane_range_begin(k, splits), lane_range_begin(k + 1, splits),
               lane_rows_per_band_, band, scratch, 1, consume);
    };
    cpu::parallel_tasks(threads, conv_.batch * splits, cpu::TaskFn(task));
  }

  // Consumer rows per band: `rows` (at least one), or more where the algorithm wants bands of
  // at least ConvAlgorithm::band_rows' rows, in whole multiples of its rows where the
  // consumer's stride allows (VGG's 2x2 pooling: an even number of pooled rows for F(4x4)).
  int64_t algorithm_band_rows(int64_t rows) const {
    const ConvAlgorithm::BandRows want = algorithm_.band_rows(conv_);
    const int64_t stride = consumer_.stride;
    rows = std::max(rows, (want.min_rows + stride - 1) / stride);
    const int64_t step = want.multiple / std::gcd(want.multiple, stride);
    rows = (rows + step - 1) / step * step;
    return std::clamp<int64_t>(rows, 1, consumer_.out_rows);
  }

  // Ranges per image on `threads` lanes: whole images where the batch gives every thread 2,
  // else each image cut into as many ranges as make about 2 per thread (at most `threads`).
  int64_t lane_splits(int threads) const {
    return std::clamp<int64_t>((2 * threads + conv_.batch - 1) / conv_.batch, 1, threads);
  }
  // Range k of `splits` of an image's consumer rows begins at this row (k = splits: the end).
  int64_t lane_range_begin(int64_t k, int64_t splits) const { return consumer_.out_rows * k / splits; }
  bool lanes() const { return lane_count_ > 0; }
  // One lane: its band, then its scratch (both whole 64-byte lines).
  size_t scratch_floats() const { return (scratch_bytes_ + 63) / 64 * 16; }
  size_t lane_bytes() const { return (lane_band_floats_ + scratch_floats()) * sizeof(float); }

 private:
  // The convolution of output rows [a, b) of `images` images as a problem of its own.
  ConvParams rows_problem(int64_t a, int64_t b, int64_t images = 1) const {
    ConvParams p = conv_;
    p.batch = images;
    // Input rows the output rows [a, b) read, with what lies outside the image as padding.
    const RowSpan read = window_rows(a, b, conv_.kernel_h, conv_.stride_h, conv_.pad_top, conv_.dilation_h);
    const int64_t ih0 = std::max<int64_t>(0, read.top), ih1 = std::min(conv_.in_h, read.bottom);
    p.in_h = ih1 - ih0;
    p.pad_top = ih0 - read.top;
    p.pad_bottom = read.bottom - ih1;
    return p;
  }

  const ConvAlgorithm& algorithm_;
  ConvParams conv_;
  RowWindow consumer_;
  int64_t rows_per_band_ = 1, lane_rows_per_band_ = 0;  // 0: no lanes
  int lane_count_ = 0;
  int64_t images_per_band_ = 1;
  size_t band_floats_ = 0, lane_band_floats_ = 0, scratch_bytes_ = 0;
};

}  // namespace winfer
