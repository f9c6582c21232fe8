// A model packs its convolution weights once at load (LoadOptions::pack_for, default im2win) and
// holds no second copy: sessions with that algorithm share them, sessions with another one
// unpack and pack their own, and every algorithm computes exactly what it computes from a model
// that kept its OIHW weights.
#include <cstring>

#include "engine/model_test_util.h"

using namespace winfer_test;

namespace {

winfer::Tensor fixed_input(const winfer::Shape& shape) {
  winfer::Tensor input = winfer::Tensor::allocate(shape, winfer::Layout::kNCHW);
  for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] = static_cast<float>((i * 37) % 101) / 101.f - 0.4f;
  return input;
}

std::shared_ptr<const winfer::Model> load_model(const std::string& path, const std::string& pack_for,
                                                bool random_weights = false) {
  winfer::LoadOptions options;
  options.pack_for = pack_for;
  if (random_weights) options.random_weights_seed = 3;
  auto model = winfer::Model::load(repo_path(path), options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

std::vector<float> run(const std::shared_ptr<const winfer::Model>& model, const std::string& conv, int64_t batch) {
  winfer::SessionOptions options;
  options.conv_algorithm = conv;
  options.batch = batch;
  // The whole batch in one run, whatever the thread count: a session that packs its own weights
  // declines runs side by side, one that shares the model's does not, and winograd's tile (hence
  // its rounding) depends on the images per run; this file compares packings, not runs.
  options.images_per_run = 0;
  auto session = winfer::Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  auto out = session.value()->run(fixed_input(session.value()->input_shape()));
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  const winfer::Tensor& t = out.value();
  return std::vector<float>(t.data(), t.data() + t.numel());
}

}  // namespace

TEST_CASE("weight sharing: every algorithm gives the same bits from a packed model as from one that kept OIHW") {
  // fashion_shufflenet has depthwise layers and channel counts that leave padded panels.
  for (const char* path : {"models/fashion/fashion_resnet.yaml", "models/fashion/fashion_shufflenet.yaml"}) {
    INFO(path);
    const auto packed = load_model(path, "im2win");
    const auto kept = load_model(path, "");
    CHECK(packed->weight_bytes() >= kept->weight_bytes());  // padded panels only add
    for (const char* conv : {"im2win", "indirect", "im2col", "direct"}) {
      INFO(conv);
      for (int64_t batch : {1, 3}) CHECK(run(packed, conv, batch) == run(kept, conv, batch));
    }
  }
}

TEST_CASE("weight sharing: im2win sessions read the model's packed weights, others pack their own") {
  const auto model = load_model("models/zoo/resnet18.yaml", "im2win", true);
  const auto kept = load_model("models/zoo/resnet18.yaml", "", true);
  // Every layer fills whole panels: packed in place, the model is exactly its OIHW size.
  CHECK(model->weight_bytes() == kept->weight_bytes());
  winfer::SessionOptions options;
  auto a = winfer::Session::create(model, options);
  auto b = winfer::Session::create(model, options);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.value()->memory_report().session_weights_bytes == 0);
  CHECK(b.value()->memory_report().session_weights_bytes == 0);
  CHECK(a.value()->memory_report().packed_weights_bytes > 0);
  // Without packing at load, each session packs a copy of the convolution weights.
  auto own = winfer::Session::create(kept, options);
  REQUIRE(own.ok());
  CHECK(own.value()->memory_report().session_weights_bytes > kept->weight_bytes() / 2);
  options.conv_algorithm = "im2col";
  auto other = winfer::Session::create(model, options);
  REQUIRE(other.ok());
  CHECK(other.value()->memory_report().session_weights_bytes > model->weight_bytes() / 2);
}

TEST_CASE("weight sharing: pack_for names a CPU algorithm or nothing") {
  winfer::LoadOptions options;
  options.pack_for = "fft";
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"), options);
  REQUIRE_FALSE(model.ok());
  const std::string& message = model.status().message();
  INFO(message);
  CHECK(model.status().code() == winfer::ErrorCode::kInvalidArgument);
  CHECK(contains(message, "tiny_net.yaml"));
  CHECK(contains(message, "LoadOptions::pack_for names no CPU convolution algorithm: 'fft'"));
  CHECK(contains(message, "im2win"));
  // Any CPU algorithm: im2col's GHWIO layout is packed beside the OIHW weights, which are then
  // dropped (the same size: no padding); its sessions share it, others unpack.
  options.pack_for = "im2col";
  auto im2col = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"), options);
  REQUIRE(im2col.ok());
  options.pack_for = "";
  auto kept = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"), options);
  REQUIRE(kept.ok());
  CHECK(im2col.value()->weight_bytes() == kept.value()->weight_bytes());
  for (const char* conv : {"im2col", "im2win"}) CHECK(run(im2col.value(), conv, 2) == run(kept.value(), conv, 2));
  winfer::SessionOptions session_options;
  session_options.conv_algorithm = "im2col";
  auto session = winfer::Session::create(im2col.value(), session_options);
  REQUIRE(session.ok());
  CHECK(session.value()->memory_report().session_weights_bytes == 0);
}

TEST_CASE(
    "weight sharing: pack_for = winograd keeps only the transformed weights, other algorithms are told why they cannot "
    "run") {
  // fashion_vgg: 3x3 stride-1 convolutions (winograd) and others (im2win, the fallback).
  const auto model = load_model("models/fashion/fashion_vgg.yaml", "winograd");
  const auto kept = load_model("models/fashion/fashion_vgg.yaml", "");
  winfer::SessionOptions options;
  options.conv_algorithm = "winograd";
  auto session = winfer::Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  CHECK(session.value()->memory_report().session_weights_bytes == 0);
  // The same results as a session packing its own from OIHW (the packing is the same).
  CHECK(run(model, "winograd", 2) == run(kept, "winograd", 2));
  options.conv_algorithm = "im2col";
  auto other = winfer::Session::create(model, options);
  REQUIRE_FALSE(other.ok());
  INFO(other.status().message());
  CHECK(other.status().code() == winfer::ErrorCode::kInvalidArgument);
  CHECK(contains(other.status().message(), "the weights were packed for winograd at load (LoadOptions::pack_for)"));
  CHECK(contains(other.status().message(), "load the model with pack_for = \"im2col\""));
}

namespace {

// 256 -> 256 channels at 4x4 (4.2 MB of transformed weights: winograd declines its 4 tiles at
// batch 1, not 8 or more) and 256 -> 16 (0.5 MB: always winograd).
std::string declined_model(int64_t batch) {
  return "format: winfer/1\ninput: {name: input, shape: [" + std::to_string(batch) +
         ", 256, 4, 4]}\n"
         "layers:\n"
         "  - {name: wide, op: conv2d, in_channels: 256, out_channels: 256, kernel_size: 3, padding: 1}\n"
         "  - {name: wide_relu, op: relu}\n"
         "  - {name: narrow, op: conv2d, in_channels: 256, out_channels: 16, kernel_size: 3, padding: 1}\n";
}

// Runs a winograd session at `batch`; returns the output and each conv layer's kernel.
std::vector<float> run_winograd(const std::shared_ptr<const winfer::Model>& model, int64_t batch,
                                std::string* wide_kernel, std::string* narrow_kernel) {
  winfer::SessionOptions options;
  options.conv_algorithm = "winograd";
  options.batch = batch;
  // The whole batch in one run: winograd's choices depend on the tiles of a run, and the default
  // would split only the session whose model shares its packed weights.
  options.images_per_run = 0;
  auto session = winfer::Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  auto out = session.value()->run(fixed_input(session.value()->input_shape()));
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  for (const winfer::LayerTiming& t : session.value()->last_timings()) {
    if (t.name == "wide") *wide_kernel = t.kernel;
    if (t.name == "narrow") *narrow_kernel = t.kernel;
  }
  const winfer::Tensor& t = out.value();
  return std::vector<float>(t.data(), t.data() + t.numel());
}

winfer::LoadOptions random_weights(const std::string& pack_for) {
  winfer::LoadOptions options;
  options.pack_for = pack_for;
  options.random_weights_seed = 5;
  return options;
}

}  // namespace

TEST_CASE("weight sharing: winograd sessions leave the layers winograd declines to im2win, whatever the model packed") {
  TempDir dir;
  auto kept = load_text(dir, declined_model(1), random_weights(""));
  REQUIRE_MESSAGE(kept.ok(), kept.status().message());
  // Packed for winograd at batch 1: "wide" is declined there, so it is packed for im2win.
  auto packed = load_text(dir, declined_model(1), random_weights("winograd"));
  REQUIRE_MESSAGE(packed.ok(), packed.status().message());
  std::string wide, narrow, kept_wide, kept_narrow;
  for (int64_t batch : {1, 8}) {
    INFO("batch " << batch);
    const std::vector<float> out = run_winograd(packed.value(), batch, &wide, &narrow);
    CHECK(out == run_winograd(kept.value(), batch, &kept_wide, &kept_narrow));
    CHECK(wide == kept_wide);
    CHECK(narrow == "winograd");
    if (batch == 1) {
      INFO(wide);
      CHECK(wide.rfind("im2win (winograd leaves N1 C256 H4 W4 -> Co256", 0) == 0);
      CHECK(contains(wide, "of transformed weights would stream from memory for only 4 tiles"));
    } else {
      CHECK(wide == "winograd");  // 8 tiles of F(4x4): unpacked from im2win's panels, packed again
    }
  }
  // Packed for winograd at batch 8, "wide" holds only transformed weights, which no other
  // algorithm can use: a batch-1 session runs it with winograd rather than failing.
  auto packed8 = load_text(dir, declined_model(8), random_weights("winograd"));
  REQUIRE_MESSAGE(packed8.ok(), packed8.status().message());
  const std::vector<float> out = run_winograd(packed8.value(), 1, &wide, &narrow);
  CHECK(wide == "winograd");
  CHECK(narrow == "winograd");
  CHECK(out.size() == 16u * 4 * 4);
}
