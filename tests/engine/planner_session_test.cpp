// The memory plan as a Session builds and uses it: lifetimes and in-place decisions on small
// graphs, planned runs equal to unplanned ones (with the dead arena bytes poisoned), random
// graphs, and run_into() allocating nothing after its first call.
#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include "engine/model_test_util.h"
#include "engine/plan_test_util.h"
#include "kernels/cpu/gemm.h"

using namespace winfer_test;

// Counts operator new calls while `g_counting` is set (the allocation test below). Every
// other test is unaffected: allocation still goes to malloc, deletion to free.
namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

// ThreadSanitizer's runtime defines every operator new/delete itself and cannot be overridden
// (link error), so its build (scripts/sanitize.sh tsan) counts nothing and skips the test below.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WINFER_NO_NEW_REPLACEMENT 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define WINFER_NO_NEW_REPLACEMENT 1
#endif
#ifndef WINFER_NO_NEW_REPLACEMENT
// Every form of new and delete is replaced, not only the plain one: under a sanitizer the forms
// left out would come from its runtime, whose allocations the free() below cannot release (ASan
// reports the mismatch) and whose own definitions collide with these at link time (TSan).
namespace {
void* counted_malloc(std::size_t size) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* counted_aligned(std::size_t size, std::align_val_t align) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(align);
  return std::aligned_alloc(a, (size + a - 1) / a * a == 0 ? a : (size + a - 1) / a * a);
}
void* or_throw(void* p) {
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t size) { return or_throw(counted_malloc(size)); }
void* operator new[](std::size_t size) { return or_throw(counted_malloc(size)); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return counted_malloc(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return counted_malloc(size); }
void* operator new(std::size_t size, std::align_val_t a) { return or_throw(counted_aligned(size, a)); }
void* operator new[](std::size_t size, std::align_val_t a) { return or_throw(counted_aligned(size, a)); }
void* operator new(std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned(size, a);
}
void* operator new[](std::size_t size, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned(size, a);
}
// GCC (at -O1) takes these free() calls for a mismatch with the operator new they pair with; they
// are the pair: every new above is malloc/aligned_alloc.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#endif  // WINFER_NO_NEW_REPLACEMENT

namespace {

winfer::LoadOptions random_weights(bool fuse = true) {
  winfer::LoadOptions options;
  options.random_weights_seed = 3;
  options.fuse = fuse;
  return options;
}

std::shared_ptr<const winfer::Model> load_ok(const std::string& yaml, const winfer::LoadOptions& options) {
  TempDir dir;
  auto model = load_text(dir, yaml, options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

// Planned (with poisoning) and unplanned runs give bit-identical outputs.
void check_planned_equals_unplanned(std::shared_ptr<const winfer::Model> model, const winfer::Tensor& input,
                                    winfer::SessionOptions options = {}) {
  options.batch = input.shape()[0];
  options.plan_memory = false;
  auto reference = session_ok(model, options)->run_all(input);
  options.plan_memory = true;
  options.poison_unused_memory = true;
  auto planned = session_ok(model, options)->run_all(input);
  REQUIRE(reference.ok());
  REQUIRE(planned.ok());
  REQUIRE(reference.value().size() == planned.value().size());
  for (size_t i = 0; i < planned.value().size(); ++i) CHECK(same_bits(planned.value()[i], reference.value()[i]));
}

}  // namespace

TEST_CASE("plan golden: a plain chain of convolutions runs in two buffers") {
  auto model =
      load_ok(model_header(4, 8, 8) + "layers:\n" + conv("a", 4, 4, 1) + conv("b", 4, 4, 1) + conv("c", 4, 4, 1),
              random_weights());
  winfer::SessionOptions options;
  options.conv_algorithm = "direct";  // no workspace
  auto session = session_ok(model, options);
  const winfer::MemoryReport& r = session->memory_report();
  const size_t tensor = 4 * 8 * 8 * sizeof(float);
  CHECK(r.arena_bytes == 2 * tensor);
  CHECK(r.activations_lower_bound_bytes == 2 * tensor);
  CHECK(r.activations_sum_bytes == 4 * tensor);
  CHECK(session->activation_bytes() == 2 * tensor);
  CHECK(r.steps == std::vector<std::string>{"a", "b", "c"});
  CHECK(find_buffer(r, "input").first_step == 0);
  CHECK(find_buffer(r, "input").last_step == 0);
  CHECK(find_buffer(r, "a").offset == find_buffer(r, "c").offset);
  CHECK(find_buffer(r, "c").last_step == 2);  // the output, pinned to the end
  check_planned_equals_unplanned(model, random_tensor(winfer::Shape{2, 4, 8, 8}, 1, winfer::Layout::kNCHW), options);
}

std::string residual_block() {
  return model_header(4, 8, 8) + "layers:\n" + conv("x", 4, 4, 3) + conv("a", 4, 4, 3) + conv("b", 4, 4, 3) +
         "  - {name: y, op: add, inputs: [b, x]}\n" + conv("z", 4, 4, 1);
}

// Unfused: fused, the add would be part of conv b (next test).
TEST_CASE("plan golden: a residual block keeps the skip tensor alive, the add runs in place") {
  auto model = load_ok(residual_block(), random_weights(/*fuse=*/false));
  winfer::SessionOptions options;
  options.conv_algorithm = "direct";
  auto session = session_ok(model, options);
  const winfer::MemoryReport& r = session->memory_report();
  const size_t tensor = 4 * 8 * 8 * sizeof(float);
  const winfer::MemoryBuffer& x = find_buffer(r, "x");
  CHECK(x.first_step == 0);
  CHECK(x.last_step == 3);  // read by the add, three steps later
  CHECK(find_buffer(r, "y").in_place_of == "b");
  CHECK(find_buffer(r, "y").offset == find_buffer(r, "b").offset);
  CHECK(r.in_place_layers == 1);
  for (const char* other : {"a", "b", "y"}) CHECK(find_buffer(r, other).offset != x.offset);
  CHECK(r.arena_bytes == 3 * tensor);  // x, a and b at step 2
  check_planned_equals_unplanned(model, random_tensor(winfer::Shape{1, 4, 8, 8}, 2, winfer::Layout::kNCHW), options);
}

TEST_CASE(
    "plan golden: a fused residual stays alive until its conv, whose output takes it over where the algorithm allows") {
  auto model = load_ok(residual_block(), random_weights());  // conv b absorbs the add: b(a, x) -> y
  const size_t tensor = 4 * 8 * 8 * sizeof(float);
  for (const char* algorithm : {"direct", "im2col", "im2win", "indirect"}) {
    INFO(algorithm);
    winfer::SessionOptions options;
    options.conv_algorithm = algorithm;
    auto session = session_ok(model, options);
    const winfer::MemoryReport& r = session->memory_report();
    const winfer::MemoryBuffer& x = find_buffer(r, "x");
    CHECK(x.last_step == 2);  // read by the fused conv
    CHECK(find_buffer(r, "y").first_step == 2);
    // im2win and indirect add the residual element by element in their store: y may be x.
    const bool over_residual = std::string(algorithm) == "im2win" || std::string(algorithm) == "indirect";
    if (over_residual) {
      CHECK(find_buffer(r, "y").in_place_of == "x");
      CHECK(find_buffer(r, "y").offset == x.offset);
      CHECK(r.in_place_layers == 1);
      CHECK(find_buffer(r, "a").offset != x.offset);
    } else {
      CHECK(find_buffer(r, "y").in_place_of.empty());
      CHECK(r.in_place_layers == 0);
      for (const char* other : {"a", "y"}) CHECK(find_buffer(r, other).offset != x.offset);
      CHECK(r.arena_bytes >= 3 * tensor);  // x, a and y at step 2 (+ the conv's workspace)
    }
    check_planned_equals_unplanned(model, random_tensor(winfer::Shape{1, 4, 8, 8}, 2, winfer::Layout::kNCHW), options);
  }
}

TEST_CASE("plan golden: an unfused relu after a conv shares the conv's buffer") {
  const std::string yaml = model_header(4, 8, 8) + "layers:\n" + conv("c1", 4, 4, 3) + "  - {name: r1, op: relu}\n" +
                           conv("c2", 4, 4, 3) + "  - {name: r2, op: relu6}\n" + conv("c3", 4, 4, 1, "c2");
  auto model = load_ok(yaml, random_weights(/*fuse=*/false));
  auto session = session_ok(model);
  const winfer::MemoryReport& r = session->memory_report();
  CHECK(find_buffer(r, "r1").in_place_of == "c1");
  CHECK(find_buffer(r, "r1").offset == find_buffer(r, "c1").offset);
  // c2 is read again by c3 after r2, so r2 must not overwrite it.
  CHECK(find_buffer(r, "r2").in_place_of.empty());
  CHECK(find_buffer(r, "r2").offset != find_buffer(r, "c2").offset);
  CHECK(r.in_place_layers == 1);
  CHECK(r.arena_bytes >= r.activations_lower_bound_bytes);
  check_planned_equals_unplanned(model, random_tensor(winfer::Shape{3, 4, 8, 8}, 3, winfer::Layout::kNCHW));
}

TEST_CASE("plan: the graph input and graph outputs are never overwritten in place") {
  const std::string yaml = model_header(4, 8, 8) + "layers:\n  - {name: r0, op: relu}\n" + conv("c", 4, 4, 3) +
                           "  - {name: r1, op: relu}\noutputs: [c, r1]\n";
  auto model = load_ok(yaml, random_weights(/*fuse=*/false));
  auto session = session_ok(model);
  const winfer::MemoryReport& r = session->memory_report();
  CHECK(find_buffer(r, "r0").in_place_of.empty());  // its input is the graph input
  CHECK(find_buffer(r, "r1").in_place_of.empty());  // its input is an output
  CHECK(find_buffer(r, "c").last_step == 2);
  CHECK(r.in_place_layers == 0);
  check_planned_equals_unplanned(model, random_tensor(winfer::Shape{1, 4, 8, 8}, 4, winfer::Layout::kNCHW));
}

TEST_CASE("plan: flatten runs in place only when it is a plain copy - dropout and batchnorm in place") {
  const std::string pooled = model_header(4, 8, 8) + "layers:\n" + conv("c", 4, 6, 3) +
                             "  - {name: bn, op: batchnorm2d, num_features: 6}\n  - {name: drop, op: dropout}\n"
                             "  - {name: gap, op: adaptive_avgpool2d, output_size: 1}\n  - {name: flat, op: flatten}\n"
                             "  - {name: fc, op: linear, in_features: 6, out_features: 3}\n";
  auto model = load_ok(pooled, random_weights(/*fuse=*/false));
  auto session = session_ok(model);  // kept: the report lives in the session (was a dangling reference, found by ASan)
  const winfer::MemoryReport& r = session->memory_report();
  CHECK(find_buffer(r, "bn").in_place_of == "c");
  CHECK(find_buffer(r, "drop").in_place_of == "bn");
  CHECK(find_buffer(r, "flat").in_place_of == "gap");
  CHECK(r.in_place_layers == 3);
  check_planned_equals_unplanned(model, random_tensor(winfer::Shape{2, 4, 8, 8}, 5, winfer::Layout::kNCHW));

  const std::string reordered =
      model_header(4, 8, 8) + "layers:\n" + conv("c", 4, 2, 3) +
      "  - {name: flat, op: flatten}\n  - {name: fc, op: linear, in_features: 128, out_features: 3}\n";
  auto model2 = load_ok(reordered, random_weights());
  CHECK(find_buffer(session_ok(model2)->memory_report(), "flat").in_place_of.empty());  // NHWC -> NCHW order
  check_planned_equals_unplanned(model2, random_tensor(winfer::Shape{2, 4, 8, 8}, 6, winfer::Layout::kNCHW));
}

TEST_CASE("plan: tiny_net planned equals unplanned for every algorithm and thread count - the report adds up") {
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  const winfer::Tensor input = random_tensor(winfer::Shape{3, 3, 32, 32}, 7, winfer::Layout::kNCHW);
  for (const std::string& algorithm : winfer::conv_algorithm_names()) {
    for (int threads : {1, 2}) {
      INFO(algorithm << " threads " << threads);
      winfer::SessionOptions options;
      options.conv_algorithm = algorithm;
      options.threads = threads;
      check_planned_equals_unplanned(model.value(), input, options);
    }
    winfer::SessionOptions options;
    options.conv_algorithm = algorithm;
    options.batch = 3;
    auto planned = session_ok(model.value(), options);
    options.plan_memory = false;
    auto unplanned = session_ok(model.value(), options);
    const winfer::MemoryReport& r = planned->memory_report();
    CHECK(r.weights_bytes == model.value()->weight_bytes());
    CHECK(r.weights_bytes > 0);
    CHECK(r.packed_weights_bytes > 0);
    CHECK(r.alignment == 64);
    CHECK(r.activations_lower_bound_bytes <= r.arena_bytes);
    CHECK(r.arena_bytes <= r.activations_sum_bytes);
    CHECK(planned->activation_bytes() == r.arena_bytes);
    CHECK(unplanned->activation_bytes() > planned->activation_bytes());
    CHECK(planned->workspace_bytes() == r.max_workspace_bytes);
    for (const winfer::MemoryBuffer& b : r.buffers) {
      CHECK(b.offset % 64 == 0);
      CHECK(b.offset + b.bytes <= r.arena_bytes);
    }
  }
}

TEST_CASE("plan: random graphs run planned (poisoned) exactly as unplanned") {
  // Every tensor has 4 channels at 6x6, so any layer may read any earlier tensor; the graph
  // outputs are every tensor nobody reads. Unfused, so relu/batchnorm/add run in place.
  std::mt19937 rng(99);
  int in_place = 0;
  for (int round = 0; round < 40; ++round) {
    std::string yaml = model_header(4, 6, 6) + "layers:\n";
    std::vector<std::string> tensors = {"input"};
    std::vector<bool> read = {false};
    const int layers = 2 + static_cast<int>(rng() % 14);
    for (int l = 0; l < layers; ++l) {
      const std::string name = "l" + std::to_string(l);
      const auto pick = [&] {
        const size_t recent = std::min<size_t>(tensors.size(), 3);
        const size_t i = rng() % 3 == 0 ? rng() % tensors.size() : tensors.size() - 1 - rng() % recent;
        read[i] = true;
        return tensors[i];
      };
      switch (rng() % 7) {
        case 0: yaml += conv(name, 4, 4, 3, pick()); break;
        case 1: yaml += conv(name, 4, 4, 1, pick()); break;
        case 2: yaml += "  - {name: " + name + ", op: relu, input: " + pick() + "}\n"; break;
        case 3: yaml += "  - {name: " + name + ", op: batchnorm2d, num_features: 4, input: " + pick() + "}\n"; break;
        case 4:
          yaml +=
              "  - {name: " + name + ", op: maxpool2d, kernel_size: 3, stride: 1, padding: 1, input: " + pick() + "}\n";
          break;
        case 5: {
          const std::string a = pick(), b = pick();
          yaml += "  - {name: " + name + ", op: add, inputs: [" + a + ", " + b + "]}\n";
          break;
        }
        default: {
          const std::string a = pick(), b = pick();
          yaml += "  - {name: " + name + "_cat, op: concat, inputs: [" + a + ", " + b + "]}\n";
          yaml += conv(name, 8, 4, 1);
        }
      }
      tensors.push_back(name);
      read.push_back(false);
    }
    std::string outputs;
    for (size_t i = 1; i < tensors.size(); ++i) {
      if (!read[i]) outputs += (outputs.empty() ? "" : ", ") + tensors[i];
    }
    yaml += "outputs: [" + outputs + "]\n";
    INFO(yaml);
    auto model = load_ok(yaml, random_weights(/*fuse=*/rng() % 2 == 0));
    in_place += session_ok(model)->memory_report().in_place_layers;
    check_planned_equals_unplanned(model,
                                   random_tensor(winfer::Shape{1 + round % 3, 4, 6, 6}, round, winfer::Layout::kNCHW));
  }
  CHECK(in_place > 10);
}

// Whether this build can count run_into's allocations (says why not when it cannot).
bool allocations_countable() {
#ifdef WINFER_NO_NEW_REPLACEMENT
  MESSAGE("WINFER_TEST_SKIPPED: operator new cannot be counted under ThreadSanitizer");
  return false;
#else
  if (winfer::gemm_backend_description().rfind("OpenBLAS", 0) != 0) {
    MESSAGE("skipped: the portable fallback GEMM allocates packing buffers (" << winfer::gemm_backend_description()
                                                                              << ")");
    return false;
  }
  return true;
#endif
}

// Runs `input` through the session twice with run_into (the first call allocates the outputs
// and warms up) and checks that the second allocates nothing and gives the same bits; returns
// the output.
winfer::Tensor check_second_run_into_allocates_nothing(winfer::Session& session, const winfer::Tensor& input) {
  std::vector<winfer::Tensor> outputs;
  REQUIRE(session.run_into(input, &outputs).ok());
  const winfer::Tensor first = outputs[0].to_layout(winfer::Layout::kPlain);
  g_allocations = 0;
  g_counting = true;
  const winfer::Status second = session.run_into(input, &outputs);
  g_counting = false;
  CHECK(second.ok());
  CHECK_MESSAGE(g_allocations.load() == 0, g_allocations.load() << " allocations in run_into");
  CHECK(same_bits(outputs[0], first));
  return first;
}

TEST_CASE("session: run_into allocates nothing after its first call - run() allocates its result") {
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  if (!allocations_countable()) return;
  const winfer::Tensor input = random_tensor(winfer::Shape{1, 3, 32, 32}, 8, winfer::Layout::kNCHW);
  for (const std::string& algorithm : winfer::conv_algorithm_names()) {
    winfer::SessionOptions options;
    options.conv_algorithm = algorithm;
    auto session = session_ok(model.value(), options);
    INFO(algorithm);
    const winfer::Tensor first = check_second_run_into_allocates_nothing(*session, input);

    g_allocations = 0;
    g_counting = true;
    auto result = session->run(input);
    g_counting = false;
    REQUIRE(result.ok());
    CHECK(g_allocations.load() > 0);
    CHECK(same_bits(result.value(), first));
  }
}

TEST_CASE("session: run_into allocates nothing after its first call in runs of a few images") {
  // images_per_run's default splits these batches (runs side by side on 2 threads, runs of half
  // the batch on 1); each run's input and outputs are views kept from call to call.
  auto model = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE(model.ok());
  if (!allocations_countable()) return;
  for (const int threads : {1, 2}) {
    for (const int64_t batch : {4, 5}) {  // 5: runs of 2 and a rest of 1, asked for
      winfer::SessionOptions options;
      options.threads = threads;
      options.batch = batch;
      options.images_per_run = batch == 5 ? 2 : winfer::SessionOptions::kImagesPerRunAuto;
      auto session = session_ok(model.value(), options);
      INFO("threads " << threads << ", batch " << batch);
      REQUIRE(session->memory_report().images_per_run < batch);
      const winfer::Tensor input =
          random_tensor(winfer::Shape{batch, 3, 32, 32}, static_cast<uint32_t>(batch), winfer::Layout::kNCHW);
      check_second_run_into_allocates_nothing(*session, input);
    }
  }
}

TEST_CASE("session: run_into checks caller-provided outputs and honours their layout") {
  auto model =
      load_ok(model_header(4, 8, 8) + "layers:\n" + conv("a", 4, 6, 3) + conv("b", 6, 2, 1) + "outputs: [a, b]\n",
              random_weights());
  auto session = session_ok(model);
  const winfer::Tensor input = random_tensor(winfer::Shape{1, 4, 8, 8}, 9, winfer::Layout::kNCHW);
  auto expected = session->run_all(input);
  REQUIRE(expected.ok());

  std::vector<winfer::Tensor> outputs = {winfer::Tensor::allocate(winfer::Shape{1, 6, 8, 8}, winfer::Layout::kNHWC),
                                         winfer::Tensor()};
  REQUIRE(session->run_into(input, &outputs).ok());
  CHECK(outputs[0].layout() == winfer::Layout::kNHWC);
  CHECK(same_bits(outputs[0].to_layout(winfer::Layout::kNCHW), expected.value()[0]));
  CHECK(same_bits(outputs[1], expected.value()[1]));  // allocated NCHW

  std::vector<winfer::Tensor> wrong = {winfer::Tensor::allocate(winfer::Shape{1, 6, 8, 7}, winfer::Layout::kNCHW)};
  const winfer::Status status = session->run_into(input, &wrong);
  CHECK_FALSE(status.ok());
  CHECK(contains(status.message(), "output 0 ('a') has shape [1,6,8,7], expected [1,6,8,8]"));
  CHECK_FALSE(session->run_into(input, nullptr).ok());
}
