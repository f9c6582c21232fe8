// Concat without copies (SessionOptions::concat_alias, docs/MEMORY.md): a convolution writes
// its output straight into its channel slice of a concat's output. The plan on small graphs
// (which inputs qualify, offsets, lifetimes, the report's counts), the cases that must keep
// the copy (an input read twice, concat(x, x), graph input and outputs, an unfused relu, a
// fused residual), and every zoo model with a concat run with aliasing on and off, bit for
// bit, planned and poisoned as unplanned, with every convolution algorithm at batch 1 and 2.
#include <algorithm>
#include <cstdint>
#include <fstream>

#include "engine/cli_test_util.h"
#include "winfer/winfer_c.h"
#include "engine/model_test_util.h"
#include "engine/plan_test_util.h"

using namespace winfer_test;

namespace {

std::shared_ptr<const winfer::Model> load_ok(const std::string& yaml, bool fuse = true) {
  TempDir dir;
  winfer::LoadOptions options;
  options.random_weights_seed = 5;
  options.fuse = fuse;
  auto model = load_text(dir, yaml, options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

std::vector<winfer::Tensor> run_ok(std::shared_ptr<const winfer::Model> model, const winfer::Tensor& input,
                                   winfer::SessionOptions options) {
  options.batch = input.shape()[0];
  auto outputs = session_ok(std::move(model), options)->run_all(input);
  REQUIRE_MESSAGE(outputs.ok(), outputs.status().message());
  return std::move(outputs).value();
}

// Aliased (planned, poisoned, with check_numerics), not aliased (planned) and unplanned runs
// give the same bits.
void check_alias_changes_nothing(std::shared_ptr<const winfer::Model> model, const winfer::Tensor& input,
                                 winfer::SessionOptions options = {}) {
  options.plan_memory = false;
  const auto reference = run_ok(model, input, options);
  options.plan_memory = true;
  options.concat_alias = false;
  const auto copied = run_ok(model, input, options);
  options.concat_alias = true;
  options.poison_unused_memory = true;
  options.check_numerics = true;
  const auto aliased = run_ok(model, input, options);
  REQUIRE(aliased.size() == reference.size());
  for (size_t i = 0; i < aliased.size(); ++i) {
    CHECK(same_bits(aliased[i], reference[i]));
    CHECK(same_bits(copied[i], reference[i]));
  }
}

// a -> (b 3x3: 6 channels, c 1x1: 5 channels) -> cat (11) -> d.
std::string two_branches() {
  return model_header(4, 8, 8) + "layers:\n" + conv("a", 4, 4, 1) + conv("b", 4, 6, 3, "a") + conv("c", 4, 5, 1, "a") +
         "  - {name: cat, op: concat, inputs: [b, c]}\n" + conv("d", 11, 4, 1);
}

}  // namespace

TEST_CASE("concat alias: both convolutions write into their slices of the concat output") {
  auto model = load_ok(two_branches());
  const size_t pixel = 8 * 8 * sizeof(float);  // bytes of one channel
  winfer::SessionOptions options;
  options.conv_algorithm = "direct";  // no workspace: the arena is the tensors'
  auto session = session_ok(model, options);
  const winfer::MemoryReport& r = session->memory_report();
  const winfer::MemoryBuffer& cat = find_buffer(r, "cat");
  CHECK(find_buffer(r, "b").slice_of == "cat");
  CHECK(find_buffer(r, "c").slice_of == "cat");
  CHECK(find_buffer(r, "b").offset == cat.offset);
  CHECK(find_buffer(r, "b").slice_offset == 0);
  CHECK(find_buffer(r, "c").offset == cat.offset);
  CHECK(find_buffer(r, "c").slice_offset == 6 * sizeof(float));  // channel 6 of each pixel row
  CHECK(find_buffer(r, "b").bytes == 6 * pixel);                 // its own size, spread over cat's rows
  CHECK(cat.first_step == 1);                                    // written from b's step on
  CHECK(cat.last_step == 4);
  CHECK(r.concat_inputs_in_place == 2);
  CHECK(r.concat_bytes == 11 * pixel);
  CHECK(r.concat_bytes_saved == 11 * pixel);
  // Step 1-2: a and cat; step 4: cat and d. Copying: a, b and c at step 2, b, c and cat at step 3.
  CHECK(r.arena_bytes == 15 * pixel);
  CHECK(r.activations_lower_bound_bytes == 15 * pixel);

  options.concat_alias = false;
  auto copying = session_ok(model, options);
  const winfer::MemoryReport& rc = copying->memory_report();
  CHECK(find_buffer(rc, "b").slice_of.empty());
  CHECK(find_buffer(rc, "c").slice_of.empty());
  CHECK(find_buffer(rc, "cat").first_step == 3);
  CHECK(rc.concat_inputs_in_place == 0);
  CHECK(rc.concat_bytes == 11 * pixel);
  CHECK(rc.concat_bytes_saved == 0);
  CHECK(rc.arena_bytes == 22 * pixel);

  for (const std::string& algorithm : winfer::conv_algorithm_names()) {
    for (int threads : {1, 2}) {
      INFO(algorithm << " threads " << threads);
      winfer::SessionOptions o;
      o.conv_algorithm = algorithm;
      o.threads = threads;
      check_alias_changes_nothing(model, random_tensor(winfer::Shape{1, 4, 8, 8}, 1, winfer::Layout::kNCHW), o);
      check_alias_changes_nothing(model, random_tensor(winfer::Shape{3, 4, 8, 8}, 2, winfer::Layout::kNCHW), o);
    }
  }
}

TEST_CASE("concat alias: an input read twice, concat(x, x), graph input and outputs keep their copies") {
  SUBCASE("read by another layer too") {
    auto model = load_ok(model_header(4, 8, 8) + "layers:\n" + conv("a", 4, 4, 1) + conv("b", 4, 6, 3, "a") +
                         conv("c", 4, 5, 1, "a") + "  - {name: cat, op: concat, inputs: [b, c]}\n" +
                         conv("d", 11, 6, 1) + "  - {name: sum, op: add, inputs: [d, b]}\n");
    winfer::SessionOptions options;
    options.conv_algorithm = "direct";
    auto session = session_ok(model, options);
    const winfer::MemoryReport& r = session->memory_report();
    CHECK(find_buffer(r, "b").slice_of.empty());  // d's add reads it after the concat
    CHECK(find_buffer(r, "c").slice_of == "cat");
    CHECK(r.concat_inputs_in_place == 1);
    check_alias_changes_nothing(model, random_tensor(winfer::Shape{2, 4, 8, 8}, 3, winfer::Layout::kNCHW));
  }
  SUBCASE("concat(x, x)") {
    auto model = load_ok(model_header(4, 8, 8) + "layers:\n" + conv("a", 4, 4, 1) + conv("b", 4, 6, 3, "a") +
                         "  - {name: cat, op: concat, inputs: [b, b]}\n" + conv("d", 12, 4, 1));
    auto session = session_ok(model, {});
    CHECK(find_buffer(session->memory_report(), "b").slice_of.empty());
    CHECK(session->memory_report().concat_inputs_in_place == 0);
    check_alias_changes_nothing(model, random_tensor(winfer::Shape{2, 4, 8, 8}, 4, winfer::Layout::kNCHW));
  }
  SUBCASE("the graph input and a graph output") {
    auto model =
        load_ok(model_header(4, 8, 8) + "layers:\n" + conv("b", 4, 6, 3) + conv("c", 4, 5, 1, "input") +
                "  - {name: cat, op: concat, inputs: [input, b, c]}\n" + conv("d", 15, 4, 1) + "outputs: [d, c]\n");
    winfer::SessionOptions options;
    options.conv_algorithm = "direct";  // no workspace: b's slice does not raise the peak
    auto session = session_ok(model, options);
    const winfer::MemoryReport& r = session->memory_report();
    CHECK(find_buffer(r, "input").slice_of.empty());
    CHECK(find_buffer(r, "b").slice_of == "cat");
    CHECK(find_buffer(r, "c").slice_of.empty());  // the user reads it after the run
    CHECK(find_buffer(r, "b").offset == find_buffer(r, "cat").offset);
    CHECK(find_buffer(r, "b").slice_offset == 4 * sizeof(float));
    check_alias_changes_nothing(model, random_tensor(winfer::Shape{2, 4, 8, 8}, 5, winfer::Layout::kNCHW));
  }
}

TEST_CASE("concat alias: an unfused relu or a fused residual before the concat keeps the copy") {
  const std::string relu = model_header(4, 8, 8) + "layers:\n" + conv("a", 4, 4, 1) + conv("b", 4, 6, 3, "a") +
                           "  - {name: rb, op: relu}\n" + conv("c", 4, 5, 1, "a") +
                           "  - {name: cat, op: concat, inputs: [rb, c]}\n" + conv("d", 11, 4, 1);
  auto unfused = load_ok(relu, /*fuse=*/false);
  winfer::SessionOptions direct;
  direct.conv_algorithm = "direct";  // no workspace: the slices do not raise the peak
  auto session = session_ok(unfused, direct);
  CHECK(find_buffer(session->memory_report(), "rb").slice_of.empty());  // relu writes densely
  CHECK(find_buffer(session->memory_report(), "c").slice_of == "cat");
  check_alias_changes_nothing(unfused, random_tensor(winfer::Shape{2, 4, 8, 8}, 6, winfer::Layout::kNCHW));
  auto fused = load_ok(relu);  // the relu is b's epilogue: b writes into cat
  CHECK(find_buffer(session_ok(fused, direct)->memory_report(), "rb").slice_of == "cat");
  check_alias_changes_nothing(fused, random_tensor(winfer::Shape{2, 4, 8, 8}, 7, winfer::Layout::kNCHW));

  // b absorbs the add (a ResNet shortcut): its store reads the residual, not strided.
  const std::string residual = model_header(4, 8, 8) + "layers:\n" + conv("a", 4, 4, 1) + conv("b", 4, 4, 3, "a") +
                               "  - {name: sum, op: add, inputs: [b, a]}\n" + conv("c", 4, 5, 1, "a") +
                               "  - {name: cat, op: concat, inputs: [sum, c]}\n" + conv("d", 9, 4, 1);
  for (const std::string& algorithm : winfer::conv_algorithm_names()) {
    INFO(algorithm);
    auto model = load_ok(residual);
    winfer::SessionOptions options;
    options.conv_algorithm = algorithm;
    auto s = session_ok(model, options);
    CHECK(find_buffer(s->memory_report(), "sum").slice_of.empty());
    CHECK(find_buffer(s->memory_report(), "c").slice_of == "cat");
    check_alias_changes_nothing(model, random_tensor(winfer::Shape{2, 4, 8, 8}, 8, winfer::Layout::kNCHW), options);
  }
}

TEST_CASE("concat alias: a split writes its piece into the concat too (ShuffleNet's basic unit)") {
  // w is the busiest step (40 channels): cat may start at the split (a, cat and sp:1: 20).
  auto model = load_ok(model_header(8, 8, 8) + "layers:\n" + conv("w", 8, 32, 1) + conv("a", 32, 8, 1) +
                       "  - {name: sp, op: split, chunks: 2}\n" + conv("b", 4, 4, 3, "'sp:1'") +
                       "  - {name: cat, op: concat, inputs: ['sp:0', b]}\n" +
                       "  - {name: shuffle, op: channel_shuffle, groups: 2}\n" + conv("d", 8, 4, 1));
  winfer::SessionOptions options;
  options.conv_algorithm = "direct";
  auto session = session_ok(model, options);
  const winfer::MemoryReport& r = session->memory_report();
  CHECK(find_buffer(r, "sp:0").slice_of == "cat");
  CHECK(find_buffer(r, "sp:0").slice_offset == 0);
  CHECK(find_buffer(r, "sp:1").slice_of.empty());  // read by b
  CHECK(find_buffer(r, "b").slice_of == "cat");
  CHECK(find_buffer(r, "b").slice_offset == 4 * sizeof(float));
  CHECK(find_buffer(r, "cat").first_step == 2);  // from the split on
  CHECK(r.concat_bytes_saved == r.concat_bytes);
  for (const std::string& algorithm : winfer::conv_algorithm_names()) {
    INFO(algorithm);
    winfer::SessionOptions o;
    o.conv_algorithm = algorithm;
    check_alias_changes_nothing(model, random_tensor(winfer::Shape{2, 8, 8, 8}, 11, winfer::Layout::kNCHW), o);
  }
}

// a -> b1 (an early slice); a -> t (`wide` channels) -> b2 (a late slice); cat [b1, b2] -> d.
std::string early_and_late(int64_t wide) {
  return model_header(4, 8, 8) + "layers:\n" + conv("a", 4, 4, 1) + conv("b1", 4, 4, 1, "a") +
         conv("t", 4, wide, 1, "a") + conv("b2", wide, 4, 1) + "  - {name: cat, op: concat, inputs: [b1, b2]}\n" +
         conv("d", 8, 4, 1);
}

TEST_CASE("concat alias: slices never raise the most bytes alive at any step") {
  const size_t channel = 8 * 8 * sizeof(float);
  winfer::SessionOptions options;
  options.conv_algorithm = "direct";
  {
    // t small: the concat step is the busiest (b1, b2 and cat: 16 channels); with both slices,
    // cat is alive from step 1 and the busiest step holds a, cat and t (16 channels too).
    auto model = load_ok(early_and_late(4));
    auto session = session_ok(model, options);
    const winfer::MemoryReport& r = session->memory_report();
    CHECK(find_buffer(r, "b1").slice_of == "cat");
    CHECK(find_buffer(r, "b2").slice_of == "cat");
    CHECK(find_buffer(r, "cat").first_step == 1);
    CHECK(r.activations_lower_bound_bytes == 16 * channel);
    check_alias_changes_nothing(model, random_tensor(winfer::Shape{2, 4, 8, 8}, 10, winfer::Layout::kNCHW));
  }
  {
    // t wide (32): the busiest steps are t's and b2's (40 channels). cat alive from step 1 would
    // make t's step a + cat + t = 44; from b2's step, b1 + t + cat = 44: both keep their copies.
    auto model = load_ok(early_and_late(32));
    auto session = session_ok(model, options);
    const winfer::MemoryReport& r = session->memory_report();
    CHECK(find_buffer(r, "b1").slice_of.empty());
    CHECK(find_buffer(r, "b2").slice_of.empty());
    CHECK(r.concat_inputs_in_place == 0);
    CHECK(r.activations_lower_bound_bytes == 40 * channel);
    options.concat_alias = false;
    CHECK(r.arena_bytes == session_ok(model, options)->memory_report().arena_bytes);
  }
}

TEST_CASE("concat alias: unplanned sessions keep every tensor dense, a caller's arena works") {
  auto model = load_ok(two_branches());
  winfer::SessionOptions options;
  options.conv_algorithm = "direct";
  auto plan = winfer::Session::plan(model, options);
  REQUIRE(plan.ok());
  CHECK(plan.value().concat_inputs_in_place == 2);
  std::vector<float> arena(plan.value().arena_bytes / sizeof(float) + 16);
  float* aligned = arena.data();
  while (reinterpret_cast<uintptr_t>(aligned) % 64 != 0) ++aligned;
  options.arena = aligned;
  options.arena_bytes = plan.value().arena_bytes;
  const winfer::Tensor input = random_tensor(winfer::Shape{1, 4, 8, 8}, 9, winfer::Layout::kNCHW);
  const auto in_callers = run_ok(model, input, options);
  options.arena = nullptr;
  options.arena_bytes = 0;
  options.plan_memory = false;
  const auto unplanned = run_ok(model, input, options);
  CHECK(same_bits(in_callers[0], unplanned[0]));
  // The report of an unplanned session says what it does: every concat input copied.
  const auto session = session_ok(model, options);  // alive while its report is read
  const winfer::MemoryReport& r = session->memory_report();
  CHECK(r.concat_inputs_in_place == 0);
  CHECK(find_buffer(r, "b").slice_of.empty());
  CHECK(r.concat_bytes == 11 * 8 * 8 * sizeof(float));
}

namespace {

// Every zoo model with a concat layer (ShuffleNet's also split and shuffle channels).
std::vector<std::string> zoo_models_with_concat() {
  std::vector<std::string> names;
  for (const char* name : {"squeezenet1_0", "squeezenet1_1", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
                           "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "googlenet", "densenet121", "inception_v3"}) {
    std::ifstream probe(repo_path(std::string("models/zoo/") + name + ".yaml"));
    if (probe) names.push_back(name);
  }
  return names;
}

// The zoo model with a side x side input (Inception v3 declares 299x299, the others 224x224).
std::string zoo_yaml_with_side(const std::string& name, int64_t side) {
  std::string yaml = read_bytes(repo_path("models/zoo/" + name + ".yaml"));
  for (const char* declared : {"shape: [1, 3, 224, 224]", "shape: [1, 3, 299, 299]"}) {
    const size_t at = yaml.find(declared);
    if (at == std::string::npos) continue;
    yaml.replace(at, std::string(declared).size(),
                 "shape: [1, 3, " + std::to_string(side) + ", " + std::to_string(side) + "]");
    return yaml;
  }
  FAIL("no declared input shape in " << name);
  return yaml;
}

void check_zoo_model(const std::string& name, int64_t side) {
  TempDir dir;
  winfer::LoadOptions load;
  load.random_weights_seed = 1;
  auto model = load_text(dir, zoo_yaml_with_side(name, side), load);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  for (const std::string& algorithm : winfer::conv_algorithm_names()) {
    for (int64_t batch : {1, 2}) {
      INFO(name << " at " << side << "x" << side << ", " << algorithm << ", batch " << batch);
      winfer::SessionOptions options;
      options.conv_algorithm = algorithm;
      options.batch = batch;
      auto planned = session_ok(model.value(), options);
      const winfer::MemoryReport& r = planned->memory_report();
      // Every zoo concat network has inputs to write in place; ShuffleNet x1.5 and x2.0 may keep
      // their copies where the placement with slices would need a larger arena.
      if (name != "shufflenet_v2_x1_5" && name != "shufflenet_v2_x2_0") CHECK(r.concat_inputs_in_place > 0);
      CHECK(r.concat_bytes_saved <= r.concat_bytes);
      CHECK(r.arena_bytes >= r.activations_lower_bound_bytes);
      if (algorithm == "im2win") {
        options.concat_alias = false;
        auto copying = winfer::Session::plan(model.value(), options);
        REQUIRE(copying.ok());
        MESSAGE(name << " " << side << "x" << side << " batch " << batch << " im2win: " << r.concat_inputs_in_place
                     << " concat inputs in place, " << r.concat_bytes_saved << " of " << r.concat_bytes
                     << " B of concat copies saved; arena " << r.arena_bytes << " B, " << copying.value().arena_bytes
                     << " B without");
        CHECK(r.arena_bytes <= copying.value().arena_bytes);
      }
      const winfer::Tensor input = random_tensor(winfer::Shape{batch, 3, side, side}, 17, winfer::Layout::kNCHW);
      winfer::SessionOptions o;
      o.conv_algorithm = algorithm;
      check_alias_changes_nothing(model.value(), input, o);
    }
  }
}

}  // namespace

// Three cases (ctest runs them side by side): SqueezeNet and ShuffleNet at 224x224, where they
// are cheap, the deep concat networks at 96x96. Under a sanitizer (5-8x slower; the whole set
// was 31 s uninstrumented) one model of each kind at 64x64.
#if defined(WINFER_TEST_SANITIZED)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

void check_zoo_models(const std::vector<std::string>& candidates, int64_t side) {
  const std::vector<std::string> present = zoo_models_with_concat();
  for (const std::string& name : candidates) {
    if (std::find(present.begin(), present.end(), name) == present.end()) continue;
    check_zoo_model(name, kSanitized ? 64 : side);
    if (kSanitized) return;
  }
}

TEST_CASE("slow: concat alias: zoo models with a concat give the same bits with and without it") {
  CHECK(zoo_models_with_concat().size() >= 6);
}

TEST_CASE("slow: concat alias: SqueezeNet gives the same bits with and without it") {
  check_zoo_models({"squeezenet1_1", "squeezenet1_0"}, 224);
}

TEST_CASE("slow: concat alias: ShuffleNetV2 gives the same bits with and without it") {
  check_zoo_models({"shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"}, 224);
}

TEST_CASE("slow: concat alias: GoogLeNet, Inception v3 and DenseNet-121 give the same bits with and without it") {
  check_zoo_models({"googlenet", "inception_v3", "densenet121"}, 96);
}
