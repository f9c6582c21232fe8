// The weights every run reads, gathered into one block of 2 MiB pages
// (engine/src/huge_page_weights.h): by the loader for the weights it packed, by a session for
// the ones its kernels packed; the gathered network computes the same bits.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "engine/src/graph.h"
#include "engine/src/core/huge_page_promotion.h"
#include "engine/src/huge_page_weights.h"
#include "engine/src/op.h"

using namespace winfer;
using winfer_test::random_tensor;
using winfer_test::repo_path;

namespace {

bool huge_pages_off() {
  const char* env = std::getenv("WINFER_HUGE_PAGES");
  return env != nullptr && std::string(env) == "0";
}

constexpr int64_t kMiBFloats = int64_t{1} << 18;

// Whether `tensors` lie one after the other (each at the previous one's block_bytes()) from a
// 2 MiB-aligned start.
bool one_block_in_order(const std::vector<Tensor*>& tensors) {
  const auto start = reinterpret_cast<uintptr_t>(tensors.front()->data());
  if (start % (uintptr_t{2} << 20) != 0) return false;
  uintptr_t at = start;
  for (const Tensor* t : tensors) {
    if (reinterpret_cast<uintptr_t>(t->data()) != at) return false;
    at += t->block_bytes();
  }
  return true;
}

}  // namespace

TEST_CASE("gather_weights_in_huge_pages: the small tensors into one block in order, the large and shared ones stay") {
  // 9 tensors of 1.5 MiB (+ an odd float: each rounds up in the block) and one of 5 MiB: 18.5 MiB.
  std::vector<Tensor> small;
  for (int i = 0; i < 9; ++i) small.push_back(random_tensor(Shape{3 * kMiBFloats / 2 + 1}, 10 + i));
  Tensor large = random_tensor(Shape{5 * kMiBFloats}, 30);
  Tensor shared = random_tensor(Shape{1000}, 31);
  const Tensor sharer = shared;
  std::vector<Tensor*> all;
  for (Tensor& t : small) all.push_back(&t);
  all.insert(all.begin() + 4, &large);
  all.insert(all.begin() + 2, &shared);
  const float* large_before = large.data();
  const float* shared_before = shared.data();

  gather_weights_in_huge_pages(all);

  CHECK(large.data() == large_before);
  CHECK(shared.data() == shared_before);
  std::vector<Tensor*> moved;
  for (Tensor& t : small) moved.push_back(&t);
  if (!huge_pages_off()) CHECK(one_block_in_order(moved));
  for (int i = 0; i < 9; ++i) {
    CAPTURE(i);
    const Tensor expected = random_tensor(Shape{3 * kMiBFloats / 2 + 1}, 10 + i);
    CHECK(std::equal(small[i].data(), small[i].data() + small[i].numel(), expected.data()));
  }
}

TEST_CASE("gather_weights_in_huge_pages: weights under kGatherFromWeightBytes in all stay where they are") {
  const int64_t n = static_cast<int64_t>(kGatherFromWeightBytes / sizeof(float)) / 4 - 1024;
  std::vector<Tensor> four;
  for (int i = 0; i < 4; ++i) four.push_back(random_tensor(Shape{n}, 40 + i));  // just under in all
  std::vector<Tensor*> all;
  std::vector<const float*> before;
  for (Tensor& t : four) {
    all.push_back(&t);
    before.push_back(t.data());
  }
  gather_weights_in_huge_pages(all);
  for (int i = 0; i < 4; ++i) CHECK(four[i].data() == before[i]);
}

TEST_CASE("gather_weights_in_huge_pages: the bound counts the weights the network reads besides these") {
  const int64_t n = static_cast<int64_t>(kGatherFromWeightBytes / sizeof(float)) / 4 - 1024;
  std::vector<Tensor> four;
  for (int i = 0; i < 4; ++i) four.push_back(random_tensor(Shape{n}, 40 + i));  // just under in all
  std::vector<Tensor*> all;
  for (Tensor& t : four) all.push_back(&t);
  gather_weights_in_huge_pages(all, nullptr, size_t{1} << 20);  // and 1 MiB read in place elsewhere
  if (!huge_pages_off()) CHECK(one_block_in_order(all));
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    const Tensor expected = random_tensor(Shape{n}, 40 + i);
    CHECK(std::equal(four[i].data(), four[i].data() + n, expected.data()));
  }
}

namespace {

// Bytes in 2 MiB pages in this process (AnonHugePages of /proc/self/smaps_rollup), or -1 where
// they cannot be told apart from other memory: only where transparent huge pages are given to the
// memory that asks for them ("madvise"), as the weights' blocks do, and nothing else gets them.
int64_t madvised_huge_page_bytes() {
  if (huge_pages_off()) return -1;
  std::ifstream modes_file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(modes_file, modes);
  if (modes.find("[madvise]") == std::string::npos) return -1;
  std::ifstream rollup("/proc/self/smaps_rollup");
  for (std::string line; std::getline(rollup, line);) {
    if (line.rfind("AnonHugePages:", 0) == 0) return static_cast<int64_t>(std::stoll(line.substr(14))) * 1024;
  }
  return -1;
}

}  // namespace

// MobileNetV2 under "auto" packed about 8.4 of its 13.3 MiB itself (the classifier read in place from
// the model): the session's share alone was under the bound, and its convolutions stayed in 4 KiB
// pages (1.08x im2win's time). Here the convolutions pack 4.7 MB in the session, the linear layer's
// 8.4 MB stay the model's: 13.1 MB in all.
TEST_CASE("a session gathers the weights it packs when the network's weights in all reach the bound") {
  const std::string yaml =
      "format: winfer/1\n"
      "input: {name: input, shape: [1, 3, 8, 8]}\n"
      "layers:\n"
      "  - {name: a, op: conv2d, in_channels: 3, out_channels: 256, kernel_size: 3, padding: 1}\n"
      "  - {name: b, op: conv2d, in_channels: 256, out_channels: 256, kernel_size: 3, padding: 1}\n"
      "  - {name: c, op: conv2d, in_channels: 256, out_channels: 256, kernel_size: 3, padding: 1}\n"
      "  - {name: pool, op: adaptive_avgpool2d, output_size: 1}\n"
      "  - {name: flatten, op: flatten}\n"
      "  - {name: fc, op: linear, in_features: 256, out_features: 8192}\n";
  winfer_test::TempDir dir;
  LoadOptions load;
  load.pack_for = "";  // the session packs every convolution
  load.random_weights_seed = 3;
  auto model = winfer_test::load_text(dir, yaml, load);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  wait_for_huge_page_promotion();
  const int64_t before = madvised_huge_page_bytes();
  SessionOptions options;
  options.conv_algorithm = "im2win";
  auto session = Session::create(model.value(), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  const MemoryReport& report = session.value()->memory_report();
  CHECK(report.session_weights_bytes < kGatherFromWeightBytes);
  CHECK(report.packed_weights_bytes >= kGatherFromWeightBytes);
  wait_for_huge_page_promotion();
  const int64_t after = madvised_huge_page_bytes();
  if (before < 0 || after < 0) {
    MESSAGE("2 MiB pages not observable here (WINFER_HUGE_PAGES=0 or transparent huge pages not 'madvise')");
    return;
  }
  // The two 3x3 layers' 2.25 MiB each, in one block: at least one whole 2 MiB page.
  CHECK(after - before >= int64_t{2} << 20);
}

namespace {

std::shared_ptr<const Model> load_resnet18(const std::string& pack_for) {
  LoadOptions options;
  options.pack_for = pack_for;
  options.random_weights_seed = 5;
  auto model = Model::load(repo_path("models/zoo/resnet18.yaml"), options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

std::vector<float> run_once(const std::shared_ptr<const Model>& model, const std::string& conv) {
  SessionOptions options;
  options.conv_algorithm = conv;
  options.images_per_run = 0;
  options.input_shape = {1, 3, 64, 64};
  auto session = Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  const Tensor input = random_tensor(Shape{1, 3, 64, 64}, 7, Layout::kNCHW);
  auto out = session.value()->run(input);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  return std::vector<float>(out.value().data(), out.value().data() + out.value().numel());
}

}  // namespace

TEST_CASE("loading with pack_for gathers ResNet-18's weights under 4 MiB into one block, and computes the same bits") {
  const auto packed = load_resnet18("im2win");
  std::vector<Tensor*> small;
  for (const GraphNode& node : packed->graph().nodes) {
    // Read-only: the addresses of what the loader left.
    const_cast<Op&>(*node.op).for_each_weight([&](Tensor& t) {
      if (t.bytes() < kOwnPagesWeightBytes) small.push_back(&t);
    });
  }
  REQUIRE(small.size() > 20);
  if (!huge_pages_off()) CHECK(one_block_in_order(small));
  // A model that kept its OIHW weights: each session packs (and gathers) its own.
  const auto kept = load_resnet18("");
  for (const char* conv : {"im2win", "im2col"}) {
    CAPTURE(conv);
    CHECK(run_once(packed, conv) == run_once(kept, conv));
  }
}

TEST_CASE("allocate_weight: from the block a load reads into while there is one, else a tensor of its own") {
  WeightBlock block(size_t{4} << 20);
  Tensor inside, outside;
  {
    ReadWeightsInto reading(&block);
    inside = allocate_weight(Shape{1000});
  }
  outside = allocate_weight(Shape{1000});
  CHECK(block.holds(inside.data()));
  CHECK_FALSE(block.holds(outside.data()));
  CHECK(outside.numel() == 1000);
}

namespace {

// Four convolutions with 14.6 MiB of weights (one of 9 MiB) in a weights file, and a batch norm
// (whose parameters are folded and freed).
std::string big_convs_yaml() {
  return "format: winfer/1\n"
         "input: {name: input, shape: [1, 3, 6, 6]}\n"
         "weights: w.safetensors\n"
         "layers:\n"
         "  - {name: a, op: conv2d, in_channels: 3, out_channels: 256, kernel_size: 3, padding: 1}\n"
         "  - {name: an, op: batchnorm2d, num_features: 256}\n"
         "  - {name: b, op: conv2d, in_channels: 256, out_channels: 512, kernel_size: 3, padding: 1}\n"
         "  - {name: c, op: conv2d, in_channels: 512, out_channels: 512, kernel_size: 3, padding: 1}\n"
         "  - {name: d, op: conv2d, in_channels: 512, out_channels: 64, kernel_size: 1}\n";
}

void write_big_convs_weights(const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  const std::vector<std::pair<std::string, Shape>> shapes = {
      {"a.weight", Shape{256, 3, 3, 3}},   {"a.bias", Shape{256}},
      {"an.weight", Shape{256}},           {"an.bias", Shape{256}},
      {"an.running_mean", Shape{256}},     {"an.running_var", Shape{256}},
      {"b.weight", Shape{512, 256, 3, 3}}, {"b.bias", Shape{512}},
      {"c.weight", Shape{512, 512, 3, 3}}, {"c.bias", Shape{512}},
      {"d.weight", Shape{64, 512, 1, 1}},  {"d.bias", Shape{64}}};
  uint64_t seed = 50;
  for (const auto& [name, shape] : shapes) {
    Tensor t = random_tensor(shape, seed++);
    // Scaled so that the outputs stay small; variances positive.
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data()[i] = name == "an.running_var" ? 1.0f + t.data()[i] * t.data()[i] : 0.05f * t.data()[i];
    tensors.emplace_back(name, t);
  }
  REQUIRE(write_safetensors(path, tensors).ok());
}

}  // namespace

TEST_CASE("loading a weights file with pack_for reads the weights straight into one block of 2 MiB pages") {
  winfer_test::TempDir dir;
  write_big_convs_weights(dir.file("w.safetensors"));
  LoadOptions packed_options;
  packed_options.pack_for = "im2win";
  auto packed = winfer_test::load_text(dir, big_convs_yaml(), packed_options);
  REQUIRE_MESSAGE(packed.ok(), packed.status().message());
  LoadOptions kept_options;
  kept_options.pack_for = "";
  auto kept = winfer_test::load_text(dir, big_convs_yaml(), kept_options);
  REQUIRE_MESSAGE(kept.ok(), kept.status().message());

  // The convolutions' weights and biases in the order read, the batch norm's parameters (read
  // between a's and b's, folded into a and freed) leaving their bytes between them.
  std::vector<const float*> at;
  std::vector<size_t> bytes;
  for (const GraphNode& node : packed.value()->graph().nodes) {
    const_cast<Op&>(*node.op).for_each_weight([&](Tensor& t) {
      at.push_back(t.data());
      bytes.push_back(t.block_bytes());
    });
  }
  REQUIRE(at.size() == 8);
  if (!huge_pages_off()) {
    const auto base = reinterpret_cast<uintptr_t>(at[0]);
    CHECK(base % (uintptr_t{2} << 20) == 0);
    CHECK(reinterpret_cast<uintptr_t>(at[1]) == base + bytes[0]);
    const uintptr_t after_bn = base + bytes[0] + bytes[1] + 4 * 1024;  // 4 x 256 floats
    uintptr_t next = after_bn;
    for (size_t i = 2; i < at.size(); ++i) {
      CAPTURE(i);
      CHECK(reinterpret_cast<uintptr_t>(at[i]) == next);
      next += bytes[i];
    }
  }
  SessionOptions options;
  for (const char* conv : {"im2win", "direct"}) {
    CAPTURE(conv);
    options.conv_algorithm = conv;
    auto a = Session::create(packed.value(), options);
    auto b = Session::create(kept.value(), options);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    const Tensor input = random_tensor(Shape{1, 3, 6, 6}, 9, Layout::kNCHW);
    auto ya = a.value()->run(input);
    auto yb = b.value()->run(input);
    REQUIRE(ya.ok());
    REQUIRE(yb.ok());
    CHECK(std::equal(ya.value().data(), ya.value().data() + ya.value().numel(), yb.value().data()));
  }
}

TEST_CASE("WeightBlock: tensors taken in order, large ones refused, freed ones' pages handed back, live ones intact") {
  WeightBlock block(size_t{16} << 20);
  std::vector<Tensor> kept;
  std::vector<Tensor> freed;
  for (int i = 0; i < 6; ++i) {
    Tensor t = block.take(Shape{kMiBFloats / 2 + 3 * i});  // ~0.5 MiB each, odd sizes
    REQUIRE_FALSE(t.empty());
    CHECK(block.holds(t.data()));
    const Tensor values = random_tensor(t.shape(), 60 + i);
    std::copy(values.data(), values.data() + values.numel(), t.data());
    (i % 2 == 0 ? kept : freed).push_back(t);
  }
  CHECK(reinterpret_cast<uintptr_t>(kept[0].data()) + kept[0].block_bytes() ==
        reinterpret_cast<uintptr_t>(freed[0].data()));
  CHECK(block.take(Shape{static_cast<int64_t>(kOwnPagesAtMostBytes / sizeof(float)) + 1}).empty());  // too large
  CHECK(block.take(Shape{14 * kMiBFloats}).empty());  // 14 MiB no longer fit after 3
  freed.clear();
  block.release_holes({&kept[0], &kept[1], &kept[2]});
  block.release_unused();
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    const Tensor values = random_tensor(kept[i].shape(), 60 + 2 * i);
    CHECK(std::equal(kept[i].data(), kept[i].data() + kept[i].numel(), values.data()));
  }
}
