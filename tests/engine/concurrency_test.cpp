// Thread safety of the public API (winfer/winfer.h): one loaded Model shared by sessions on many
// threads. The ThreadSanitizer stage (scripts/sanitize.sh) runs every test whose name contains
// "concurrency".
//
// What is tested is winfer's own sharing: the Model (graph, op weights, labels) read by eight
// sessions that are created and run concurrently, half of them on 2 threads each (every
// calling thread has its own kernel thread pool: kernels/cpu/thread_pool.h, which ThreadSanitizer
// sees whole, unlike the OpenMP runtime the kernels used before). The other tests here run on
// the calling thread only (threads = 1): they are about one session's guard, not the pool.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "engine/src/session_impl.h"
#include "winfer/winfer.h"
#include "winfer/winfer_c.h"

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

// Holding a run in progress (set_session_run_hook_for_testing): the first run to reach the hook
// waits there until another thread has been refused, or 20 s have passed (then the test fails
// instead of hanging). Later runs pass through.
std::atomic<bool> g_hold_next_run{false};
std::atomic<bool> g_holding{false};
std::atomic<int> g_refusals{0};

void hold_first_run_until_refused() {
  if (!g_hold_next_run.exchange(false)) return;
  g_holding.store(true);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (g_refusals.load() == 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  g_holding.store(false);
}

// Installs the hook for one test and removes it on every way out.
struct HoldFirstRun {
  HoldFirstRun() {
    g_refusals.store(0);
    g_holding.store(false);
    g_hold_next_run.store(true);
    winfer::set_session_run_hook_for_testing(&hold_first_run_until_refused);
  }
  ~HoldFirstRun() { winfer::set_session_run_hook_for_testing(nullptr); }
};

bool is_refusal(const std::string& message) {
  return message.find("already running on another thread") != std::string::npos;
}

// What one thread of a hammering test saw of its runs.
struct Tally {
  int ok = 0, refused = 0, wrong_output = 0;
  std::string other_error;
};

// Every run of every thread gave the right output or the refusal, and at least one was refused.
void check_tallies(const std::vector<Tally>& tallies, int runs) {
  for (size_t t = 0; t < tallies.size(); ++t) {
    INFO("thread " << t << ": " << tallies[t].ok << " ok, " << tallies[t].refused << " refused");
    CHECK_MESSAGE(tallies[t].other_error.empty(), tallies[t].other_error);
    CHECK(tallies[t].wrong_output == 0);
    CHECK(tallies[t].ok + tallies[t].refused == runs);
  }
  CHECK(tallies[0].refused + tallies[1].refused > 0);
}

}  // namespace

TEST_CASE("concurrency: 8 threads x 50 runs on a shared model are bitwise equal to the same runs one at a time") {
  // fashion_resnet: conv (fused batch norm and relu), add, pooling, linear; small enough for
  // ThreadSanitizer's slowdown.
  auto loaded = winfer::Model::load(repo_path("models/fashion/fashion_resnet.yaml"));
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  const std::shared_ptr<const winfer::Model> model = loaded.value();
  const winfer::Shape shape = model->input_shape();

  // References: one session at a time per algorithm and thread count, the same inputs in the
  // same order. (The thread count as in the concurrent run: im2col's rows split between two
  // threads are not bitwise the single-threaded result on OpenBLAS' Haswell/Zen sgemm.)
  std::vector<std::vector<winfer::Tensor>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    winfer::SessionOptions options;
    options.conv_algorithm = algorithm_of(t);
    options.threads = 1 + t % 2;
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
      options.threads = 1 + t % 2;
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

TEST_CASE("concurrency: a second run on a session in use is refused, and the run in progress is undisturbed") {
  auto loaded = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  winfer::SessionOptions options;
  options.threads = 1;  // the calling thread only
  auto created = winfer::Session::create(loaded.value(), options);
  REQUIRE_MESSAGE(created.ok(), created.status().message());
  winfer::Session& session = *created.value();
  const winfer::Tensor input = input_of(session.input_shape(), 0, 0);
  auto expected = session.run(input);
  REQUIRE(expected.ok());

  HoldFirstRun hold;
  winfer::Result<winfer::Tensor> first = winfer::internal_error("not run");
  std::thread runner([&] { first = session.run(input); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!g_holding.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  const bool held = g_holding.load();  // the first run is in progress, held in the hook
  std::vector<winfer::Tensor> outputs;
  const winfer::Status refused = session.run_into(input, &outputs);
  g_refusals.fetch_add(1);
  runner.join();
  REQUIRE(held);
  CHECK(refused.code() == winfer::ErrorCode::kInvalidArgument);
  CHECK(refused.message() ==
        "Session::run: this session is already running on another thread; a session runs one inference at a time: "
        "use one session per thread");
  REQUIRE_MESSAGE(first.ok(), first.status().message());
  CHECK(same_bits(first.value(), expected.value()));
  // Free again: the session runs as before.
  auto after = session.run(input);
  REQUIRE(after.ok());
  CHECK(same_bits(after.value(), expected.value()));
}

TEST_CASE("concurrency: two threads hammering one session: every run gives the right output or is refused") {
  auto loaded = winfer::Model::load(repo_path("models/examples/tiny_net.yaml"));
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  winfer::SessionOptions options;
  options.threads = 1;
  auto created = winfer::Session::create(loaded.value(), options);
  REQUIRE_MESSAGE(created.ok(), created.status().message());
  winfer::Session& session = *created.value();
  constexpr int kHammerRuns = 200;
  std::vector<winfer::Tensor> inputs, expected;
  for (int r = 0; r < kHammerRuns; ++r) {
    inputs.push_back(input_of(session.input_shape(), 7, r));
    auto out = session.run(inputs.back());
    REQUIRE(out.ok());
    expected.push_back(std::move(out).value());
  }

  // The first run to start is held until the other thread has been refused at least once, so
  // that a refusal is certain, not a matter of timing; the rest race freely.
  HoldFirstRun hold;
  std::vector<Tally> tallies(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::vector<winfer::Tensor> outputs;  // this thread's own
      for (int r = 0; r < kHammerRuns; ++r) {
        const winfer::Status status = session.run_into(inputs[r], &outputs);
        if (status.ok()) {
          ++tallies[t].ok;
          if (!same_bits(outputs[0], expected[r])) ++tallies[t].wrong_output;
        } else if (is_refusal(status.message())) {
          ++tallies[t].refused;
          g_refusals.fetch_add(1);
        } else {
          tallies[t].other_error = status.message();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  check_tallies(tallies, kHammerRuns);
  CHECK(tallies[0].ok + tallies[1].ok > 0);
}

TEST_CASE(
    "concurrency: c api: two threads hammering one winfer_session: right output or an error naming the function") {
  winfer_model* model = nullptr;
  REQUIRE(winfer_model_load(repo_path("models/examples/tiny_net.yaml").c_str(), nullptr, &model) == WINFER_OK);
  winfer_session* session = nullptr;
  winfer_session_options options;
  winfer_session_options_init(&options);
  options.threads = 1;  // the calling thread only (the default is every core)
  REQUIRE(winfer_session_create(model, &options, &session) == WINFER_OK);
  winfer_model_destroy(model);
  int64_t dims[8];
  int rank = 0;
  REQUIRE(winfer_session_input_shape(session, dims, 8, &rank) == WINFER_OK);
  const winfer::Shape in_shape(std::vector<int64_t>(dims, dims + rank));
  REQUIRE(winfer_session_output_shape(session, 0, dims, 8, &rank) == WINFER_OK);
  const size_t out_count = static_cast<size_t>(winfer::Shape(std::vector<int64_t>(dims, dims + rank)).numel());
  constexpr int kHammerRuns = 200;
  std::vector<winfer::Tensor> inputs;
  std::vector<std::vector<float>> expected;
  for (int r = 0; r < kHammerRuns; ++r) {
    inputs.push_back(input_of(in_shape, 9, r));
    expected.emplace_back(out_count);
    REQUIRE(winfer_session_run(session, inputs[r].data(), static_cast<size_t>(inputs[r].numel()), expected[r].data(),
                               out_count) == WINFER_OK);
  }

  HoldFirstRun hold;
  std::vector<Tally> tallies(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> output(out_count);
      for (int r = 0; r < kHammerRuns; ++r) {
        const winfer_status status = winfer_session_run(
            session, inputs[r].data(), static_cast<size_t>(inputs[r].numel()), output.data(), out_count);
        const std::string message = status == WINFER_OK ? "" : winfer_last_error();  // per thread
        if (status == WINFER_OK) {
          ++tallies[t].ok;
          if (output != expected[r]) ++tallies[t].wrong_output;
        } else if (status == WINFER_INVALID_ARGUMENT && message.rfind("winfer_session_run: ", 0) == 0 &&
                   is_refusal(message)) {
          ++tallies[t].refused;
          g_refusals.fetch_add(1);
        } else {
          tallies[t].other_error = message;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  winfer_session_destroy(session);
  check_tallies(tallies, kHammerRuns);
}
