// The CPU kernels' threads: a pool of workers per calling thread, where the caller works too and
// a worker that starts late takes only what is left.
//
// Why not OpenMP (which the kernels used until session 14): an OpenMP region splits its work
// statically, so the caller waits for the slowest worker's share. On this machine a worker whose
// core went idle takes ~7 ms to wake (the hypervisor's halted vCPU), so a 2-thread ResNet-18 run
// after a pause took 30 ms instead of 22 (docs/PERFORMANCE.md, "Idle workers"); a worker that
// lost its core to a neighbour made every barrier wait out a time slice; and libgomp's workers
// spin ~3 ms after each region unless paused (libomp ignores the pause). Here:
//  - work is a set of tasks claimed one at a time from a shared counter: whoever is running
//    takes the next one, so a late or descheduled worker delays nothing it has not started;
//  - a worker spins for a short while (200 us) after its last task (the next layer usually comes
//    within microseconds), then sleeps on a condition variable; rest_workers() sends them to
//    sleep at once (the session does when a run returns, so nothing spins after it);
//  - each thread that calls parallel_tasks() has its own workers (as libgomp gives each caller
//    its own team), so sessions run from several threads do not share or wait for a pool.
// An exception thrown by a task reaches the caller once every task has run (the kernels
// validate before going parallel, so none of them throws).
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace winfer {
namespace cpu {

// A non-owning reference to a callable void(int64_t task, int slot), cheap to pass by value.
class TaskFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same<std::decay_t<F>, TaskFn>::value>>
  TaskFn(F& f)  // NOLINT(google-explicit-constructor): the point is to pass lambdas
      : object_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, int64_t task, int slot) { (*static_cast<F*>(o))(task, slot); }) {}
  void operator()(int64_t task, int slot) const { call_(object_, task, slot); }

 private:
  void* object_;
  void (*call_)(void*, int64_t, int);
};

// Runs fn(task, slot) once for every task in [0, tasks), on at most `threads` threads: the
// calling thread and up to threads - 1 workers of its pool (started on first use). `slot`
// identifies the thread running the task: 0 is the caller, and no two threads of one call
// share a slot, so per-thread scratch can be indexed by it (slot < threads). Tasks run in no
// particular order and on any slot; the call returns when all have finished (their writes
// are visible to the caller). From inside a task (a nested call) the tasks run on the calling
// thread, with slot 0.
void parallel_tasks(int threads, int64_t tasks, TaskFn fn);

// Splits [0, count) into `pieces` contiguous pieces of near-equal size (piece k is
// [count*k/pieces, count*(k+1)/pieces)) and runs body(begin, end, slot) for each non-empty one
// through parallel_tasks().
template <class Body>
void parallel_pieces(int threads, int64_t count, int64_t pieces, Body&& body) {
  if (count <= 0) return;
  if (pieces > count) pieces = count;
  if (pieces < 1) pieces = 1;
  auto piece = [&](int64_t k, int slot) {
    const int64_t begin = count * k / pieces, end = count * (k + 1) / pieces;
    if (end > begin) body(begin, end, slot);
  };
  parallel_tasks(threads, pieces, TaskFn(piece));
}

// How many pieces to cut `count` items worth `work` element operations in all into, for
// `threads` threads: a few per thread, so that a thread that starts late (or is preempted)
// leaves its share to the others, but one per thread when pieces would hold less than
// kMinWorkPerPiece (each piece repeats a kernel's set-up: window rows, pointers; measured on
// MobileNetV2 and ShuffleNetV2, whose layers are small), and never more than the items.
constexpr int64_t kPiecesPerThread = 4;
constexpr int64_t kMinWorkPerPiece = int64_t{1} << 19;
inline int64_t pieces_for(int threads, int64_t count, int64_t work) {
  int64_t want = threads <= 1 ? 1 : threads * kPiecesPerThread;
  if (work / kMinWorkPerPiece < want) want = work / kMinWorkPerPiece > threads ? work / kMinWorkPerPiece : threads;
  return want < count ? want : (count > 0 ? count : 1);
}

// Sends the calling thread's workers to sleep now instead of letting them spin for the next
// call (a no-op when it has none). The session calls it when a run returns.
void rest_workers();

// The workers the calling thread's pool has started, and the CPU milliseconds they have used so
// far (tests).
int pool_worker_count();
double pool_worker_cpu_ms();
// How many of them are asleep (blocked, not spinning) right now (tests).
int pool_sleeping_workers();

}  // namespace cpu
}  // namespace winfer
