// SessionOptions::images_per_run: a session whose batch runs a few images at a time. CPU
// sessions are made for `images_per_run` images (their arenas, kernels and "auto" choices are
// for them), and each run takes the caller's batch through them in turn: the activations of a
// batch of 8 need the memory of the images of one run, as ncnn's one-image-at-a-time execution
// does. A batch that is not a multiple gets a second session for the rest, on the same arena
// (the two never run at the same time), so that no image is computed twice; that needs a plan
// first, to size the arena they share (otherwise each session allocates its own, as any does).
//
// On several threads the runs go side by side, one per thread, each on one thread in a lane of
// its own (its sessions and its part of the arena): a run of one image on two threads scales
// worse than two runs of one image each (EfficientNet-B0 at batch 8, 2 threads: 1.16x the whole
// batch's time run one image at a time on both threads, docs/PERFORMANCE.md session 28). Lanes
// cost one arena each; a single run (the batch fits in one) keeps all the threads.
//
// kImagesPerRunAuto, the default, chooses runs side by side wherever there are several threads
// and the batch gives each the same number of images, and on one thread runs of 2 images
// (automatic_images_per_run): on 2 threads at batch 8 the whole batch at once measured up to
// 1.06x the time of these runs on the zoo's networks, and 1.3-1.4x in the minutes when the two
// cores sat on different last-level caches (every layer then reads rows the other core wrote; a
// lane reads only its own); the arena holds 2 images per thread whatever the batch. It declines where the runs would
// cost what the whole batch does not: timing "auto" in each of several lanes, weights packed by each of
// several sessions.
//
// Inputs and outputs are not copied: each run reads its images from the caller's input and
// writes its outputs straight into the caller's (views of them), which needs every graph output
// to keep the batch as its first dimension (checked at create).
#include "engine/src/split_batch_session.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/src/graph.h"
#include "kernels/cpu/thread_pool.h"

namespace winfer {
namespace {

Shape with_batch(const Shape& shape, int64_t batch) {
  Shape s = shape;
  s[0] = batch;
  return s;
}

// The same options for a session of `images` images (the rest of the batch given by the model's
// declared shape or by input_shape alike).
SessionOptions part_options(const SessionOptions& options, const Shape& whole, int64_t images, int threads) {
  SessionOptions part = options;
  part.images_per_run = 0;
  part.threads = threads;
  part.batch = images;
  part.input_shape = with_batch(whole, images).dims();
  return part;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

// A run's input and outputs: views of the caller's tensors, kept from run to run and re-pointed,
// so that a run allocates nothing once they exist (as run_into promises).
struct RunViews {
  Tensor input;
  std::vector<Tensor> outputs;
};

// One thread's sessions: for a run of per_run images and, when the batch is not a multiple, for
// the rest; both on the lane's part of the arena.
struct Lane {
  std::unique_ptr<SessionImpl> part, rest;
  RunViews part_views, rest_views;
  std::vector<LayerTiming> timings;  // per layer, the lane's runs of this batch
  Status status;
};

// Whether `shape` is `whole` with `images` for the batch (compared in place: no Shape made).
bool is_run_of(const Shape& shape, const Shape& whole, int64_t images) {
  if (shape.rank() != whole.rank() || shape.rank() == 0 || shape[0] != images) return false;
  for (int i = 1; i < shape.rank(); ++i) {
    if (shape[i] != whole[i]) return false;
  }
  return true;
}

// `view` made to look at `data`, the images of a run of `whole` in `layout`: re-pointed when it
// has that shape and layout already, made anew otherwise (the first run, or a caller that
// changed layouts).
void point_view(Tensor* view, float* data, const Shape& whole, int64_t images, Layout layout) {
  if (!view->empty() && view->layout() == layout && is_run_of(view->shape(), whole, images) &&
      view->repoint_view(data)) {
    return;
  }
  *view = Tensor::view(data, with_batch(whole, images), layout);
}

// `views` pointed at images [n, n + images) of the caller's input and outputs (batch-major in
// every layout, NCHW, NHWC or plain: those images are contiguous).
void point_views(RunViews* views, int64_t n, int64_t images, const Tensor& input, std::vector<Tensor>& outputs) {
  const int64_t batch = input.shape()[0];
  point_view(&views->input, const_cast<float*>(input.data()) + n * (input.numel() / batch), input.shape(), images,
             input.layout());
  views->outputs.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    point_view(&views->outputs[i], out.data() + n * (out.numel() / batch), out.shape(), images, out.layout());
  }
}

class SplitBatchSession : public SessionImpl {
 public:
  size_t activation_bytes() const override { return report.arena_bytes; }

  Status run_into(const Tensor& input, std::vector<Tensor>* outputs) override {
    WINFER_RETURN_IF_ERROR(check_input(input));
    WINFER_RETURN_IF_ERROR(prepare_outputs(outputs));
    const int64_t batch = input.shape()[0], runs = (batch + per_run_ - 1) / per_run_;
    for (Lane& lane : lanes_) {
      for (LayerTiming& t : lane.timings) t.milliseconds = 0;
      lane.status = Status::Ok();
      // Any lane may take the rest: every lane's views get their shapes here, once.
      point_views(&lane.part_views, 0, per_run_, input, *outputs);
      if (lane.rest) point_views(&lane.rest_views, 0, batch % per_run_, input, *outputs);
    }
    auto run = [&](int64_t k, int slot) {
      Lane& lane = lanes_[static_cast<size_t>(slot)];
      if (lane.status.ok()) lane.status = run_images(lane, k * per_run_, input, outputs);
    };
    cpu::parallel_tasks(static_cast<int>(lanes_.size()), runs, cpu::TaskFn(run));
    // Per layer: the sum over a lane's runs, averaged over the lanes that ran at the same time,
    // so that the layers' times add up to about the batch's wall time, as a whole batch's do.
    for (LayerTiming& t : timings) t.milliseconds = 0;
    const double lanes_used = static_cast<double>(std::min<int64_t>(runs, static_cast<int64_t>(lanes_.size())));
    for (const Lane& lane : lanes_) {
      WINFER_RETURN_IF_ERROR(lane.status);
      for (size_t i = 0; i < timings.size() && i < lane.timings.size(); ++i)
        timings[i].milliseconds += lane.timings[i].milliseconds / lanes_used;
    }
    return Status::Ok();
  }

  // Made by create_split_batch_session.
  int64_t per_run_ = 0;
  std::vector<Lane> lanes_;
  // The lanes' arenas on one block (a batch with a rest), unless the caller gave it; without a
  // rest each run's session has an arena of its own.
  std::unique_ptr<void, AlignedFree> arena_;

 private:
  // Images [n, n + per_run_) (or the rest) on the lane's session.
  Status run_images(Lane& lane, int64_t n, const Tensor& input, std::vector<Tensor>* outputs) const {
    const int64_t batch = input.shape()[0], images = std::min(per_run_, batch - n);
    const bool full = images == per_run_;
    SessionImpl& session = full ? *lane.part : *lane.rest;
    RunViews& views = full ? lane.part_views : lane.rest_views;
    point_views(&views, n, images, input, *outputs);
    WINFER_RETURN_IF_ERROR(session.run_into(views.input, &views.outputs));
    for (size_t i = 0; i < lane.timings.size() && i < session.timings.size(); ++i)
      lane.timings[i].milliseconds += session.timings[i].milliseconds;
    return Status::Ok();
  }
};

// How the batch of `whole` is split: images per run, the rest, the lanes (runs side by side)
// and each lane's threads.
struct Split {
  int64_t per_run, rest;
  int lanes, lane_threads;
};
Split split_of(const SessionOptions& options, const Shape& whole) {
  Split s;
  s.per_run = options.images_per_run;
  s.rest = whole[0] % s.per_run;
  const int64_t runs = (whole[0] + s.per_run - 1) / s.per_run;
  s.lanes = static_cast<int>(std::min<int64_t>(options.threads, runs));
  s.lane_threads = s.lanes > 1 ? 1 : options.threads;
  return s;
}

size_t round_to_alignment(size_t bytes) {
  return (bytes + Session::kArenaAlignment - 1) / Session::kArenaAlignment * Session::kArenaAlignment;
}

// Every output keeps the batch as its first dimension: the part's outputs are the whole's with
// `images` for the batch.
Status check_batch_major_outputs(const SessionImpl& part, const std::vector<Shape>& whole, int64_t batch,
                                 int64_t images) {
  for (size_t i = 0; i < whole.size(); ++i) {
    if (whole[i].rank() == 0 || whole[i][0] != batch || part.output_shapes[i] != with_batch(whole[i], images)) {
      return invalid_argument("images_per_run: output '" + part.model->output_names()[i] + "' has shape " +
                              whole[i].to_string() + " for a batch of " + std::to_string(batch) +
                              ", which does not keep the batch as its first dimension, so the batch cannot run " +
                              std::to_string(images) + " image(s) at a time");
    }
  }
  return Status::Ok();
}

// A lane's report: the full runs' plan, with the arena, the sum of the activations and their
// lower bound the larger of the two sessions' (they share the arena and never run together),
// and the weights both packed.
void merge_rest(const MemoryReport& rest, MemoryReport* report) {
  report->activations_sum_bytes = std::max(report->activations_sum_bytes, rest.activations_sum_bytes);
  report->activations_lower_bound_bytes =
      std::max(report->activations_lower_bound_bytes, rest.activations_lower_bound_bytes);
  const size_t arena = std::max(report->arena_bytes, rest.arena_bytes);
  report->session_bytes += (arena - report->arena_bytes) + rest.session_weights_bytes;
  report->arena_bytes = arena;
  report->session_weights_bytes += rest.session_weights_bytes;
}

}  // namespace

Status check_images_per_run(const SessionOptions& options) {
  if (options.images_per_run == SessionOptions::kImagesPerRunAuto) return Status::Ok();
  if (options.images_per_run < 0) {
    return invalid_argument("images_per_run must be >= 1 (or 0: the whole batch in one run; " +
                            std::to_string(SessionOptions::kImagesPerRunAuto) + ": the engine chooses), got " +
                            std::to_string(options.images_per_run));
  }
  if (options.images_per_run > 0 && options.device != "cpu") {
    return unsupported("images_per_run is supported on device 'cpu' only, not '" + options.device + "'");
  }
  return Status::Ok();
}

// A model whose file fixes the batch (an ONNX export with a static shape) admits no session of
// fewer images.
Status check_batch_free(const Model& model, const SessionOptions& options, const Shape& whole) {
  const std::vector<bool> fixed = model.input_dim_fixed();
  if (fixed.empty() || !fixed[0]) return Status::Ok();
  return invalid_argument(model.path() + ": images_per_run = " + std::to_string(options.images_per_run) +
                          ": the model fixes its batch at " + std::to_string(whole[0]) + " (input declared " +
                          model.input_shape().to_string() +
                          "), so it cannot run fewer images at a time; export it with a dynamic batch dim, or convert "
                          "it (winfer convert), which leaves the batch free");
}

// Whether every graph output keeps the batch first, so that runs of `images` write views of the
// caller's outputs: the shapes inferred for the whole batch and for a run (no kernel built).
bool outputs_keep_batch(const Model& model, const SessionOptions& options, const Shape& whole, int64_t images) {
  std::vector<Shape> all, part;
  if (!infer_session_shapes(model, options, &all).ok()) return false;
  if (!infer_session_shapes(model, part_options(options, whole, images, 1), &part).ok()) return false;
  for (int t : model.graph().outputs) {
    const Shape& out = all[static_cast<size_t>(t)];
    if (out.rank() == 0 || out[0] != whole[0] || part[static_cast<size_t>(t)] != with_batch(out, images)) return false;
  }
  return true;
}

// Bytes of the weights of layers that use each weight only a few times per image (linear layers,
// 1x1 convolutions on a pixel or two): a run reads them from memory whatever its images, so more
// runs cost that many more passes over them. Convolutions use each weight at every output pixel.
size_t streamed_weight_bytes(const Model& model) {
  constexpr int64_t kFlopsPerWeightPerImage = 16;  // a 7x7 output does 98, a linear layer 2
  size_t bytes = 0;
  for (const LayerInfo& layer : model.layers()) {
    if (layer.params <= 0 || layer.output_shapes.empty() || layer.output_shapes[0].rank() == 0) continue;
    const int64_t images = std::max<int64_t>(1, layer.output_shapes[0][0]);
    if (layer.flops / images < kFlopsPerWeightPerImage * layer.params) {
      bytes += static_cast<size_t>(layer.params) * sizeof(float);
    }
  }
  return bytes;
}

// Whether each run reads the weights from memory while its activations stay in the caches, so
// that fewer, larger runs pay that read fewer times: weights beyond a last-level cache's share
// (on these 2-vCPU VMs some 20-30 MB: a 9.4 MB layer run in turn from 2 copies ran as fast as
// from one, from 4 copies 1.28x slower), and at least kWeightsPerImageArena times the arena of
// one image. Batch 8, 1 thread, runs of 4 against runs of 2 (model_ab, session 40): ResNet-18
// (weights 26x an image's arena) 0.935-0.943x the time, ResNet-50 (18x) 0.973-0.978x,
// RegNetY-1.6GF (16x) 0.974x, EfficientNet-B1 (12x) 0.985x, GoogLeNet (8.8x) 0.989x; 2 threads
// (one run of 4 per lane instead of two of 2): 0.982-0.991x; DenseNet-121, whose concatenated
// features make an image's arena 6.9 MiB for 30 MiB of weights (4.4x), 1.022x on 1 and 2
// threads: its larger runs leave the caches.
bool weights_outweigh_activations(const std::shared_ptr<const Model>& model, const SessionOptions& options,
                                  const Shape& whole) {
  constexpr size_t kWeightsBeyondCacheBytes = size_t{24} << 20;
  constexpr size_t kWeightsPerImageArena = 8;
  const size_t weights = model->weight_bytes();
  if (weights <= kWeightsBeyondCacheBytes) return false;
  const auto one_image = plan_cpu_session(model, part_options(options, whole, 1, 1));
  return one_image.ok() && weights >= kWeightsPerImageArena * one_image.value().arena_bytes;
}

// kImagesPerRunAuto's choice (SessionOptions::images_per_run says why): one run per thread side by
// side, each of kDefaultImagesPerRun images (fewer where a thread's share is not a multiple: 1),
// so that every lane does the same runs; a thread's whole share in one run where the weights
// streamed per run are large (VGG-16's classifier, 470 MiB: at batch 8 on 2 threads, 2 runs per
// lane measured 0.98-1.02x the whole batch's time, 1 run 0.96-0.97x), and runs of
// kWeightHeavyImagesPerRun where every run reads the weights from memory
// (weights_outweigh_activations: the ResNets). On one thread there are no lanes to gain, only
// caches: runs of 2 images, not 1 (batch 8, 1 thread, against runs of 4: runs of 2 0.98-1.02x the
// time on the zoo's small networks, runs of 1 up to 1.03x: the late layers' and the classifier's
// weights are read once per run; docs/PERFORMANCE.md session 30); 0 where runs do not apply.
int64_t automatic_images_per_run(const std::shared_ptr<const Model>& model, const SessionOptions& options,
                                 const Shape& whole) {
  constexpr size_t kStreamedBytesForOneRun = size_t{16} << 20;  // beyond a last-level cache's share
  const int64_t batch = whole[0], threads = options.threads;
  if (options.device != "cpu" || batch < 2 || batch < threads || batch % threads != 0) return 0;
  // "auto" on several threads: its timing would be repeated in every lane. On one thread the
  // runs are one session (ShuffleNetV2 at batch 8: auto's whole batch at once 1.03-1.09x the time of
  // im2win's runs of 2, its channel shuffles 1.6-1.9x: a run's tensors stay in L2).
  if (options.conv_algorithm == "auto" && threads > 1) return 0;
  const std::vector<bool> fixed = model->input_dim_fixed();
  if (!fixed.empty() && fixed[0]) return 0;
  constexpr int64_t kDefaultImagesPerRun = 2;  // the memory of 2 images per thread, whatever the batch
  constexpr int64_t kWeightHeavyImagesPerRun = 4;
  const int64_t per_thread = batch / threads;
  int64_t per_run = std::min(kDefaultImagesPerRun, per_thread);
  if (streamed_weight_bytes(*model) > kStreamedBytesForOneRun) {
    per_run = per_thread;
  } else if (per_thread > per_run && weights_outweigh_activations(model, options, whole)) {
    per_run = std::min(kWeightHeavyImagesPerRun, per_thread);
  }
  while (per_thread % per_run != 0) --per_run;
  if (per_run >= batch || (threads == 1 && per_run < 2)) return 0;
  return outputs_keep_batch(*model, options, whole, per_run) ? per_run : 0;
}

// One lane's plan: the run of per_run images, merged with the rest's.
Result<MemoryReport> plan_lane(std::shared_ptr<const Model> model, const SessionOptions& options, const Shape& whole,
                               const Split& split) {
  auto part = plan_cpu_session(model, part_options(options, whole, split.per_run, split.lane_threads));
  if (!part.ok()) return part.status();
  MemoryReport report = std::move(part).value();
  if (split.rest > 0) {
    auto last = plan_cpu_session(model, part_options(options, whole, split.rest, split.lane_threads));
    if (!last.ok()) return last.status();
    merge_rest(last.value(), &report);
  }
  return report;
}

// The whole session's plan: a lane's, times the lanes (each lane's part of the arena aligned, and
// the weights each lane's sessions pack for themselves).
MemoryReport all_lanes(MemoryReport lane, int lanes) {
  lane.lanes = lanes;  // images_per_run: the run's, as planned
  const size_t more_weights = lane.session_weights_bytes * static_cast<size_t>(lanes - 1);
  lane.session_weights_bytes += more_weights;
  lane.packed_weights_bytes += more_weights;
  lane.session_bytes += more_weights;
  const size_t arena = round_to_alignment(lane.arena_bytes) * static_cast<size_t>(lanes);
  // Every lane's activations are alive at the same time.
  lane.activations_sum_bytes = round_to_alignment(lane.activations_sum_bytes) * static_cast<size_t>(lanes);
  lane.activations_lower_bound_bytes *= static_cast<size_t>(lanes);
  lane.session_bytes += arena - lane.arena_bytes;
  lane.arena_bytes = arena;
  return lane;
}

int64_t images_per_run_for(const std::shared_ptr<const Model>& model, const SessionOptions& options,
                           const Shape& whole) {
  if (options.images_per_run == SessionOptions::kImagesPerRunAuto)
    return automatic_images_per_run(model, options, whole);
  return options.images_per_run;
}

namespace {

// The options with images_per_run resolved, when the batch of `whole` runs in several runs.
std::optional<SessionOptions> split_options(const std::shared_ptr<const Model>& model, const SessionOptions& options,
                                            const Shape& whole) {
  const int64_t per_run = images_per_run_for(model, options, whole);
  if (per_run <= 0 || per_run >= whole[0]) return std::nullopt;
  SessionOptions split = options;
  split.images_per_run = per_run;
  return split;
}

// What a run's session is part of, for its errors: "batch 8 in runs of 2 images, 2 side by side".
std::string runs_context(const Shape& whole, const Split& split) {
  return "batch " + std::to_string(whole[0]) + " in runs of " + std::to_string(split.per_run) + " images, " +
         std::to_string(split.lanes) + " side by side";
}

// Auto declines runs whose sessions pack weights of their own where there are several: every
// lane, and a rest's session, would hold a copy (one run's session alone holds what the whole
// batch's would).
bool auto_declines(const SessionOptions& asked, const MemoryReport& lane, const Split& split) {
  return asked.images_per_run == SessionOptions::kImagesPerRunAuto && lane.session_weights_bytes > 0 &&
         (split.lanes > 1 || split.rest > 0);
}

}  // namespace

Result<std::optional<MemoryReport>> plan_split_batch_session(std::shared_ptr<const Model> model,
                                                             const SessionOptions& options, const Shape& whole) {
  const std::optional<SessionOptions> split_as = split_options(model, options, whole);
  if (!split_as) return std::optional<MemoryReport>();
  WINFER_RETURN_IF_ERROR(check_batch_free(*model, *split_as, whole));
  const Split split = split_of(*split_as, whole);
  auto lane = plan_lane(std::move(model), *split_as, whole, split);
  if (!lane.ok()) return Status(lane.status()).with_context(runs_context(whole, split));
  if (auto_declines(options, lane.value(), split)) return std::optional<MemoryReport>();
  return std::optional<MemoryReport>(all_lanes(std::move(lane).value(), split.lanes));
}

// Each lane's session of per_run images with an arena of its own (a batch that is a multiple of
// per_run, no arena of the caller's): nothing to plan first, since no two sessions share one.
// False when auto declines (`asked`: the caller's options), seen on the first lane's session.
Result<bool> make_lanes_with_own_arenas(const std::shared_ptr<const Model>& model, const SessionOptions& asked,
                                        const SessionOptions& options, const Shape& whole, const Split& split,
                                        SplitBatchSession* session) {
  for (Lane& lane : session->lanes_) {
    auto made = create_cpu_session(model, part_options(options, whole, split.per_run, split.lane_threads));
    if (!made.ok()) return made.status();
    lane.part = std::move(made).value();
    if (auto_declines(asked, lane.part->report, split)) return false;
  }
  session->report = all_lanes(session->lanes_[0].part->report, split.lanes);
  return true;
}

// The lanes' sessions (a run of per_run images and the rest's) on one block, the lanes' arenas
// side by side: the caller's (as large as Session::plan says), or one allocated here, sized by
// planning a lane first. False when auto declines (`asked`: the caller's options).
Result<bool> make_lanes_on_one_block(const std::shared_ptr<const Model>& model, const SessionOptions& asked,
                                     const SessionOptions& options, const Shape& whole, const Split& split,
                                     SplitBatchSession* session) {
  auto plan = plan_lane(model, options, whole, split);
  if (!plan.ok()) return plan.status();
  if (auto_declines(asked, plan.value(), split)) return false;
  const size_t lane_bytes = round_to_alignment(plan.value().arena_bytes);
  const size_t bytes = lane_bytes * static_cast<size_t>(split.lanes);
  char* arena = static_cast<char*>(options.arena);
  if (arena == nullptr) {
    WINFER_RETURN_IF_ERROR(check_host_memory_for(model->path() + ": the arena of " + std::to_string(split.lanes) +
                                                     " run(s) of " + std::to_string(split.per_run) + " image(s)",
                                                 bytes));
    session->arena_.reset(std::aligned_alloc(Session::kArenaAlignment, std::max(bytes, Session::kArenaAlignment)));
    if (session->arena_ == nullptr)
      return out_of_memory("images_per_run: an arena of " + std::to_string(bytes) + " bytes");
    arena = static_cast<char*>(session->arena_.get());
  } else if (options.arena_bytes < bytes) {
    return invalid_argument(
        "SessionOptions::arena holds " + std::to_string(options.arena_bytes) + " bytes, but the session needs " +
        std::to_string(bytes) + " (" + std::to_string(split.lanes) + " lanes of " + std::to_string(lane_bytes) +
        " bytes for images_per_run = " + std::to_string(split.per_run) + "; Session::plan tells it)");
  }
  for (size_t l = 0; l < session->lanes_.size(); ++l) {
    Lane& lane = session->lanes_[l];
    for (const int64_t images : {split.per_run, split.rest}) {
      if (images == 0) continue;
      SessionOptions o = part_options(options, whole, images, split.lane_threads);
      o.arena = arena + lane_bytes * l;
      o.arena_bytes = lane_bytes;
      auto made = create_cpu_session(model, o);
      if (!made.ok()) return made.status();
      (images == split.per_run ? lane.part : lane.rest) = std::move(made).value();
    }
  }
  session->report = all_lanes(std::move(plan).value(), split.lanes);
  return true;
}

Result<std::unique_ptr<SessionImpl>> create_split_batch_session(std::shared_ptr<const Model> model,
                                                                const SessionOptions& asked, const Shape& whole) {
  const std::optional<SessionOptions> split_as = split_options(model, asked, whole);
  if (!split_as) return std::unique_ptr<SessionImpl>();
  const SessionOptions& options = *split_as;
  WINFER_RETURN_IF_ERROR(check_batch_free(*model, options, whole));
  const Split split = split_of(options, whole);
  auto session = std::make_unique<SplitBatchSession>();
  session->per_run_ = split.per_run;
  session->lanes_.resize(static_cast<size_t>(split.lanes));
  const Result<bool> made = split.rest == 0 && options.arena == nullptr
                                ? make_lanes_with_own_arenas(model, asked, options, whole, split, session.get())
                                : make_lanes_on_one_block(model, asked, options, whole, split, session.get());
  if (!made.ok()) return Status(made.status()).with_context(runs_context(whole, split));
  if (!made.value()) return std::unique_ptr<SessionImpl>();  // auto declined: the whole batch at once

  const SessionImpl& p = *session->lanes_[0].part;
  session->model = model;
  session->options = options;
  session->device = p.device;
  WINFER_RETURN_IF_ERROR(infer_session_shapes(*model, options, &session->shapes));
  for (int t : model->graph().outputs) session->output_shapes.push_back(session->shapes[t]);
  WINFER_RETURN_IF_ERROR(check_batch_major_outputs(p, session->output_shapes, whole[0], split.per_run));
  if (const SessionImpl* rest = session->lanes_[0].rest.get()) {
    WINFER_RETURN_IF_ERROR(check_batch_major_outputs(*rest, session->output_shapes, whole[0], split.rest));
  }
  session->timings = p.timings;  // the layers, known before the first run as in every session
  for (Lane& lane : session->lanes_) lane.timings = p.timings;
  return std::unique_ptr<SessionImpl>(std::move(session));
}

}  // namespace winfer
