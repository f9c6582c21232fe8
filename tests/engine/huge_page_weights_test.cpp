// The weights every run reads, gathered into one block of 2 MiB pages
// (engine/src/huge_page_weights.h): by the loader for the weights it packed, by a session for
// the ones its kernels packed; the gathered network computes the same bits.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "engine/src/graph.h"
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

TEST_CASE("allocate_weight: a tensor of 4 MiB or more (up to 64 MiB) starts a 2 MiB page of its own") {
  const Tensor large = allocate_weight(Shape{5 * kMiBFloats});
  CHECK(large.numel() == 5 * kMiBFloats);
  if (!huge_pages_off()) CHECK(reinterpret_cast<uintptr_t>(large.data()) % (uintptr_t{2} << 20) == 0);
  const Tensor small = allocate_weight(Shape{1000});
  CHECK(small.numel() == 1000);
  CHECK(reinterpret_cast<uintptr_t>(small.data()) % Tensor::kAlignment == 0);
}
