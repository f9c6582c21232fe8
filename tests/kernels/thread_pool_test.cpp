// The kernels' thread pool (kernels/cpu/thread_pool.h): every task once, slots unique per
// running thread, no static split (a thread never waits for a share it did not start), nested
// calls inline, exceptions carried to the caller, one pool per calling thread, and workers that
// stop spinning when told to.
#include "kernels/cpu/thread_pool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace winfer {
namespace {

using cpu::parallel_pieces;
using cpu::parallel_tasks;
using cpu::TaskFn;

// CPU milliseconds this thread's pool workers use in the 20 ms after the call (each worker's
// own CPU clock: exact even while it runs).
double worker_cpu_ms_in_next_20ms() {
  const double before = cpu::pool_worker_cpu_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return cpu::pool_worker_cpu_ms() - before;
}

TEST_CASE("thread pool: every task runs once, on a slot below the thread count used by one thread at a time") {
  for (int threads : {1, 2, 3, 8})
    for (int64_t tasks : {1, 2, 7, 1000}) {
      CAPTURE(threads);
      CAPTURE(tasks);
      std::vector<std::atomic<int>> runs(static_cast<size_t>(tasks));
      std::vector<std::atomic<int>> busy(8);
      std::atomic<int> bad_slot{0}, shared_slot{0};
      auto task = [&](int64_t i, int slot) {
        if (slot < 0 || slot >= threads) {
          bad_slot.fetch_add(1);
          return;
        }
        if (busy[static_cast<size_t>(slot)].exchange(1) != 0) shared_slot.fetch_add(1);
        runs[static_cast<size_t>(i)].fetch_add(1);
        volatile double x = 1;  // a little work, so that tasks overlap
        for (int k = 0; k < 2000; ++k) x = x * 1.0000001;
        busy[static_cast<size_t>(slot)].store(0);
      };
      parallel_tasks(threads, tasks, TaskFn(task));
      int wrong = 0;
      for (auto& r : runs) wrong += r.load() != 1;
      CHECK(wrong == 0);
      CHECK(bad_slot.load() == 0);
      CHECK(shared_slot.load() == 0);
    }
}

TEST_CASE("thread pool: parallel_pieces covers every item once, in contiguous, non-empty pieces") {
  for (int64_t count : {1, 5, 64, 1001})
    for (int64_t pieces : {1, 3, 8, 2000}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(count));
      std::atomic<int> empty{0};
      parallel_pieces(2, count, pieces, [&](int64_t begin, int64_t end, int) {
        if (end <= begin) empty.fetch_add(1);
        for (int64_t i = begin; i < end; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
      });
      int wrong = 0;
      for (auto& s : seen) wrong += s.load() != 1;
      CHECK(wrong == 0);
      CHECK(empty.load() == 0);
    }
}

TEST_CASE("thread pool: no static split: the caller does tasks a worker has not started") {
  // Task 0 waits until every other task has finished. With shares fixed per thread (OpenMP's
  // static schedule) the thread holding task 0 would also hold tasks it never reaches, and
  // the call would hang; here whoever is free takes them. A deadline keeps a failure a failure.
  for (int threads : {2, 4}) {
    constexpr int64_t kTasks = 64;
    std::atomic<int64_t> finished{0};
    std::atomic<bool> timed_out{false};
    auto task = [&](int64_t i, int) {
      if (i == 0) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (finished.load() < kTasks - 1)
          if (std::chrono::steady_clock::now() > deadline) {
            timed_out = true;
            break;
          }
      }
      finished.fetch_add(1);
    };
    parallel_tasks(threads, kTasks, TaskFn(task));
    CHECK_FALSE(timed_out.load());
    CHECK(finished.load() == kTasks);
  }
}

TEST_CASE("thread pool: a nested call runs its tasks on the calling thread") {
  std::atomic<int> inner_runs{0}, inner_off_thread{0};
  auto outer = [&](int64_t, int) {
    const std::thread::id me = std::this_thread::get_id();
    auto inner = [&](int64_t, int slot) {
      inner_runs.fetch_add(1);
      if (std::this_thread::get_id() != me || slot != 0) inner_off_thread.fetch_add(1);
    };
    parallel_tasks(4, 10, TaskFn(inner));
  };
  parallel_tasks(2, 6, TaskFn(outer));
  CHECK(inner_runs.load() == 60);
  CHECK(inner_off_thread.load() == 0);
}

TEST_CASE("thread pool: a task's exception reaches the caller after the other tasks ran") {
  std::atomic<int> ran{0};
  auto task = [&](int64_t i, int) {
    ran.fetch_add(1);
    if (i == 3) throw std::runtime_error("task 3 failed");
  };
  CHECK_THROWS_WITH(parallel_tasks(2, 20, TaskFn(task)), "task 3 failed");
  CHECK(ran.load() == 20);
  // The pool is usable afterwards.
  std::atomic<int> again{0};
  auto count = [&](int64_t, int) { again.fetch_add(1); };
  parallel_tasks(2, 20, TaskFn(count));
  CHECK(again.load() == 20);
}

TEST_CASE("thread pool: concurrent callers from several threads each get all their tasks done") {
  constexpr int kCallers = 3, kCalls = 200;
  std::vector<int> wrong(kCallers, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([c, &wrong] {
      for (int call = 0; call < kCalls; ++call) {
        std::vector<int64_t> out(37, -1);
        auto task = [&](int64_t i, int) { out[static_cast<size_t>(i)] = i * (c + 1); };
        parallel_tasks(2, static_cast<int64_t>(out.size()), TaskFn(task));
        for (size_t i = 0; i < out.size(); ++i) wrong[static_cast<size_t>(c)] += out[i] != int64_t(i) * (c + 1);
      }
      CHECK(cpu::pool_worker_count() == 1);  // its own pool: one worker for 2 threads
    });
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) CHECK(wrong[static_cast<size_t>(c)] == 0);
}

TEST_CASE("thread pool: workers sleep on their own after a call, and at once when told to rest") {
  // On a thread of its own, so that its pool is this test's alone (one worker).
  std::thread([&] {
    // Two tasks that wait for each other (with a deadline), so that the worker surely took part
    // in the call (task 1 is its share: the caller, held in task 0, cannot take it) and is in its
    // spin when the call returns, however slowly it woke (a sanitizer's build).
    std::atomic<int> started{0};
    std::atomic<bool> met{true};
    auto both = [&](int64_t, int) {
      started.fetch_add(1);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (started.load() < 2)
        if (std::chrono::steady_clock::now() > deadline) {
          met = false;
          break;
        }
    };
    auto call = [&] {
      started = 0;
      parallel_tasks(2, 2, TaskFn(both));
      CHECK_MESSAGE(met.load(), "the worker did not start within 10 s");  // (no REQUIRE off the main thread)
    };
    // Without rest: the worker spins for the next call (200 us of wall time), then sleeps on its
    // own, by its flag within a second. (Whether it spun is a matter of timing, not checked:
    // under ctest -j it may get no core in that time, or the caller may return after it.)
    for (int i = 0; i < 3; ++i) {
      call();
      const auto returned = std::chrono::steady_clock::now();
      while (cpu::pool_sleeping_workers() == 0 && std::chrono::steady_clock::now() - returned < std::chrono::seconds(1))
        std::this_thread::yield();
      CHECK(cpu::pool_sleeping_workers() == 1);
    }
    // Told to rest, it sleeps at once: next to no CPU in the 20 ms after the call. A worker
    // still spinning would use up to 0.2 ms; one that finds the flag and goes to sleep, a few
    // microseconds natively. But in a VM a thread's CPU clock also runs while the host holds its
    // vCPU, and under ctest -j a worker that got its core late once read 0.094 ms (CI's main
    // stage) and once more than 0.1 (here, session 44) for those few microseconds. So one call in
    // nine may exceed half the spin; a worker that is not sent to sleep spins after about half the
    // calls (rest_workers() made a no-op: 0.19-0.21 ms after 5 of 9, 0 after the others; the test
    // failed in 6 runs of 6).
    int over = 0;
    std::string seen;
    for (int i = 0; i < 9; ++i) {
      call();
      cpu::rest_workers();
      const double spent = worker_cpu_ms_in_next_20ms();
      over += spent >= 0.1 ? 1 : 0;
      seen += (seen.empty() ? "" : ", ") + std::to_string(spent);
    }
    INFO("after rest_workers() the worker used " << seen << " ms of CPU");
    CHECK(over <= 1);
  }).join();
}

}  // namespace
}  // namespace winfer
