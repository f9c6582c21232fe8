// Whole networks on the CUDA backend against the CPU backend: the shipped trained models, zoo
// architectures (random weights, small inputs so that the emulator stays quick), every CUDA
// convolution algorithm, planned/unplanned/poisoned memory, weights shared between sessions,
// and the errors a user can get. Built twice (CMakeLists.txt): against the host emulator
// (winfer_engine_cuda_emu_tests, every case a ctest test) and natively (winfer_engine_cuda_tests,
// skipped without a device). Under the emulator the algorithms built on cuBLAS/cuDNN (im2col,
// cudnn) cannot run; the tests say so and check the error instead.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/src/cuda/device_weights.h"
#include "kernels/cuda/fault_injection.h"
#include "kernels/cuda/runtime.h"
#include "winfer/model.h"
#include "winfer/npy.h"
#include "winfer/session.h"

namespace {

using winfer::Model;
using winfer::Session;
using winfer::SessionOptions;
using winfer::Shape;
using winfer::Tensor;

std::string repo(const std::string& relative) { return std::string(WINFER_SOURCE_DIR) + "/" + relative; }

#if defined(WINFER_CUDA_EMULATED)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

// Algorithms that need cuBLAS or cuDNN, which the emulator does not have.
bool needs_libraries(const std::string& algorithm) { return algorithm == "im2col" || algorithm == "cudnn"; }

Tensor random_input(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::allocate(shape, winfer::Layout::kNCHW);
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data()[i] = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f;
  }
  return t;
}

// max |a - b| / max |b|: the parity tests' measure.
double relative_error(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    REQUIRE(std::isfinite(got.data()[i]));
    diff = std::max(diff, std::fabs(double(got.data()[i]) - double(want.data()[i])));
    scale = std::max(scale, std::fabs(double(want.data()[i])));
  }
  REQUIRE(scale > 0);
  return diff / scale;
}

std::shared_ptr<const Model> load(const std::string& path, const winfer::LoadOptions& options = {}) {
  auto model = Model::load(path, options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

// A zoo YAML with its input resized to `size`x`size` (written into `dir`).
std::string resized_zoo_model(const winfer_test::TempDir& dir, const std::string& name, int size) {
  std::ifstream in(repo("models/zoo/" + name + ".yaml"));
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const std::string from = "shape: [1, 3, 224, 224]";
  const size_t at = yaml.find(from);
  REQUIRE(at != std::string::npos);
  yaml.replace(at, from.size(), "shape: [1, 3, " + std::to_string(size) + ", " + std::to_string(size) + "]");
  const std::string path = dir.file(name + ".yaml");
  winfer_test::write_bytes(path, yaml);
  return path;
}

Tensor run(std::shared_ptr<const Model> model, const Tensor& input, SessionOptions options) {
  options.batch = input.shape()[0];
  auto session = Session::create(std::move(model), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  auto out = session.value()->run(input);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  return std::move(out).value();
}

// Runs `model` on CUDA with every algorithm that can run here and compares with the CPU's im2win.
int check_against_cpu(const std::shared_ptr<const Model>& model, const Tensor& input, double tolerance) {
  SessionOptions cpu;
  const Tensor want = run(model, input, cpu);
  int checked = 0;
  for (const std::string& algorithm : winfer::conv_algorithm_names("cuda")) {
    INFO(model->name() << " on cuda with " << algorithm);
    SessionOptions options;
    options.device = "cuda";
    options.conv_algorithm = algorithm;
    options.batch = input.shape()[0];
    auto session = Session::create(model, options);
    if (kEmulated && needs_libraries(algorithm)) {
      // Either creation (cudnn tunes on the device) or the first run must say what is missing.
      winfer::Status status = session.ok() ? session.value()->run(input).status() : session.status();
      REQUIRE_FALSE(status.ok());
      CHECK(status.code() == winfer::ErrorCode::kUnsupported);
      continue;
    }
    REQUIRE_MESSAGE(session.ok(), session.status().message());
    CHECK(session.value()->device() == "cuda:0");
    auto got = session.value()->run(input);
    REQUIRE_MESSAGE(got.ok(), got.status().message());
    const double error = relative_error(got.value(), want);
    MESSAGE(model->name() << " cuda " << algorithm << ": max rel error vs CPU " << error);
    CHECK(error <= tolerance);
    ++checked;
  }
  return checked;
}

TEST_CASE("cuda session: the shipped tiny model equals PyTorch's golden output") {
  auto model = load(repo("models/examples/tiny_net.yaml"));
  auto input = winfer::read_npy(repo("models/examples/tiny_net.input.npy"));
  REQUIRE(input.ok());
  auto golden = winfer::read_npy(repo("models/examples/tiny_net.output.npy"));
  REQUIRE(golden.ok());
  SessionOptions options;
  options.device = "cuda";
  options.conv_algorithm = "im2win";
  const Tensor got = run(model, input.value(), options);
  CHECK(relative_error(got, golden.value()) <= 1e-5);
}

TEST_CASE("cuda session: the trained Fashion-MNIST models equal the CPU backend") {
  for (const char* name : {"fashion_resnet", "fashion_shufflenet", "fashion_vgg"}) {
    auto model = load(repo(std::string("models/fashion/") + name + ".yaml"));
    Shape shape = model->input_shape();
    shape[0] = 2;
    CHECK(check_against_cpu(model, random_input(shape, 7), 1e-4) >= (kEmulated ? 2 : 3));
  }
}

TEST_CASE("cuda session: zoo architectures (random weights, small inputs) equal the CPU backend") {
  winfer_test::TempDir dir;
  winfer::LoadOptions random;
  random.random_weights_seed = 3;
  struct Case {
    const char* name;
    int size;
  };
  for (const Case& c : {Case{"resnet18", 48}, Case{"shufflenet_v2_x0_5", 64}, Case{"resnet50", 32}}) {
    auto model = load(resized_zoo_model(dir, c.name, c.size), random);
    CHECK(check_against_cpu(model, random_input(model->input_shape(), 11), 1e-4) >= 2);
  }
}

// EfficientNet-B0's squeeze-and-excitation products fused into the projections after them (rule
// channel_scale_conv: the CUDA kernel scales a copy of the input in its workspace, then convolves
// it, with the residual as the third input where there is one).
TEST_CASE("cuda session: convolutions with a fused channel scale (EfficientNet-B0) equal the CPU backend") {
  winfer_test::TempDir dir;
  winfer::LoadOptions random;
  random.random_weights_seed = 5;
  auto model = load(resized_zoo_model(dir, "efficientnet_b0", 64), random);
  int fused = 0;
  for (const winfer::LayerInfo& layer : model->layers()) {
    for (const std::string& name : layer.fused) fused += name.size() > 4 && name.substr(name.size() - 4) == ".mul";
  }
  CHECK(fused >= 3);  // at 64x64: features.1-2, whose projections have small weights
  CHECK(check_against_cpu(model, random_input(model->input_shape(), 13), 1e-4) >= 2);
}

TEST_CASE("cuda session: planned, unplanned and poisoned memory give the same result") {
  auto model = load(repo("models/fashion/fashion_shufflenet.yaml"));
  Shape shape = model->input_shape();
  shape[0] = 3;
  const Tensor input = random_input(shape, 5);
  SessionOptions planned;
  planned.device = "cuda";
  const Tensor want = run(model, input, planned);
  SessionOptions unplanned = planned;
  unplanned.plan_memory = false;
  SessionOptions poisoned = planned;
  poisoned.poison_unused_memory = true;
  const Tensor a = run(model, input, unplanned);
  const Tensor b = run(model, input, poisoned);
  CHECK(std::equal(a.data(), a.data() + a.numel(), want.data()));
  CHECK(std::equal(b.data(), b.data() + b.numel(), want.data()));
}

TEST_CASE("cuda session: one arena of the planned size, 256-byte offsets, weights uploaded once per model") {
  auto model = load(repo("models/fashion/fashion_resnet.yaml"));
  SessionOptions options;
  options.device = "cuda";
  auto first = Session::create(model, options);
  REQUIRE_MESSAGE(first.ok(), first.status().message());
  const winfer::MemoryReport& report = first.value()->memory_report();
  CHECK(report.alignment == 256);
  for (const winfer::MemoryBuffer& b : report.buffers) CHECK(b.offset % 256 == 0);
  CHECK(report.arena_bytes == report.activations_lower_bound_bytes);
  CHECK(first.value()->activation_bytes() == report.arena_bytes);
  const size_t uploaded = winfer::device_weights_of(*model).bytes_on(0);
  CHECK(uploaded > 0);
  CHECK(uploaded == report.packed_weights_bytes);
  auto second = Session::create(model, options);  // same model, device and algorithm: nothing new
  REQUIRE(second.ok());
  CHECK(winfer::device_weights_of(*model).bytes_on(0) == uploaded);
  options.conv_algorithm = "direct";  // another weight layout: uploaded next to the first
  auto third = Session::create(model, options);
  REQUIRE(third.ok());
  CHECK(winfer::device_weights_of(*model).bytes_on(0) > uploaded);
  // Sessions run independently on the shared weights.
  const Tensor input = random_input(first.value()->input_shape(), 9);
  auto a = first.value()->run(input);
  auto b = second.value()->run(input);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(std::equal(a.value().data(), a.value().data() + a.value().numel(), b.value().data()));
}

TEST_CASE("cuda session: per-layer timings and kernel names are reported") {
  auto model = load(repo("models/fashion/fashion_resnet.yaml"));
  SessionOptions options;
  options.device = "cuda";
  auto session = Session::create(model, options);
  REQUIRE(session.ok());
  REQUIRE(session.value()->run(random_input(session.value()->input_shape(), 1)).ok());
  const auto& timings = session.value()->last_timings();
  REQUIRE_FALSE(timings.empty());
  bool saw_im2win = false;
  for (const auto& t : timings) {
    CHECK(t.milliseconds >= 0);
    saw_im2win = saw_im2win || t.kernel.find("im2win") == 0;
  }
  CHECK(saw_im2win);
}

TEST_CASE("cuda session: errors name the device, the algorithm and what is known") {
  auto model = load(repo("models/examples/tiny_net.yaml"));
  SessionOptions options;
  options.device = "cuda";
  options.conv_algorithm = "indirect";  // a CPU algorithm
  auto s = Session::create(model, options);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("unknown convolution algorithm 'indirect' for CUDA") != std::string::npos);
  CHECK(s.status().message().find("im2win") != std::string::npos);

  options.conv_algorithm = "im2win";
  options.device = "cuda:7";
  s = Session::create(model, options);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == winfer::ErrorCode::kDeviceError);
  CHECK(s.status().message().find("no CUDA device cuda:7") != std::string::npos);

  options.device = "gpu";
  s = Session::create(model, options);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("unknown device 'gpu'") != std::string::npos);

  options.device = "auto";  // a device is present here (the emulator is one)
  s = Session::create(model, options);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s.value()->device() == "cuda:0");

  // Per-layer algorithm timing ("auto") is CPU-only: refused on cuda, and device "auto" keeps the CPU for it.
  options.conv_algorithm = "auto";
  s = Session::create(model, options);
  REQUIRE_MESSAGE(s.ok(), s.status().message());
  CHECK(s.value()->device() == "cpu");
  options.device = "cuda";
  s = Session::create(model, options);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == winfer::ErrorCode::kUnsupported);
  CHECK(s.status().message().find("CPU-only") != std::string::npos);
}

TEST_CASE("cuda session: out of device memory at create is reported, and the next session works") {
  auto model = load(repo("models/fashion/fashion_resnet.yaml"));
  winfer::cuda::testing::fail_allocations_above(4096);
  SessionOptions options;
  options.device = "cuda";
  auto failed = Session::create(model, options);
  winfer::cuda::testing::clear_faults();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == winfer::ErrorCode::kOutOfMemory);
  CHECK(failed.status().message().find("out of memory") != std::string::npos);
  CHECK(failed.status().message().find("bytes") != std::string::npos);
  auto session = Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  CHECK(session.value()->run(random_input(session.value()->input_shape(), 2)).ok());
}

TEST_CASE("cuda session: a batch larger than the device's free memory is refused before allocating") {
  // cudaMemGetInfo: natively the GPU's memory, under the emulator the host's less its allocations.
  auto model = load(repo("models/examples/tiny_net.yaml"));
  SessionOptions options;
  options.device = "cuda";
  options.plan_memory = false;                 // every tensor on its own: the most memory a batch can ask for
  auto one = Session::create(model, options);  // its weights are on the device before the big one
  REQUIRE_MESSAGE(one.ok(), one.status().message());
  const size_t per_sample = one.value()->memory_report().activations_sum_bytes;
  // The largest batch the kernels take: the stem's 16x16 output pixels fit in an int
  // (fits_launch_limits). The same sizes compile here as on a GPU.
  constexpr int kBatch = 8000000;
  size_t free_bytes = 0, total_bytes = 0;
  REQUIRE(cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess);
  if (per_sample * kBatch <= free_bytes) {
    MESSAGE("skipped: " << free_bytes << " bytes free hold batch " << kBatch);
    return;
  }
  options.batch = kBatch;
  auto failed = Session::create(model, options);
  REQUIRE_FALSE(failed.ok());
  const std::string& message = failed.status().message();
  CHECK_MESSAGE(failed.status().code() == winfer::ErrorCode::kOutOfMemory, message);
  CHECK(message.find("cuda:0: ") == 0);
  CHECK(message.find("of device memory for its activations (batch 8000000), but only") != std::string::npos);
  CHECK(message.find("are free; use a smaller batch") != std::string::npos);
  size_t free_after = 0;
  REQUIRE(cudaMemGetInfo(&free_after, &total_bytes) == cudaSuccess);
  if (kEmulated) CHECK(free_after == free_bytes);  // nothing was allocated (natively others share the GPU)
}

TEST_CASE("cuda session: a device failure in the middle of a run names the layer, and running goes on") {
  auto model = load(repo("models/fashion/fashion_shufflenet.yaml"));
  SessionOptions options;
  options.device = "cuda";
  auto session = Session::create(model, options);
  REQUIRE(session.ok());
  const Tensor input = random_input(session.value()->input_shape(), 4);
  auto want = session.value()->run(input);
  REQUIRE(want.ok());
  winfer::cuda::testing::fail_launches_after(10);
  auto failed = session.value()->run(input);
  winfer::cuda::testing::clear_faults();
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().code() == winfer::ErrorCode::kDeviceError);
  CHECK(failed.status().message().find("cuda:0: ") == 0);
  CHECK(failed.status().message().find("layer '") != std::string::npos);
  CHECK(failed.status().message().find("cudaErrorLaunchFailure") != std::string::npos);
  // The same session and a new one both run again, with the same result as before.
  auto again = session.value()->run(input);
  REQUIRE_MESSAGE(again.ok(), again.status().message());
  CHECK(std::equal(again.value().data(), again.value().data() + again.value().numel(), want.value().data()));
  auto other = Session::create(model, options);
  REQUIRE(other.ok());
  CHECK(other.value()->run(input).ok());
}

TEST_CASE("cuda session: NaN and Inf propagate, and check_numerics names where they appear") {
  auto model = load(repo("models/examples/tiny_net.yaml"));
  SessionOptions options;
  options.device = "cuda";
  Tensor input = random_input(model->input_shape(), 8);
  input.data()[5] = std::nanf("");
  auto plain = Session::create(model, options);
  REQUIRE(plain.ok());
  auto out = plain.value()->run(input);
  REQUIRE(out.ok());
  CHECK(
      std::any_of(out.value().data(), out.value().data() + out.value().numel(), [](float v) { return std::isnan(v); }));

  options.check_numerics = true;
  auto checking = Session::create(model, options);
  REQUIRE(checking.ok());
  auto failed = checking.value()->run(input);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().message().find("input 'input' has 1 non-finite value(s)") != std::string::npos);
  CHECK(failed.status().message().find("NaN at index 5") != std::string::npos);

  // Finite but huge input: the first convolution overflows to Inf, and the error names it.
  Tensor huge = random_input(model->input_shape(), 8);
  for (int64_t i = 0; i < huge.numel(); ++i) huge.data()[i] *= 3e38f;
  failed = checking.value()->run(huge);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().message().find("layer 'stem'") != std::string::npos);
  CHECK(failed.status().message().find("non-finite") != std::string::npos);
  CHECK(checking.value()->run(random_input(model->input_shape(), 9)).ok());
}

}  // namespace
