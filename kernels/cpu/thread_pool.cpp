// The pool behind parallel_tasks() (kernels/cpu/thread_pool.h): one per calling thread.
//
// One call is a "job": the caller writes the job's fields, then opens it by storing a new
// value of `state_` (epoch << 1 | 1). Workers that see it open announce themselves in
// `in_job_`, check again that this job is still open, and claim task indices, first from
// their own slot's range of the static split, then from the others' (ranges_), until none is
// left; `done_` counts finished tasks. The caller claims tasks too; when all are
// done it closes the job (state_ = epoch << 1) and waits until no worker is inside it, so that
// the next job may rewrite the fields. A worker's "in_job_ += 1; state_ still open?" and the
// caller's "close; in_job_ == 0?" are both sequentially consistent: either the caller sees the
// worker and waits, or the worker sees the job closed and touches nothing.
#include "kernels/cpu/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WINFER_SPIN_PAUSE() _mm_pause()
#else
#define WINFER_SPIN_PAUSE() ((void)0)
#endif

namespace winfer {
namespace cpu {
namespace {

// How long a worker keeps spinning for the next job after its last task before it sleeps.
// The layers of a run follow each other within microseconds, and waking a sleeping worker takes
// 40-70 us here (the caller does not wait for it meanwhile). Longer spins cost more than they
// save when the cores are shared: with another process busy on one of the two cores, a worker
// spinning 2 ms between jobs took the caller's core, and 2-thread ResNet-18 ran at 1.66x the
// 1-thread time (OpenMP: 1.41x; 200 us: 1.09x, 50 us: 1.04x), while 50 us made ShuffleNet's
// uncontended runs slower (its serial gaps are longer): docs/PERFORMANCE.md, "Thread pool".
// After a run the session calls rest_workers(), so nothing spins past it.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);

// True on pool workers, and on a caller while it runs tasks: parallel_tasks() from there runs
// inline (a nested call), as an OpenMP nested region gets one thread.
thread_local bool t_inside_task = false;

// Spins until ready() is true; yields the core now and then, in case the thread it waits for
// has lost its core to this one.
template <class Ready>
void spin_until(Ready ready) {
  for (int spins = 1; !ready(); ++spins) {
    WINFER_SPIN_PAUSE();
    if (spins % 4096 == 0) std::this_thread::yield();
  }
}

// The CPUs the calling thread may run on, but for the one it runs on now; false when that
// leaves none (a caller bound to one CPU) or the system will not say.
//
// Why: woken after idle time, a worker was put on the caller's CPU, which was busy with the job,
// and stayed there for milliseconds while the other CPU idled. Measured (caller and worker each
// 2 ms of work after the wake-up, 40 rounds): 0.3 s of idle before the wake-up, 3.8-4.0 ms wall
// (the two took turns on one CPU), 2.19 ms with the worker steered away; 20 ms of idle, 4.6
// against 2.16 ms; no change after 2 ms of idle (2.13 / 2.16 ms). A worker keeps the mask until
// its next wake-up; it only ever excludes the CPU its caller was on.
bool cpus_but_this_one(cpu_set_t* set) {
  CPU_ZERO(set);
  if (pthread_getaffinity_np(pthread_self(), sizeof *set, set) != 0) return false;
  const int here = sched_getcpu();
  if (here < 0 || !CPU_ISSET(here, set) || CPU_COUNT(set) < 2) return false;
  CPU_CLR(here, set);
  return true;
}

class Pool {
 public:
  Pool() = default;
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() {
    stop_.store(true, std::memory_order_seq_cst);
    for (auto& w : workers_) {
      {
        std::lock_guard<std::mutex> lock(w->mutex);
        w->wake.notify_one();
      }
      w->thread.join();
    }
  }

  void run(int threads, int64_t tasks, TaskFn fn) {
    add_workers(threads - 1);
    fn_ = &fn;
    tasks_ = tasks;
    threads_ = threads;
    if (ranges_.size() < static_cast<size_t>(threads)) ranges_ = std::vector<HomeRange>(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      HomeRange& r = ranges_[static_cast<size_t>(t)];
      r.next.store(tasks * t / threads, std::memory_order_relaxed);
      r.end = tasks * (t + 1) / threads;
    }
    done_.store(0, std::memory_order_relaxed);
    if (resting_.load(std::memory_order_relaxed)) resting_.store(false, std::memory_order_relaxed);
    const uint64_t epoch = (state_.load(std::memory_order_relaxed) >> 1) + 1;
    state_.store(epoch << 1 | 1, std::memory_order_seq_cst);  // open: publishes the fields
    // Wake the sleeping workers this job may use (only those: a worker woken for nothing
    // would spin for nothing), each steered off the caller's CPU first.
    bool steered = false;
    cpu_set_t away;
    for (size_t i = 0; i < workers_.size() && static_cast<int>(i) + 1 < threads; ++i) {
      Worker& w = *workers_[i];
      if (w.asleep.load(std::memory_order_seq_cst)) {
        if (!steered) steered = cpus_but_this_one(&away);
        if (steered) pthread_setaffinity_np(w.thread.native_handle(), sizeof away, &away);  // best effort
        std::lock_guard<std::mutex> lock(w.mutex);
        w.wake.notify_one();
      }
    }
    t_inside_task = true;
    claim_tasks(0);
    t_inside_task = false;
    spin_until([&] { return done_.load(std::memory_order_acquire) >= tasks; });
    state_.store(epoch << 1, std::memory_order_seq_cst);  // closed
    spin_until([&] { return in_job_.load(std::memory_order_seq_cst) == 0; });
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

  void rest() { resting_.store(true, std::memory_order_relaxed); }

  int worker_count() const { return static_cast<int>(workers_.size()); }

  int sleeping_workers() const {
    int n = 0;
    for (const auto& w : workers_) n += w->asleep.load(std::memory_order_acquire) ? 1 : 0;
    return n;
  }

  // CPU time of the workers so far, from each thread's CPU clock: exact, including the time of
  // a worker that is running right now (process-wide counters such as getrusage() add a running
  // thread's time only when it stops running).
  double worker_cpu_ms() {
    double ms = 0;
    for (auto& w : workers_) {
      clockid_t clock;
      timespec ts{};
      if (pthread_getcpuclockid(w->thread.native_handle(), &clock) == 0 && clock_gettime(clock, &ts) == 0)
        ms += static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
    }
    return ms;
  }

 private:
  // A worker thread and where it sleeps.
  struct Worker {
    std::thread thread;
    std::mutex mutex;
    std::condition_variable wake;
    std::atomic<bool> asleep{false};
  };

  // Starts workers until there are `wanted`. A thread that cannot be started (a process at its
  // thread or memory limit) is not an error: the caller and the workers there are do the tasks.
  void add_workers(int wanted) {
    while (static_cast<int>(workers_.size()) < wanted) {
      auto w = std::make_unique<Worker>();
      const int slot = static_cast<int>(workers_.size()) + 1;
      try {
        w->thread = std::thread([this, me = w.get(), slot] { worker_main(*me, slot); });
      } catch (const std::system_error&) {
        return;
      }
      workers_.push_back(std::move(w));
    }
  }

  // Runs the tasks of this thread's home range, in order, then those left in the other
  // threads' ranges (taking each victim's next task). Home ranges are the static split, so
  // that consecutive layers cut the same way find their rows in the cache of the thread that
  // wrote them; taking from the others is what makes a late worker cost nothing.
  void claim_tasks(int slot) {
    const int threads = threads_;
    run_range(slot, slot);
    for (int i = 1; i < threads; ++i) run_range((slot + i) % threads, slot);
  }

  void run_range(int range, int slot) {
    const TaskFn& fn = *fn_;
    HomeRange& r = ranges_[static_cast<size_t>(range)];
    for (int64_t task = r.next.fetch_add(1, std::memory_order_relaxed); task < r.end;
         task = r.next.fetch_add(1, std::memory_order_relaxed)) {
      try {
        fn(task, slot);
      } catch (...) {  // kept for the caller; the other tasks still run (none of ours throws)
        std::lock_guard<std::mutex> lock(failure_mutex_);
        if (!failure_) failure_ = std::current_exception();
      }
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  void worker_main(Worker& me, int slot) {
    t_inside_task = true;
    uint64_t seen = 0;
    bool wanted = true;  // whether the last job had a slot for this worker: then spin for the next
    for (;;) {
      const uint64_t state = wait_for_change(me, seen, wanted);
      if (stop_.load(std::memory_order_relaxed)) return;
      seen = state;
      wanted = true;
      if ((state & 1) == 0) continue;  // a job closed before this worker looked
      in_job_.fetch_add(1, std::memory_order_seq_cst);
      if (state_.load(std::memory_order_seq_cst) == state) {
        wanted = slot < threads_;
        if (wanted) claim_tasks(slot);
      }
      in_job_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  // The first value of state_ other than `seen` (or anything, once stopping): spins for a
  // while unless told to rest, then sleeps until a job that wants this worker wakes it (a
  // sleeping worker is only woken by a job with a slot for it).
  uint64_t wait_for_change(Worker& me, uint64_t seen, bool spin) {
    const auto until = std::chrono::steady_clock::now() + (spin ? kSpinBeforeSleep : std::chrono::microseconds(0));
    for (int spins = 0;; ++spins) {
      const uint64_t state = state_.load(std::memory_order_acquire);
      if (state != seen || stop_.load(std::memory_order_relaxed)) return state;
      if (resting_.load(std::memory_order_relaxed)) break;
      if ((spins & 255) == 255 && std::chrono::steady_clock::now() > until) break;
      WINFER_SPIN_PAUSE();
    }
    std::unique_lock<std::mutex> lock(me.mutex);
    me.asleep.store(true, std::memory_order_seq_cst);
    uint64_t state = seen;
    me.wake.wait(lock, [&] {
      state = state_.load(std::memory_order_seq_cst);
      return state != seen || stop_.load(std::memory_order_seq_cst);
    });
    me.asleep.store(false, std::memory_order_relaxed);
    return state;
  }

  std::vector<std::unique_ptr<Worker>> workers_;
  // The job: written by the caller while no worker is inside one, read by workers inside it.
  // Each counter has a cache line of its own: spinning workers read state_ (and the rarely
  // written resting_/stop_) without pulling in the lines that every claim (ranges_) or finished
  // task (done_) writes.
  const TaskFn* fn_ = nullptr;
  int64_t tasks_ = 0;
  int threads_ = 1;
  struct alignas(64) HomeRange {  // the tasks [next, end) of one slot, each on a line of its own
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::vector<HomeRange> ranges_;
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<uint64_t> state_{0};
  alignas(64) std::atomic<int> in_job_{0};
  std::exception_ptr failure_;  // the first exception a task threw (under failure_mutex_)
  // Sleeping.
  alignas(64) std::atomic<bool> resting_{false};
  std::atomic<bool> stop_{false};
  std::mutex failure_mutex_;
};

thread_local std::unique_ptr<Pool> t_pool;

Pool& this_threads_pool() {
  if (!t_pool) t_pool = std::make_unique<Pool>();
  return *t_pool;
}

}  // namespace

void parallel_tasks(int threads, int64_t tasks, TaskFn fn) {
  if (tasks <= 0) return;
  if (threads > tasks) threads = static_cast<int>(tasks);
  if (threads <= 1 || t_inside_task) {
    for (int64_t task = 0; task < tasks; ++task) fn(task, 0);
    return;
  }
  this_threads_pool().run(threads, tasks, fn);
}

void rest_workers() {
  if (t_pool && !t_inside_task) t_pool->rest();
}

int pool_worker_count() { return t_pool ? t_pool->worker_count() : 0; }

double pool_worker_cpu_ms() { return t_pool ? t_pool->worker_cpu_ms() : 0.0; }

int pool_sleeping_workers() { return t_pool ? t_pool->sleeping_workers() : 0; }

}  // namespace cpu
}  // namespace winfer
