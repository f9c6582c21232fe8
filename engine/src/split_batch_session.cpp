// SessionOptions::images_per_run: a session whose batch runs a few images at a time. The CPU
// session is made for `images_per_run` images (its arena, kernels and "auto" choices are for
// them), and each run takes the caller's batch through it in turn: the activations of a batch of
// 8 need the memory of the images of one run, as ncnn's one-image-at-a-time execution does. A
// batch that is not a multiple gets a second session for the rest, on the same arena (the two
// never run at the same time), so that no image is computed twice and the memory stays the
// larger of the two plans.
//
// Inputs and outputs are not copied: each run reads its images from the caller's input and
// writes its outputs straight into the caller's (views of them), which needs every graph output
// to keep the batch as its first dimension (checked at create).
#include "engine/src/split_batch_session.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/src/graph.h"

namespace winfer {
namespace {

Shape with_batch(const Shape& shape, int64_t batch) {
  Shape s = shape;
  s[0] = batch;
  return s;
}

// The same options for a session of `images` images (the rest of the batch given by the model's
// declared shape or by input_shape alike).
SessionOptions part_options(const SessionOptions& options, const Shape& whole, int64_t images) {
  SessionOptions part = options;
  part.images_per_run = 0;
  part.batch = images;
  part.input_shape = with_batch(whole, images).dims();
  return part;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

class SplitBatchSession : public SessionImpl {
 public:
  size_t activation_bytes() const override { return report.arena_bytes; }

  Status run_into(const Tensor& input, std::vector<Tensor>* outputs) override {
    WINFER_RETURN_IF_ERROR(check_input(input));
    WINFER_RETURN_IF_ERROR(prepare_outputs(outputs));
    const int64_t batch = input.shape()[0];
    const int64_t input_floats_per_image = input.numel() / batch;
    for (LayerTiming& t : timings) t.milliseconds = 0;
    std::vector<Tensor> views(outputs->size());
    for (int64_t n = 0; n < batch; n += per_run_) {
      const int64_t images = std::min(per_run_, batch - n);
      SessionImpl& part = images == per_run_ ? *part_ : *rest_;
      // Batch-major in every layout (NCHW, NHWC, plain): images [n, n + images) are one run.
      const Tensor in = Tensor::view(const_cast<float*>(input.data()) + n * input_floats_per_image,
                                     with_batch(input.shape(), images), input.layout());
      for (size_t i = 0; i < outputs->size(); ++i) {
        Tensor& out = (*outputs)[i];
        const int64_t per_image = out.numel() / batch;
        views[i] = Tensor::view(out.data() + n * per_image, with_batch(out.shape(), images), out.layout());
      }
      WINFER_RETURN_IF_ERROR(part.run_into(in, &views));
      add_timings(part.timings);
    }
    return Status::Ok();
  }

  // Made by create_split_batch_session.
  int64_t per_run_ = 0;
  std::unique_ptr<SessionImpl> part_, rest_;  // rest_: the last run's, when the batch is not a multiple
  std::unique_ptr<void, AlignedFree> arena_;  // shared by part_ and rest_, unless the caller gave one

 private:
  // Per layer, the time of every run of the batch (the layers are the same in both sessions).
  void add_timings(const std::vector<LayerTiming>& run) {
    for (size_t i = 0; i < timings.size() && i < run.size(); ++i) timings[i].milliseconds += run[i].milliseconds;
  }
};

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

// The report of a split session: the full runs' plan, with the arena the larger of the two
// sessions' (they share it) and the weights both packed.
void merge_rest(const MemoryReport& rest, MemoryReport* report) {
  const size_t arena = std::max(report->arena_bytes, rest.arena_bytes);
  report->session_bytes += (arena - report->arena_bytes) + rest.session_weights_bytes;
  report->arena_bytes = arena;
  report->session_weights_bytes += rest.session_weights_bytes;
}

}  // namespace

Status check_images_per_run(const SessionOptions& options) {
  if (options.images_per_run < 0) {
    return invalid_argument("images_per_run must be >= 1 (or 0: the whole batch in one run), got " +
                            std::to_string(options.images_per_run));
  }
  if (options.images_per_run > 0 && options.device != "cpu") {
    return unsupported("images_per_run is supported on device 'cpu' only, not '" + options.device + "'");
  }
  return Status::Ok();
}

bool splits_batch(const SessionOptions& options, const Shape& whole) {
  return options.images_per_run > 0 && options.images_per_run < whole[0];
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

Result<MemoryReport> plan_split_batch_session(std::shared_ptr<const Model> model, const SessionOptions& options,
                                              const Shape& whole) {
  WINFER_RETURN_IF_ERROR(check_batch_free(*model, options, whole));
  const int64_t per_run = options.images_per_run, rest = whole[0] % per_run;
  auto part = plan_cpu_session(model, part_options(options, whole, per_run));
  if (!part.ok()) return part.status();
  MemoryReport report = std::move(part).value();
  if (rest > 0) {
    auto last = plan_cpu_session(model, part_options(options, whole, rest));
    if (!last.ok()) return last.status();
    merge_rest(last.value(), &report);
  }
  return report;
}

Result<std::unique_ptr<SessionImpl>> create_split_batch_session(std::shared_ptr<const Model> model,
                                                                const SessionOptions& options, const Shape& whole) {
  WINFER_RETURN_IF_ERROR(check_batch_free(*model, options, whole));
  auto session = std::make_unique<SplitBatchSession>();
  session->per_run_ = options.images_per_run;
  const int64_t batch = whole[0], rest = batch % session->per_run_;
  SessionOptions part = part_options(options, whole, session->per_run_);
  SessionOptions last = part_options(options, whole, rest);
  if (rest > 0 && options.arena == nullptr) {
    // One arena for both sessions: the larger plan's.
    auto plan = plan_split_batch_session(model, options, whole);
    if (!plan.ok()) return plan.status();
    const size_t bytes = (plan.value().arena_bytes + Session::kArenaAlignment - 1) / Session::kArenaAlignment *
                         Session::kArenaAlignment;
    void* arena = std::aligned_alloc(Session::kArenaAlignment, std::max<size_t>(bytes, Session::kArenaAlignment));
    if (arena == nullptr) return out_of_memory("images_per_run: an arena of " + std::to_string(bytes) + " bytes");
    session->arena_.reset(arena);
    part.arena = last.arena = arena;
    part.arena_bytes = last.arena_bytes = bytes;
  }
  auto made = create_cpu_session(model, part);
  if (!made.ok()) return made.status();
  session->part_ = std::move(made).value();
  if (rest > 0) {
    auto made_rest = create_cpu_session(model, last);
    if (!made_rest.ok()) return made_rest.status();
    session->rest_ = std::move(made_rest).value();
  }

  SessionImpl& p = *session->part_;
  session->model = model;
  session->options = options;
  session->device = p.device;
  WINFER_RETURN_IF_ERROR(infer_session_shapes(*model, options, &session->shapes));
  for (int t : model->graph().outputs) session->output_shapes.push_back(session->shapes[t]);
  WINFER_RETURN_IF_ERROR(check_batch_major_outputs(p, session->output_shapes, batch, session->per_run_));
  if (session->rest_) {
    WINFER_RETURN_IF_ERROR(check_batch_major_outputs(*session->rest_, session->output_shapes, batch, rest));
  }
  session->timings = p.timings;  // the layers, known before the first run as in every session
  session->report = p.report;
  if (session->rest_) merge_rest(session->rest_->report, &session->report);
  return std::unique_ptr<SessionImpl>(std::move(session));
}

}  // namespace winfer
