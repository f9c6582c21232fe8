// The memory planner on its own (engine/src/planner.*): hand-made golden cases and property
// tests over thousands of random lifetime sets, each checked by an independent brute force.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "engine/cli_test_util.h"  // WINFER_TEST_SANITIZED
#include "engine/src/planner.h"

using winfer::MemoryPlan;
using winfer::PlanBuffer;

namespace {

PlanBuffer buffer(size_t bytes, int first, int last, int alias_of = -1) {
  PlanBuffer b;
  b.bytes = bytes;
  b.first_step = first;
  b.last_step = last;
  b.alias_of = alias_of;
  return b;
}

MemoryPlan plan_ok(const std::vector<PlanBuffer>& buffers, size_t alignment = 64) {
  auto plan = winfer::plan_memory(buffers, alignment);
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  return plan.value();
}

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The buffer whose storage buffer i ends up in (following alias_of).
int root_of(const std::vector<PlanBuffer>& buffers, int i) {
  while (buffers[i].alias_of >= 0) i = buffers[i].alias_of;
  return i;
}

// Every property a plan must have, checked without the planner's own code.
void check_plan(const std::vector<PlanBuffer>& buffers, const MemoryPlan& plan, size_t alignment) {
  REQUIRE(plan.offsets.size() == buffers.size());
  CHECK(plan.arena_bytes % alignment == 0);
  size_t sum = 0;
  int steps = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    sum += round_up(buffers[i].bytes, alignment);
    steps = std::max(steps, buffers[i].last_step + 1);
    CHECK(plan.offsets[i] % alignment == 0);
    CHECK(plan.offsets[i] + buffers[i].bytes <= plan.arena_bytes);
    if (buffers[i].alias_of >= 0) CHECK(plan.offsets[i] == plan.offsets[buffers[i].alias_of]);
  }
  CHECK(plan.sum_bytes == sum);
  CHECK(plan.steps == steps);
  // No two buffers alive at the same step share a byte, unless one took over the other's
  // storage in place.
  for (size_t i = 0; i < buffers.size(); ++i) {
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const PlanBuffer& a = buffers[i];
      const PlanBuffer& b = buffers[j];
      if (a.bytes == 0 || b.bytes == 0) continue;
      if (root_of(buffers, static_cast<int>(i)) == root_of(buffers, static_cast<int>(j))) continue;
      const bool same_time = a.first_step <= b.last_step && b.first_step <= a.last_step;
      const bool same_bytes =
          plan.offsets[i] < plan.offsets[j] + b.bytes && plan.offsets[j] < plan.offsets[i] + a.bytes;
      if (same_time && same_bytes) {
        FAIL("buffers " << i << " [" << a.first_step << "," << a.last_step << "] @" << plan.offsets[i] << "+" << a.bytes
                        << " and " << j << " [" << b.first_step << "," << b.last_step << "] @" << plan.offsets[j] << "+"
                        << b.bytes << " overlap");
      }
    }
  }
  // The lower bound by brute force: per step, the storage groups alive (a group is as large as
  // its largest member and alive over the union of its members' lifetimes).
  size_t lower = 0;
  for (int s = 0; s < steps; ++s) {
    size_t live = 0;
    for (size_t r = 0; r < buffers.size(); ++r) {
      if (buffers[r].alias_of >= 0) continue;  // groups are counted at their root
      size_t bytes = 0;
      int first = buffers[r].first_step, last = buffers[r].last_step;
      for (size_t i = 0; i < buffers.size(); ++i) {
        if (root_of(buffers, static_cast<int>(i)) != static_cast<int>(r)) continue;
        bytes = std::max(bytes, round_up(buffers[i].bytes, alignment));
        first = std::min(first, buffers[i].first_step);
        last = std::max(last, buffers[i].last_step);
      }
      if (first <= s && s <= last) live += bytes;
    }
    CHECK(plan.live_bytes[s] == live);
    lower = std::max(lower, live);
  }
  CHECK(plan.lower_bound_bytes == lower);
  CHECK(plan.arena_bytes >= plan.lower_bound_bytes);
  CHECK(plan.arena_bytes <= plan.sum_bytes);
}

// Sizes drawn from a few "layer shapes" (so that equal sizes and ties happen) or at random,
// sometimes zero, sometimes not a multiple of the alignment.
size_t random_size(std::mt19937& rng) {
  switch (rng() % 4) {
    case 0: return size_t{1} << (6 + rng() % 12);
    case 1: return (rng() % 8) * 4096;
    case 2: return rng() % 100000;
    default: return 1 + rng() % 300;
  }
}

// Random intervals over `steps` steps; some buffers take over one that ends where they start.
std::vector<PlanBuffer> random_intervals(std::mt19937& rng) {
  const int steps = 1 + static_cast<int>(rng() % 30);
  const int count = static_cast<int>(rng() % 40);
  std::vector<PlanBuffer> buffers;
  std::vector<bool> taken_over;
  for (int i = 0; i < count; ++i) {
    const int first = static_cast<int>(rng() % steps);
    const int last = first + static_cast<int>(rng() % (rng() % 3 == 0 ? steps - first : std::min(3, steps - first)));
    PlanBuffer b = buffer(random_size(rng), first, last);
    if (rng() % 3 == 0) {
      for (int j = 0; j < i; ++j) {
        if (!taken_over[j] && buffers[j].last_step == first) {
          b.alias_of = j;
          taken_over[j] = true;
          break;
        }
      }
    }
    buffers.push_back(b);
    taken_over.push_back(false);
  }
  return buffers;
}

// Lifetimes as a session derives them from a random DAG in topological order: node n writes
// tensor n, reads 1-3 earlier tensors, and element-wise nodes take over an input that dies
// with them. A few tensors are graph outputs (alive to the end), node 0 reads the input.
std::vector<PlanBuffer> random_dag(std::mt19937& rng) {
  const int nodes = 1 + static_cast<int>(rng() % 60);
  std::vector<std::vector<int>> inputs(nodes);
  std::vector<int> last_use(nodes + 1, -1);  // tensor 0 = graph input, tensor n+1 = node n's output
  std::vector<size_t> bytes(nodes + 1);
  bytes[0] = random_size(rng);
  for (int n = 0; n < nodes; ++n) {
    const int reads = 1 + static_cast<int>(rng() % 3);
    for (int r = 0; r < reads; ++r) {
      // Mostly recent tensors, sometimes an old one (a long skip connection).
      const int span = rng() % 4 == 0 ? n + 1 : std::min(n + 1, 3);
      const int t = n - static_cast<int>(rng() % span);  // tensors 0..n exist before node n
      inputs[n].push_back(t);
      last_use[t] = n;
    }
    bytes[n + 1] = rng() % 2 ? bytes[inputs[n][0]] : random_size(rng);
  }
  std::vector<PlanBuffer> buffers;
  for (int t = 0; t <= nodes; ++t) {
    const int first = t == 0 ? 0 : t - 1;
    const bool output = t == nodes || rng() % 10 == 0;
    buffers.push_back(buffer(bytes[t], first, output ? nodes - 1 : std::max(first, last_use[t])));
  }
  std::vector<bool> taken_over(buffers.size(), false);
  for (int n = 0; n < nodes; ++n) {
    if (rng() % 2) continue;  // not an element-wise node
    for (int t : inputs[n]) {
      if (t == 0 || taken_over[t] || buffers[t].last_step != n || buffers[t].bytes != bytes[n + 1]) continue;
      buffers[n + 1].alias_of = t;
      taken_over[t] = true;
      break;
    }
  }
  for (int n = 0; n < nodes; ++n) {  // workspaces, alive during their own step only
    if (rng() % 3 == 0) buffers.push_back(buffer(random_size(rng), n, n));
  }
  return buffers;
}

}  // namespace

TEST_CASE("planner golden: a plain chain of equal tensors uses two buffers") {
  // t0 -> t1 -> t2 -> t3 -> t4: each tensor lives from its producer to its one consumer.
  std::vector<PlanBuffer> chain;
  for (int i = 0; i < 5; ++i) chain.push_back(buffer(1000, i, i + 1));
  const MemoryPlan plan = plan_ok(chain);
  check_plan(chain, plan, 64);
  CHECK(plan.arena_bytes == 2 * 1024);
  CHECK(plan.lower_bound_bytes == 2 * 1024);
  CHECK(plan.sum_bytes == 5 * 1024);
  for (int i = 0; i + 2 < 5; ++i) CHECK(plan.offsets[i] == plan.offsets[i + 2]);  // ping-pong
  CHECK(plan.offsets[0] != plan.offsets[1]);
}

TEST_CASE("planner golden: a residual block keeps the skip tensor alive") {
  // step 0: x = stem(in); 1: a = conv(x); 2: b = conv(a); 3: y = add(b, x)
  const std::vector<PlanBuffer> block = {
      buffer(4096, 0, 0),  // 0 input
      buffer(4096, 0, 3),  // 1 x, read by conv a (1) and the add (3)
      buffer(4096, 1, 2),  // 2 a
      buffer(4096, 2, 3),  // 3 b
      buffer(4096, 3, 3),  // 4 y
  };
  const MemoryPlan plan = plan_ok(block);
  check_plan(block, plan, 64);
  CHECK(plan.live_bytes == std::vector<size_t>{2 * 4096, 2 * 4096, 3 * 4096, 3 * 4096});
  CHECK(plan.arena_bytes == 3 * 4096);
  for (int t : {2, 3, 4}) CHECK(plan.offsets[t] != plan.offsets[1]);  // nothing lands on x
}

TEST_CASE("planner golden: an in-place relu after a conv shares the conv's buffer") {
  // step 0: c = conv(in); 1: r = relu(c) in place; 2: out = conv(r)
  std::vector<PlanBuffer> net = {
      buffer(2048, 0, 0),     // input
      buffer(2048, 0, 1),     // c
      buffer(2048, 1, 2, 1),  // r, in place of c
      buffer(2048, 2, 2),     // out
      buffer(10000, 0, 0),    // the first conv's workspace
  };
  const MemoryPlan plan = plan_ok(net);
  check_plan(net, plan, 64);
  CHECK(plan.offsets[2] == plan.offsets[1]);
  CHECK(plan.live_bytes[1] == 2048);  // c and r are one piece of storage
  CHECK(plan.arena_bytes == plan.lower_bound_bytes);
  // Without the alias the relu needs a buffer of its own at step 1.
  net[2].alias_of = -1;
  const MemoryPlan separate = plan_ok(net);
  CHECK(separate.live_bytes[1] == 2 * 2048);
  CHECK(separate.offsets[2] != separate.offsets[1]);
}

TEST_CASE("planner golden: workspaces of different steps share memory, alignment is a parameter") {
  const std::vector<PlanBuffer> net = {buffer(100, 0, 1), buffer(5000, 0, 0), buffer(7000, 1, 1), buffer(1, 1, 1)};
  const MemoryPlan plan64 = plan_ok(net, 64);
  check_plan(net, plan64, 64);
  CHECK(plan64.arena_bytes == 128 + 7040 + 64);
  const MemoryPlan plan256 = plan_ok(net, 256);
  check_plan(net, plan256, 256);
  CHECK(plan256.arena_bytes == 256 + 7168 + 256);
  CHECK(plan_ok({}).arena_bytes == 0);
  CHECK(plan_ok({buffer(0, 0, 3)}).arena_bytes == 0);
}

TEST_CASE("planner: invalid buffers and alignments are errors naming the buffer") {
  CHECK_FALSE(winfer::plan_memory({buffer(8, 0, 0)}, 0).ok());
  CHECK_FALSE(winfer::plan_memory({buffer(8, 0, 0)}, 48).ok());
  auto bad_lifetime = winfer::plan_memory({buffer(8, 0, 0), buffer(8, 3, 2)}, 64);
  REQUIRE_FALSE(bad_lifetime.ok());
  CHECK(bad_lifetime.status().message().find("buffer 1") != std::string::npos);
  CHECK_FALSE(winfer::plan_memory({buffer(8, -1, 0)}, 64).ok());
  // An alias must start where its target ends ...
  auto early = winfer::plan_memory({buffer(8, 0, 2), buffer(8, 1, 3, 0)}, 64);
  REQUIRE_FALSE(early.ok());
  CHECK(early.status().message().find("must end at step 1") != std::string::npos);
  // ... may not point at itself or outside the list, take over a buffer twice, or loop.
  CHECK_FALSE(winfer::plan_memory({buffer(8, 0, 0, 0)}, 64).ok());
  CHECK_FALSE(winfer::plan_memory({buffer(8, 0, 0, 5)}, 64).ok());
  CHECK_FALSE(winfer::plan_memory({buffer(8, 0, 1), buffer(8, 1, 2, 0), buffer(8, 1, 2, 0)}, 64).ok());
  CHECK_FALSE(winfer::plan_memory({buffer(8, 1, 1, 1), buffer(8, 1, 1, 0)}, 64).ok());
}

TEST_CASE("planner properties: 3000 random interval sets") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 3000; ++round) {
    const std::vector<PlanBuffer> buffers = random_intervals(rng);
    const size_t alignment = size_t{1} << (rng() % 9);  // 1 .. 256
    INFO("round " << round << ", " << buffers.size() << " buffers, alignment " << alignment);
    const MemoryPlan plan = plan_ok(buffers, alignment);
    check_plan(buffers, plan, alignment);
    if (round % 100 == 0) {  // deterministic
      CHECK(plan_ok(buffers, alignment).offsets == plan.offsets);
    }
  }
}

// 2000 DAGs uninstrumented (stage 1 of scripts/test.sh checks the properties); 300 under a
// sanitizer, where the same 2000 took 50 s of ASan's CI stage for memory checks that 300 varied
// DAGs already exercise.
#if defined(WINFER_TEST_SANITIZED)
constexpr int kRandomDags = 300;
#else
constexpr int kRandomDags = 2000;
#endif

TEST_CASE("planner properties: random DAGs with in-place nodes and workspaces (2000, 300 under a sanitizer)") {
  std::mt19937 rng(777);
  int at_bound = 0;
  for (int round = 0; round < kRandomDags; ++round) {
    const std::vector<PlanBuffer> buffers = random_dag(rng);
    INFO("round " << round << ", " << buffers.size() << " buffers");
    const MemoryPlan plan = plan_ok(buffers, 64);
    check_plan(buffers, plan, 64);
    at_bound += plan.arena_bytes == plan.lower_bound_bytes ? 1 : 0;
  }
  // Not a guarantee (the problem is NP-hard), but the planner should mostly reach the bound.
  MESSAGE(at_bound << " of " << kRandomDags << " random DAG plans reach the lower bound");
  CHECK(at_bound >= kRandomDags * 4 / 5);
}
