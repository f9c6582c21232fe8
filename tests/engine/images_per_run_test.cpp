// SessionOptions::images_per_run (engine/src/split_batch_session.cpp): a batch run a few images
// at a time through an arena planned for that many. The outputs must be the whole batch's (zoo
// networks with fused pairs, squeeze-and-excitation, residuals and concat; a batch that is not
// a multiple; NCHW and NHWC inputs and outputs; 1 and 2 threads), the plan must be that of one
// run's images (the larger of the two plans for a batch with a rest, which share the arena, the
// caller's too), and what cannot be split is refused with a message that says why.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/fusion_test_util.h"
#include "winfer/custom_op.h"
#include "winfer/winfer.h"
#include "winfer/winfer_c.h"

using namespace winfer_test;

namespace {

constexpr uint64_t kSeed = 5;

winfer::SessionOptions options_for(int64_t batch, int64_t images_per_run, int threads = 2) {
  winfer::SessionOptions options;
  options.batch = batch;
  options.images_per_run = images_per_run;
  options.threads = threads;
  return options;
}

std::unique_ptr<winfer::Session> create_ok(std::shared_ptr<const winfer::Model> model,
                                           const winfer::SessionOptions& options) {
  auto session = winfer::Session::create(std::move(model), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  return std::move(session).value();
}

std::vector<winfer::Tensor> run_all(winfer::Session& session, const winfer::Tensor& input) {
  auto out = session.run_all(input);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  return std::move(out).value();
}

// The largest difference relative to the largest magnitude of `want`.
float relative_to_max(const winfer::Tensor& got, const winfer::Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  float worst = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    worst = std::max(worst, std::fabs(got.data()[i] - want.data()[i]));
    scale = std::max(scale, std::fabs(want.data()[i]));
  }
  return worst / std::max(scale, 1e-30f);
}

// A fused conv + maxpool, a pointwise -> depthwise pair and a residual on 12x10 images: a rank-4
// output (NHWC outputs), small enough for the thread sanitizer.
std::string small_net() {
  return model_header(3, 12, 10) +
         "layers:\n"
         "  - {name: c1, op: conv2d, in_channels: 3, out_channels: 8, kernel_size: 3, padding: 1}\n"
         "  - {name: r1, op: relu}\n"
         "  - {name: p1, op: maxpool2d, kernel_size: 2}\n"
         "  - {name: pw, op: conv2d, in_channels: 8, out_channels: 16, kernel_size: 1}\n"
         "  - {name: pw.act, op: silu}\n"
         "  - {name: dw, op: conv2d, in_channels: 16, out_channels: 16, kernel_size: 3, padding: 1, groups: 16}\n"
         "  - {name: back, op: conv2d, in_channels: 16, out_channels: 8, kernel_size: 1}\n"
         "  - {name: sum, op: add, inputs: [back, p1]}\n";
}

// A custom op that sums its input over the batch: [N, C, H, W] -> [1, C, H, W]. Its output does
// not keep the batch as its first dimension, so a split batch would compute something else.
class BatchSum : public winfer::CustomOp {
 public:
  winfer::Status infer_shapes(const std::vector<winfer::Shape>& inputs,
                              std::vector<winfer::Shape>* outputs) const override {
    winfer::Shape s = inputs[0];
    s[0] = 1;
    *outputs = {s};
    return winfer::Status::Ok();
  }
  void run(const std::vector<const winfer::Tensor*>& inputs, const std::vector<winfer::Tensor*>& outputs,
           const winfer::CustomOpContext&) const override {
    const winfer::Tensor& x = *inputs[0];
    winfer::Tensor& y = *outputs[0];
    const int64_t per_image = y.numel();
    for (int64_t i = 0; i < per_image; ++i) {
      float sum = 0;
      for (int64_t n = 0; n < x.shape()[0]; ++n) sum += x.data()[n * per_image + i];
      y.data()[i] = sum;
    }
  }
};

void register_batch_sum() {
  static const bool registered = [] {
    winfer::CustomOpDefinition d;
    d.type = "test_batch_sum";
    d.create = [](const winfer::CustomOpAttrs&) -> winfer::Result<std::unique_ptr<winfer::CustomOp>> {
      return std::unique_ptr<winfer::CustomOp>(new BatchSum());
    };
    REQUIRE(winfer::register_custom_op(d).ok());
    return true;
  }();
  CHECK(registered);
}

// small_net() loaded without packing (LoadOptions::pack_for ""): each session packs the weights
// for its algorithm.
std::shared_ptr<const winfer::Model> load_unpacked(const TempDir& dir) {
  winfer::LoadOptions unpacked;
  unpacked.random_weights_seed = kSeed;
  unpacked.pack_for = "";
  auto model = load_text(dir, small_net(), unpacked);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

}  // namespace

TEST_CASE("images_per_run: the batch a few images at a time equals the whole batch in one run") {
  // EfficientNet (fused expand -> depthwise pairs with SiLU, squeeze-and-excitation), ResNet-18
  // (residuals, the stem's pooling), ShuffleNetV2 (concat, channel shuffle); batch 5 in runs of
  // 1, 2 (a rest of 1), 3 (a rest of 2) and 4 images.
  for (const char* name : {"efficientnet_b0", "resnet18", "shufflenet_v2_x1_0"}) {
    const auto model = load_ok(zoo_yaml_at(name, 64), true, kSeed);
    const winfer::Tensor input = random_tensor(winfer::Shape{5, 3, 64, 64}, 9, winfer::Layout::kNCHW);
    for (int threads : {1, 2}) {
      const winfer::Tensor whole = run_all(*create_ok(model, options_for(5, 0, threads)), input)[0];
      for (int64_t per_run : {1, 2, 3, 4}) {
        INFO(name << ", " << threads << " thread(s), " << per_run << " image(s) per run");
        auto session = create_ok(model, options_for(5, per_run, threads));
        CHECK(session->input_shape() == winfer::Shape{5, 3, 64, 64});
        CHECK(session->output_shapes() == std::vector<winfer::Shape>{whole.shape()});
        const winfer::Tensor split = run_all(*session, input)[0];
        CHECK(relative_to_max(split, whole) <= 1e-5f);
        // Twice: the runs leave nothing behind that the next one reads.
        CHECK(relative_to_max(run_all(*session, input)[0], whole) <= 1e-5f);
        // Per layer, the time of all the runs of the batch.
        CHECK(session->last_timings().size() > 10);
      }
    }
  }
}

TEST_CASE("images_per_run: NHWC inputs and outputs, written in place by run_into") {
  const auto model = load_ok(small_net(), true, kSeed);
  const winfer::Tensor nchw = random_tensor(winfer::Shape{7, 3, 12, 10}, 4, winfer::Layout::kNCHW);
  const winfer::Tensor whole = run_all(*create_ok(model, options_for(7, 0)), nchw)[0];
  auto session = create_ok(model, options_for(7, 3));
  std::vector<winfer::Tensor> outputs = {winfer::Tensor::allocate(whole.shape(), winfer::Layout::kNHWC)};
  REQUIRE(session->run_into(nchw.to_layout(winfer::Layout::kNHWC), &outputs).ok());
  CHECK(outputs[0].layout() == winfer::Layout::kNHWC);
  CHECK(relative_to_max(outputs[0].to_layout(winfer::Layout::kNCHW), whole) <= 1e-6f);
}

TEST_CASE("images_per_run: the arena of one run's images, the larger plan with a rest, a caller's arena") {
  const auto model = load_ok(zoo_yaml_at("efficientnet_b0", 64), true, kSeed);
  const auto arena = [&](int64_t batch, int64_t per_run, int threads) {
    auto plan = winfer::Session::plan(model, options_for(batch, per_run, threads));
    REQUIRE_MESSAGE(plan.ok(), plan.status().message());
    return plan.value().arena_bytes;
  };
  const auto rounded = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
  // 8 images 2 at a time on 1 thread: batch 2's arena.
  CHECK(arena(8, 2, 1) == arena(2, 0, 1));
  // 7 images 3 at a time: runs of 3, 3 and 1 share one arena, batch 3's.
  CHECK(arena(7, 3, 1) == std::max(arena(3, 0, 1), arena(1, 0, 1)));
  // On 2 threads the runs go side by side: two lanes, each a 1-thread session's arena.
  CHECK(arena(8, 2, 2) == 2 * rounded(arena(2, 0, 1)));
  CHECK(arena(7, 3, 2) == 2 * rounded(std::max(arena(3, 0, 1), arena(1, 0, 1))));
  CHECK(arena(8, 1, 2) * 10 < arena(8, 0, 2) * 6);  // two images of eight (at 64x64 the workspaces weigh)
  // As many or more images per run than the batch: one run, the whole batch's session.
  CHECK(arena(4, 4, 2) == arena(4, 0, 2));
  CHECK(arena(4, 9, 2) == arena(4, 0, 2));
  // The session made is the plan's: with a rest (the lanes' arenas on one block) and without
  // (each run's session with an arena of its own).
  for (int threads : {1, 2}) {
    for (const auto& split : {std::pair<int64_t, int64_t>{7, 3}, {8, 2}}) {
      const int64_t batch = split.first, per_run = split.second;
      auto session = create_ok(model, options_for(batch, per_run, threads));
      CHECK(session->memory_report().arena_bytes == arena(batch, per_run, threads));
      CHECK(session->activation_bytes() == arena(batch, per_run, threads));
    }
  }

  // The caller's arena, of the planned bytes, serves both sessions of a batch with a rest.
  const size_t bytes = arena(7, 3, 2);
  std::vector<float> storage(bytes / sizeof(float) + 16);
  void* aligned = storage.data();
  size_t space = storage.size() * sizeof(float);
  REQUIRE(std::align(winfer::Session::kArenaAlignment, bytes, aligned, space) != nullptr);
  winfer::SessionOptions options = options_for(7, 3);
  options.arena = aligned;
  options.arena_bytes = bytes;
  const winfer::Tensor input = random_tensor(winfer::Shape{7, 3, 64, 64}, 2, winfer::Layout::kNCHW);
  const winfer::Tensor whole = run_all(*create_ok(model, options_for(7, 0)), input)[0];
  CHECK(relative_to_max(run_all(*create_ok(model, options), input)[0], whole) <= 1e-5f);
  options.arena_bytes = bytes - winfer::Session::kArenaAlignment;
  auto small = winfer::Session::create(model, options);
  REQUIRE_FALSE(small.ok());
  CHECK(contains(small.status().message(), "arena"));
}

TEST_CASE("images_per_run: refused below 0, off the CPU, and where an output does not keep the batch") {
  const auto model = load_ok(zoo_yaml_at("resnet18", 32), true, kSeed);
  const auto error = [&](const winfer::SessionOptions& options) {
    auto session = winfer::Session::create(model, options);
    REQUIRE_FALSE(session.ok());
    return session.status().message();
  };
  CHECK(contains(error(options_for(4, -2)),
                 "images_per_run must be >= 1 (or 0: the whole batch in one run; -1: the engine chooses), got -2"));
  winfer::SessionOptions cuda = options_for(4, 2);
  cuda.device = "cuda";
  CHECK(contains(error(cuda), "images_per_run is supported on device 'cpu' only, not 'cuda'"));

  // A layer that mixes the images of the batch: its output [1, ...] is not split.
  register_batch_sum();
  const std::string yaml = model_header(3, 6, 5) +
                           "outputs: [sum]\n"
                           "layers:\n"
                           "  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, padding: 1}\n"
                           "  - {name: sum, op: test_batch_sum}\n";
  const auto mixing = load_ok(yaml, true, kSeed);
  auto session = winfer::Session::create(mixing, options_for(4, 2));
  REQUIRE_FALSE(session.ok());
  CHECK(contains(session.status().message(),
                 "images_per_run: output 'sum' has shape [1,4,6,5] for a batch of 4, which does not keep the batch "
                 "as its first dimension"));
  // In one run it is fine.
  CHECK(winfer::Session::create(mixing, options_for(4, 0)).ok());

  // The C API's setter.
  winfer_session_config* config = nullptr;
  REQUIRE(winfer_session_config_create(&config) == WINFER_OK);
  CHECK(winfer_session_config_set_images_per_run(config, -3) != WINFER_OK);
  CHECK(contains(winfer_last_error(), "images_per_run must be >= 1"));
  CHECK(winfer_session_config_set_images_per_run(config, 2) == WINFER_OK);
  CHECK(winfer_session_config_set_images_per_run(config, WINFER_IMAGES_PER_RUN_AUTO) == WINFER_OK);
  winfer_session_config_destroy(config);
}

TEST_CASE("images_per_run: runs side by side on two threads, concurrently, each in its own lane") {
  // Small enough for the thread sanitizer's build (tests whose name says threads run there):
  // batch 5 in runs of 2 (the lanes take runs of 2 and the rest of 1 at the same time), 1 and 2
  // threads.
  const auto model = load_ok(small_net(), true, kSeed);
  const winfer::Tensor input = random_tensor(winfer::Shape{5, 3, 12, 10}, 6, winfer::Layout::kNCHW);
  const winfer::Tensor whole = run_all(*create_ok(model, options_for(5, 0, 1)), input)[0];
  for (int threads : {1, 2}) {
    INFO(threads << " thread(s)");
    auto session = create_ok(model, options_for(5, 2, threads));
    for (int repeat = 0; repeat < 3; ++repeat) CHECK(relative_to_max(run_all(*session, input)[0], whole) <= 1e-5f);
  }
}

// kImagesPerRunAuto, the default: runs side by side, one per thread, where the batch divides among
// the threads; the whole batch at once elsewhere, and where splitting does not apply.
TEST_CASE("images_per_run: the default chooses runs side by side where the batch divides among the threads") {
  const auto model = load_ok(small_net(), true, kSeed);
  CHECK(winfer::SessionOptions().images_per_run == winfer::SessionOptions::kImagesPerRunAuto);
  struct Case {
    int64_t batch;
    int threads;
    int64_t images_per_run;  // expected
    int lanes;
  };
  // Runs of 2 images (1 where a thread's share is odd), one run per thread at a time.
  // On one thread, runs of 2 images or the whole batch.
  const Case cases[] = {{8, 2, 2, 2},  {6, 2, 1, 2}, {12, 2, 2, 2}, {2, 2, 1, 2}, {4, 2, 2, 2}, {16, 2, 2, 2},
                        {5, 2, 5, 1},  {1, 2, 1, 1}, {9, 3, 1, 3},  {2, 4, 2, 1}, {8, 1, 2, 1}, {6, 1, 2, 1},
                        {32, 1, 2, 1}, {4, 1, 2, 1}, {2, 1, 2, 1},  {5, 1, 5, 1}, {1, 1, 1, 1}};
  for (const Case& c : cases) {
    CAPTURE(c.batch);
    CAPTURE(c.threads);
    const winfer::SessionOptions options = options_for(c.batch, winfer::SessionOptions::kImagesPerRunAuto, c.threads);
    auto session = create_ok(model, options);
    CHECK(session->memory_report().images_per_run == c.images_per_run);
    CHECK(session->memory_report().lanes == c.lanes);
    auto planned = winfer::Session::plan(model, options);
    REQUIRE(planned.ok());
    CHECK(planned.value().images_per_run == c.images_per_run);
    CHECK(planned.value().lanes == c.lanes);
    CHECK(planned.value().arena_bytes == session->memory_report().arena_bytes);
    const winfer::Tensor input =
        random_tensor(winfer::Shape{c.batch, 3, 12, 10}, static_cast<uint64_t>(c.batch), winfer::Layout::kNCHW);
    const winfer::Tensor whole = run_all(*create_ok(model, options_for(c.batch, 0, c.threads)), input)[0];
    CHECK(relative_to_max(run_all(*session, input)[0], whole) <= 1e-5f);
  }
}

TEST_CASE("images_per_run: device auto on the CPU takes the default runs too") {
  const auto model = load_ok(small_net(), true, kSeed);
  winfer::SessionOptions options = options_for(4, winfer::SessionOptions::kImagesPerRunAuto);
  options.device = "auto";
  auto session = create_ok(model, options);
  if (session->device() != "cpu") {
    MESSAGE("device auto chose " << session->device() << ": nothing to check on the CPU");
    return;
  }
  CHECK(session->memory_report().images_per_run == 2);
  CHECK(session->memory_report().lanes == 2);
}

TEST_CASE("images_per_run: the default keeps the whole batch where splitting does not apply") {
  const auto whole_batch = [](std::shared_ptr<const winfer::Model> model, winfer::SessionOptions options) {
    auto session = create_ok(std::move(model), options);
    CHECK(session->memory_report().lanes == 1);
    CHECK(session->memory_report().images_per_run == options.batch);
  };
  const auto model = load_ok(small_net(), true, kSeed);
  // conv_algorithm "auto" would time its layers again in every lane.
  winfer::SessionOptions tuned = options_for(4, winfer::SessionOptions::kImagesPerRunAuto);
  tuned.conv_algorithm = "auto";
  whole_batch(model, tuned);
  // A model loaded without packing (LoadOptions::pack_for "") leaves each session to pack the
  // weights for its algorithm: every lane would hold a copy.
  TempDir dir;
  const auto oihw = load_unpacked(dir);
  REQUIRE(create_ok(oihw, options_for(1, 0, 1))->memory_report().session_weights_bytes > 0);
  const winfer::SessionOptions packing = options_for(4, winfer::SessionOptions::kImagesPerRunAuto);
  whole_batch(oihw, packing);
  auto planned = winfer::Session::plan(oihw, packing);
  REQUIRE(planned.ok());
  CHECK(planned.value().lanes == 1);
  // Asked for, the runs pack their own, and the report counts every lane's.
  const size_t one_lane = create_ok(oihw, options_for(2, 0, 1))->memory_report().session_weights_bytes;
  CHECK(create_ok(oihw, options_for(4, 2))->memory_report().session_weights_bytes == 2 * one_lane);
  // An output that mixes the images of the batch.
  register_batch_sum();
  const auto mixing =
      load_ok(model_header(3, 6, 5) +
                  "outputs: [sum]\n"
                  "layers:\n"
                  "  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, padding: 1}\n"
                  "  - {name: sum, op: test_batch_sum}\n",
              true, kSeed);
  whole_batch(mixing, options_for(4, winfer::SessionOptions::kImagesPerRunAuto));
}

// One thread: the runs are one session, which times "auto"'s layers once and packs the weights
// once, as the whole batch's session would (ShuffleNetV2 at batch 8: auto's whole batch 1.03-1.09x
// the time of im2win's runs of 2).
TEST_CASE("images_per_run: on one thread the default runs of 2 apply to auto and to sessions that pack their own") {
  const auto model = load_ok(small_net(), true, kSeed);
  winfer::SessionOptions tuned = options_for(4, winfer::SessionOptions::kImagesPerRunAuto, 1);
  tuned.conv_algorithm = "auto";
  auto session = create_ok(model, tuned);
  CHECK(session->memory_report().images_per_run == 2);
  CHECK(session->memory_report().lanes == 1);
  CHECK(session->memory_report().conv_choices.size() > 0);
  const winfer::Tensor input = random_tensor(winfer::Shape{4, 3, 12, 10}, 21, winfer::Layout::kNCHW);
  winfer::SessionOptions whole_tuned = options_for(4, 0, 1);
  whole_tuned.conv_algorithm = "auto";
  CHECK(relative_to_max(run_all(*session, input)[0], run_all(*create_ok(model, whole_tuned), input)[0]) <= 1e-4f);

  TempDir dir;
  const auto oihw = load_unpacked(dir);
  auto packing = create_ok(oihw, options_for(4, winfer::SessionOptions::kImagesPerRunAuto, 1));
  CHECK(packing->memory_report().images_per_run == 2);
  CHECK(packing->memory_report().session_weights_bytes ==
        create_ok(oihw, options_for(4, 0, 1))->memory_report().session_weights_bytes);
}

TEST_CASE("images_per_run: the default runs a thread's images at once where each run streams large weights") {
  // A classifier of 960 x 4400 weights (16.1 MiB, each used twice per image), as VGG-16's: more
  // runs would read it from memory that many more times. Batch 8 on 2 threads: one run of 4
  // images per thread, not two of 2.
  const std::string head = model_header(3, 12, 10) +
                           "layers:\n"
                           "  - {name: c1, op: conv2d, in_channels: 3, out_channels: 8, kernel_size: 3, padding: 1}\n"
                           "  - {name: r1, op: relu}\n"
                           "  - {name: flat, op: flatten}\n";
  const auto big = load_ok(head + "  - {name: fc, op: linear, in_features: 960, out_features: 4400}\n", true, kSeed);
  const auto small = load_ok(head + "  - {name: fc, op: linear, in_features: 960, out_features: 4000}\n", true, kSeed);
  const winfer::SessionOptions options = options_for(8, winfer::SessionOptions::kImagesPerRunAuto);
  auto streamed = create_ok(big, options);
  CHECK(streamed->memory_report().images_per_run == 4);
  CHECK(streamed->memory_report().lanes == 2);
  CHECK(create_ok(small, options)->memory_report().images_per_run == 2);  // 14.6 MiB
  // On one thread the whole batch in one run.
  const auto one_thread = create_ok(big, options_for(8, winfer::SessionOptions::kImagesPerRunAuto, 1));
  CHECK(one_thread->memory_report().lanes == 1);
  CHECK(one_thread->memory_report().images_per_run == 8);
  const winfer::Tensor input = random_tensor(winfer::Shape{8, 3, 12, 10}, 8, winfer::Layout::kNCHW);
  const winfer::Tensor whole = run_all(*create_ok(big, options_for(8, 0)), input)[0];
  CHECK(relative_to_max(run_all(*streamed, input)[0], whole) <= 1e-5f);
}

// Weights beyond a last-level cache's share (24 MiB) are read from memory by every run: where they
// also dwarf an image's activations (8x its arena), the default runs 4 images at a time, not 2;
// where the activations are large as well (DenseNet's concatenated features), runs of 2 stay.
TEST_CASE("images_per_run: the default takes runs of 4 where every run reads weights that dwarf its activations") {
  // A 1x1 convolution 4096 -> 2048 (32 MiB of weights, each used H x W times per image).
  const auto model_at = [](int64_t side) {
    return load_ok(model_header(4096, side, side) +
                       "layers:\n"
                       "  - {name: proj, op: conv2d, in_channels: 4096, out_channels: 2048, kernel_size: 1}\n"
                       "  - {name: relu, op: relu}\n",
                   true, kSeed);
  };
  // 4x4 images (an image's arena 384 KiB): 32 multiply-adds per weight and image, a convolution,
  // not the weights a classifier streams (which take a thread's whole share in one run).
  const auto small_images = model_at(4);
  auto one_thread = create_ok(small_images, options_for(8, winfer::SessionOptions::kImagesPerRunAuto, 1));
  CHECK(one_thread->memory_report().images_per_run == 4);
  CHECK(one_thread->memory_report().lanes == 1);
  auto two_threads = create_ok(small_images, options_for(8, winfer::SessionOptions::kImagesPerRunAuto, 2));
  CHECK(two_threads->memory_report().images_per_run == 4);
  CHECK(two_threads->memory_report().lanes == 2);
  // Batch 6 on one thread: runs of 3 (the same runs every time, no rest).
  CHECK(create_ok(small_images, options_for(6, winfer::SessionOptions::kImagesPerRunAuto, 1))
            ->memory_report()
            .images_per_run == 3);
  const winfer::Tensor input = random_tensor(winfer::Shape{8, 4096, 4, 4}, 8, winfer::Layout::kNCHW);
  const winfer::Tensor whole = run_all(*create_ok(small_images, options_for(8, 0, 1)), input)[0];
  CHECK(relative_to_max(run_all(*one_thread, input)[0], whole) <= 1e-5f);
  CHECK(relative_to_max(run_all(*two_threads, input)[0], whole) <= 1e-5f);
  // 16x16 images: an image's arena 6 MiB, more than an eighth of the weights.
  const auto large_images = model_at(16);
  CHECK(create_ok(large_images, options_for(8, winfer::SessionOptions::kImagesPerRunAuto, 1))
            ->memory_report()
            .images_per_run == 2);
  // Fewer weights (a 4096 -> 1024 projection, 16 MiB): runs of 2 whatever the images.
  const auto fewer_weights = load_ok(model_header(4096, 4, 4) +
                                         "layers:\n"
                                         "  - {name: proj, op: conv2d, in_channels: 4096, out_channels: 1024, "
                                         "kernel_size: 1}\n",
                                     true, kSeed);
  CHECK(create_ok(fewer_weights, options_for(8, winfer::SessionOptions::kImagesPerRunAuto, 1))
            ->memory_report()
            .images_per_run == 2);
}
