// Thread safety of the public API (winfer/winfer.h): one loaded Model shared by sessions on many
// threads. The ThreadSanitizer stage (scripts/sanitize.sh) runs every test whose name contains
// "concurrency".
//
// Every session here uses threads = 1, so that the kernels never start an OpenMP team: libgomp
// is not built with ThreadSanitizer, and its barriers would be reported as races that are not
// winfer's. What is tested is winfer's own sharing: the Model (graph, op weights, labels) read
// by eight sessions that are created and run concurrently.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "winfer/winfer.h"

namespace {

using winfer_test::random_tensor;
using winfer_test::repo_path;
using winfer_test::same_bits;

constexpr int kThreads = 8;
constexpr int kRuns = 50;

// Thread t uses algorithm t % count, so that every CPU algorithm runs concurrently with the others.
std::string algorithm_of(int thread) {
  const std::vector<std::string> names = winfer::conv_algorithm_names("cpu");
  return names[static_cast<size_t>(thread) % names.size()];
}

winfer::Tensor input_of(const winfer::Shape& shape, int thread, int run) {
  return random_tensor(shape, static_cast<uint32_t>(1000 * thread + run), winfer::Layout::kNCHW);
}

}  // namespace

TEST_CASE("concurrency: 8 threads x 50 runs on a shared model are bitwise equal to one thread") {
  // fashion_resnet: conv (fused batch norm and relu), add, pooling, linear; small enough for
  // ThreadSanitizer's slowdown.
  auto loaded = winfer::Model::load(repo_path("models/fashion/fashion_resnet.yaml"));
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  const std::shared_ptr<const winfer::Model> model = loaded.value();
  const winfer::Shape shape = model->input_shape();

  // References: one thread, one session per algorithm, the same inputs in the same order.
  std::vector<std::vector<winfer::Tensor>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    winfer::SessionOptions options;
    options.conv_algorithm = algorithm_of(t);
    options.threads = 1;
    auto session = winfer::Session::create(model, options);
    REQUIRE_MESSAGE(session.ok(), session.status().message());
    for (int r = 0; r < kRuns; ++r) {
      auto out = session.value()->run(input_of(shape, t, r));
      REQUIRE_MESSAGE(out.ok(), out.status().message());
      expected[t].push_back(std::move(out).value());
    }
  }

  // Eight threads, each creating its own session on the shared model and running its inputs;
  // the outputs are kept and compared afterwards on this thread (doctest's CHECK is not
  // thread-safe).
  std::vector<std::vector<winfer::Tensor>> actual(kThreads);
  std::vector<std::string> errors(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      winfer::SessionOptions options;
      options.conv_algorithm = algorithm_of(t);
      options.threads = 1;  // no OpenMP team: see the top of this file
      // Start together, so that sessions are created while others run.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      auto session = winfer::Session::create(model, options);
      if (!session.ok()) {
        errors[t] = session.status().message();
        return;
      }
      std::vector<winfer::Tensor> outputs;  // run_into's serving loop: allocated once
      for (int r = 0; r < kRuns; ++r) {
        const winfer::Status status = session.value()->run_into(input_of(shape, t, r), &outputs);
        if (!status.ok()) {
          errors[t] = status.message();
          return;
        }
        actual[t].push_back(outputs[0].to_layout(outputs[0].layout()));  // a copy
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  int mismatches = 0;
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t << " (" << algorithm_of(t) << ")");
    CHECK_MESSAGE(errors[t].empty(), errors[t]);
    REQUIRE(actual[t].size() == expected[t].size());
    for (int r = 0; r < kRuns; ++r) {
      if (!same_bits(actual[t][r], expected[t][r])) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}
