// After a multi-threaded run returns, the session's pool workers (kernels/cpu/thread_pool.h)
// must not keep a core busy: they spin for the next layer during a run (200 us at most), and OpenMP's workers
// (before the pool) spun about 3 ms after each region, which slowed the next call of another
// library in the same process (docs/PERFORMANCE.md, "Idle workers"). Measured as the CPU time
// the process spends on threads other than the caller's while the caller sleeps right after a
// run.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "engine/model_test_util.h"
#include "engine/src/core/huge_page_promotion.h"
#include "kernels/cpu/thread_pool.h"
#include "winfer/winfer.h"

namespace {

// The bound on the pool workers' CPU after a run (below). A worker woken for the run's last
// parallel layer may only get its core after the caller finished that layer and returned: it
// then wakes, finds the job closed and sleeps again, inside the window. Natively that costs
// microseconds; under ThreadSanitizer (scripts/sanitize.sh tsan, which runs this test for its
// thread hand-offs) the instrumented wake-up took 0.15-0.16 ms, failing 1-3 runs in 30 of this
// test before and after session 37's changes alike. The native run in the main suite keeps the
// bound that tells a spinning worker (up to 0.2 ms) from a sleeping one.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WINFER_IDLE_TEST_UNDER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define WINFER_IDLE_TEST_UNDER_TSAN 1
#endif
#ifdef WINFER_IDLE_TEST_UNDER_TSAN
constexpr double kWorkerCpuBoundMs = 1.0;
#else
constexpr double kWorkerCpuBoundMs = 0.05;
#endif

double cpu_ms(int who) {
  rusage u{};
  getrusage(who, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-3;
}

// CPU milliseconds used by the process's other threads while this one sleeps for 20 ms.
double other_threads_cpu_ms_while_sleeping() {
  // Linux adds a running thread's CPU time to the counts when it stops running: a worker busy
  // with the call's last tasks would have that work counted here as well. 1 ms later it has
  // either gone to sleep (counted before) or is still spinning (counted when it stops).
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double self = cpu_ms(RUSAGE_SELF), thread = cpu_ms(RUSAGE_THREAD);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return (cpu_ms(RUSAGE_SELF) - self) - (cpu_ms(RUSAGE_THREAD) - thread);
}

}  // namespace

TEST_CASE("idle workers: after a 2-thread run the session's pool workers sleep at once") {
  winfer::LoadOptions load;
  load.random_weights_seed = 1;
  winfer_test::TempDir dir;
  auto model = winfer_test::load_text(dir, winfer_test::zoo_yaml_at("resnet18", 64), load);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  winfer::SessionOptions options;
  options.threads = 2;
  auto session = winfer::Session::create(model.value(), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  const winfer::Tensor input = winfer_test::random_tensor(model.value()->input_shape(), 3, winfer::Layout::kNCHW);
  // The one thread that outlives a load by design, once: the weights moved into 2 MiB pages after
  // it (engine/src/core/huge_page_promotion.h), which would show as other threads' CPU below
  // (under ASan it was still copying after the first run). Any other thread busy after a run
  // fails the checks as before.
  winfer::wait_for_huge_page_promotion();

  for (int run = 0; run < 3; ++run) {
    auto output = session.value()->run(input);
    REQUIRE_MESSAGE(output.ok(), output.status().message());
    const double spent = other_threads_cpu_ms_while_sleeping();
    INFO("run " << run << ": other threads used " << spent << " ms of CPU in the 20 ms after it returned");
    CHECK(spent < 0.5);
  }

  // The pool's workers by their own CPU clocks (exact, even while one runs): no CPU in the 20 ms
  // after each run (a worker still spinning would use up to 0.2 ms).
  for (int run = 0; run < 3; ++run) {
    REQUIRE(session.value()->run(input).ok());
    const double before = winfer::cpu::pool_worker_cpu_ms();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double spent = winfer::cpu::pool_worker_cpu_ms() - before;
    INFO("run " << run << ": the pool's workers used " << spent << " ms of CPU in the 20 ms after it returned");
    CHECK(spent < kWorkerCpuBoundMs);
  }
  // WINFER_PAUSE_WORKERS=0 leaves the worker spinning for the next run (200 us of wall time)
  // before it sleeps on its own: by its flag, asleep within a second of each run.
  setenv("WINFER_PAUSE_WORKERS", "0", 1);
  for (int run = 0; run < 3; ++run) {
    REQUIRE(session.value()->run(input).ok());
    const auto returned = std::chrono::steady_clock::now();
    while (winfer::cpu::pool_sleeping_workers() == 0 &&
           std::chrono::steady_clock::now() - returned < std::chrono::seconds(1))
      std::this_thread::yield();
    CHECK(winfer::cpu::pool_sleeping_workers() == 1);
  }
  unsetenv("WINFER_PAUSE_WORKERS");
}
