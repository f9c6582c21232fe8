// The host emulator's scheduler (blocks, fibers, barriers, warp exchange) and runtime API.
//
// One Scheduler per OS thread runs a grid: blocks one after another in a fixed shuffled order,
// and within a block every thread as a fiber (ucontext) on a stack of its own. A fiber runs
// until it waits (block barrier, warp barrier) or returns; when no fiber can run, the waiting
// groups whose members have all arrived are released. If nothing can be released the kernel is
// broken (a barrier some threads never reach) and the launch fails with a description.
//
// Threads of a block are resumed in ascending order on even rounds and descending order on odd
// ones, and blocks run in a shuffled order, so a kernel that reads another thread's shared
// memory without a barrier, or depends on the order of blocks, has a good chance of giving a
// wrong result here too instead of passing by luck.
//
// Checking modes (Checks, emu.h; WINFER_EMU_CHECKS): "warps" runs the warps of a block one at a
// time in seeded random orders (run_block_warps_apart), "poison" fills shared memory with
// signalling NaN bytes at every block start (shared_declared).
#include "kernels/cuda/emu/emu.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace winfer_emu {
namespace {

constexpr int kMaxThreadsPerBlock = 1024;
constexpr size_t kStackBytes = 128 * 1024;  // per fiber; kernels keep a few hundred bytes of locals

// A fiber stack with an inaccessible guard page below it, so an overflow faults at once instead
// of corrupting the neighbouring stack.
class Stack {
 public:
  Stack() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, kStackBytes + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "winfer emulator: cannot map a fiber stack\n");
      std::abort();
    }
    mprotect(p, page_, PROT_NONE);
    base_ = static_cast<char*>(p);
  }
  ~Stack() { munmap(base_, kStackBytes + page_); }
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;
  void* usable() const { return base_ + page_; }

 private:
  char* base_ = nullptr;
  size_t page_ = 0;
};

enum class Wait { kRunnable, kBlockBarrier, kWarpBarrier, kDone };

struct Fiber {
  ucontext_t context;
  uint3 index;
  Wait wait = Wait::kRunnable;
  unsigned warp_mask = 0;  // lanes this fiber waits for (kWarpBarrier)
  // cp.async: copies issued and not yet done, in issue order; group_ends[i] = copies issued
  // when the i-th still-pending group was committed.
  struct AsyncCopy {
    void* dst;
    const void* src;
    size_t size, zfill;
  };
  std::vector<AsyncCopy> async_copies;
  std::vector<size_t> async_group_ends;
  // Does the oldest `count` queued copies.
  void finish_async_copies(size_t count);
};

void note_shared_write(void* address, size_t bytes);

void Fiber::finish_async_copies(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const AsyncCopy& c = async_copies[i];
    note_shared_write(c.dst, c.size);
    std::memcpy(c.dst, c.src, c.size - c.zfill);
    std::memset(static_cast<unsigned char*>(c.dst) + (c.size - c.zfill), 0, c.zfill);
  }
  async_copies.erase(async_copies.begin(), async_copies.begin() + static_cast<std::ptrdiff_t>(count));
  size_t kept = 0;
  for (size_t end : async_group_ends)
    if (end > count) async_group_ends[kept++] = end - count;
  async_group_ends.resize(kept);
}

// ---- checking modes ------------------------------------------------------------------------------
std::mutex checks_mutex;
bool checks_read = false;
Checks current_checks;  // guarded by checks_mutex

Checks checks_from_environment() {
  Checks c;
  const char* env = std::getenv("WINFER_EMU_CHECKS");
  const std::string all = env ? env : "";
  size_t start = 0;
  while (start <= all.size()) {
    const size_t end = std::min(all.find(',', start), all.size());
    const std::string word = all.substr(start, end - start);
    if (word == "poison") {
      c.poison_shared = true;
    } else if (word == "warps") {
      c.warps_apart = true;
    } else if (word == "uninit") {
      c.uninit_shared = true;
    } else if (word == "race") {
      c.race_shared = true;
    } else if (word.rfind("seed=", 0) == 0 && word.size() > 5) {
      c.seed = std::strtoull(word.c_str() + 5, nullptr, 10);
    } else if (!word.empty()) {
      std::fprintf(stderr,
                   "winfer emulator: WINFER_EMU_CHECKS: unknown check '%s' (poison, warps, seed=N, uninit, race)\n",
                   word.c_str());
      std::abort();
    }
    start = end + 1;
  }
  return c;
}

Checks get_checks() {
  std::lock_guard<std::mutex> lock(checks_mutex);
  if (!checks_read) {
    current_checks = checks_from_environment();
    checks_read = true;
  }
  return current_checks;
}

uint64_t xorshift(uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

class Scheduler {
 public:
  cudaError_t run_grid(dim3 grid, dim3 block, void (*body)(void*), void* closure);
  void wait_block_barrier() { suspend(Wait::kBlockBarrier, 0); }
  void wait_warp_barrier(unsigned mask);
  int current_linear_thread() const { return current_; }
  Fiber& current_fiber() { return fibers_[static_cast<size_t>(current_)]; }
  unsigned char* warp_slot(int warp, int lane) { return slots_[static_cast<size_t>(warp)].lane[lane]; }
  bool in_kernel() const { return running_; }
  void shared_declared(void* address, size_t bytes);
  // A load or store of the running kernel (the instrumentation's hooks), checked when it falls in
  // a shared variable and Checks::uninit_shared or race_shared is on.
  void access(const void* address, size_t bytes, bool write);
  void set_launch_name(const char* name) { launch_name_ = name; }
  const char* launch_name() const { return launch_name_ ? launch_name_ : "(unnamed kernel)"; }
  // A check failed in the running thread: the launch fails after this block. Returns whether to
  // print the report (the first 4 of a launch; the count of the others follows at its end).
  bool fault() {
    faulted_ = true;
    return ++faults_ <= kPrintedFaults;
  }

 private:
  static void fiber_entry();
  cudaError_t run_block(unsigned block_linear);
  cudaError_t run_block_warps_apart(unsigned block_linear);
  bool release_warp_barrier(int warp);
  void start_fibers();
  void resume(int i);
  void suspend(Wait wait, unsigned mask);
  bool release_warp_barriers();
  bool release_block_barrier();
  unsigned existing_lanes(int warp) const;
  std::string describe_stall() const;

  std::vector<std::unique_ptr<Stack>> stacks_;  // grows to the largest block seen, then reused
  std::vector<Fiber> fibers_;
  struct WarpSlots {
    unsigned char lane[32][8];  // warp exchange: 8 bytes per lane
  };
  std::vector<WarpSlots> slots_;
  ucontext_t scheduler_context_;
  int threads_ = 0, current_ = -1;
  void (*body_)(void*) = nullptr;
  void* closure_ = nullptr;
  bool running_ = false;
  bool faulted_ = false;
  static constexpr int kPrintedFaults = 4;
  long faults_ = 0;
  Checks checks_;              // of the running launch
  uint64_t block_serial_ = 0;  // blocks run by this OS thread, the current one's number
  // Shared variables seen (WINFER_EMU_SHARED) and the block that last poisoned each.
  // Who touched a 4-byte granule of shared memory: the thread, the barrier interval (a number
  // that grows at every block start and every __syncthreads() release) and its warp's epoch
  // (grows at every release of a warp barrier of that warp).
  struct Touch {
    uint64_t interval = 0, warp_epoch = 0;
    int thread = -1;
  };
  struct Granule {
    uint64_t written_in = 0;  // block_serial_ of the last write
    Touch write, first_read, last_read;
  };
  struct SharedVariable {
    unsigned char* address;
    size_t bytes;
    uint64_t poisoned_in;
    std::vector<Granule> granules;  // when uninit_shared or race_shared
  };
  std::vector<SharedVariable> shared_;
  uintptr_t shared_lo_ = UINTPTR_MAX, shared_hi_ = 0;  // bounds of all of them
  uint64_t interval_ = 0, epoch_counter_ = 0;
  std::vector<uint64_t> warp_epoch_;
  const char* launch_name_ = nullptr;
  bool races_(const Touch& before, const Touch& now) const;
  void report_shared(const char* what, const SharedVariable& v, size_t offset, size_t bytes, const Touch* other);
};

thread_local Scheduler scheduler;
thread_local bool watching = false;  // a kernel runs with uninit_shared or race_shared

void note_shared_write(void* address, size_t bytes) {
  if (watching) scheduler.access(address, bytes, true);
}

void Scheduler::fiber_entry() {
  Scheduler& s = scheduler;
  s.body_(s.closure_);
  Fiber& self = s.fibers_[static_cast<size_t>(s.current_)];
  self.finish_async_copies(self.async_copies.size());  // the GPU completes unwaited copies too
  self.wait = Wait::kDone;
  // Returning resumes uc_link, the scheduler.
}

void Scheduler::start_fibers() {
  while (static_cast<int>(stacks_.size()) < threads_) stacks_.push_back(std::make_unique<Stack>());
  fibers_.resize(static_cast<size_t>(threads_));
  slots_.resize(static_cast<size_t>((threads_ + warpSize - 1) / warpSize));
  for (int i = 0; i < threads_; ++i) {
    Fiber& f = fibers_[static_cast<size_t>(i)];
    const unsigned u = static_cast<unsigned>(i);
    f.index = uint3{u % blockDim.x, u / blockDim.x % blockDim.y, u / (blockDim.x * blockDim.y)};
    f.wait = Wait::kRunnable;
    f.warp_mask = 0;
    f.async_copies.clear();  // left by a launch that failed
    f.async_group_ends.clear();
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = stacks_[static_cast<size_t>(i)]->usable();
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &scheduler_context_;
    makecontext(&f.context, &Scheduler::fiber_entry, 0);
  }
}

void Scheduler::resume(int i) {
  current_ = i;
  threadIdx = fibers_[static_cast<size_t>(i)].index;
  swapcontext(&scheduler_context_, &fibers_[static_cast<size_t>(i)].context);
  current_ = -1;
}

void Scheduler::suspend(Wait wait, unsigned mask) {
  Fiber& f = fibers_[static_cast<size_t>(current_)];
  f.wait = wait;
  f.warp_mask = mask;
  swapcontext(&f.context, &scheduler_context_);
}

void Scheduler::wait_warp_barrier(unsigned mask) {
  const unsigned own_lane = 1u << (current_ % warpSize);
  suspend(Wait::kWarpBarrier, mask | own_lane);
}

unsigned Scheduler::existing_lanes(int warp) const {
  const int lanes = std::min(warpSize, threads_ - warp * warpSize);
  return lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1u;
}

// A lane waiting at a warp barrier may continue once every existing lane of its mask waits there
// with the same mask.
bool Scheduler::release_warp_barriers() {
  bool released = false;
  for (int warp = 0; warp * warpSize < threads_; ++warp) released = release_warp_barrier(warp) || released;
  return released;
}

bool Scheduler::release_warp_barrier(int warp) {
  {
    const unsigned existing = existing_lanes(warp);
    Fiber* lanes = &fibers_[static_cast<size_t>(warp * warpSize)];
    unsigned release = 0;
    for (int lane = 0; lane < warpSize && (existing >> lane & 1u); ++lane) {
      if (lanes[lane].wait != Wait::kWarpBarrier) continue;
      const unsigned needed = lanes[lane].warp_mask & existing;
      bool all_there = true;
      for (int other = 0; other < warpSize; ++other)
        if ((needed >> other & 1u) &&
            (lanes[other].wait != Wait::kWarpBarrier || lanes[other].warp_mask != lanes[lane].warp_mask))
          all_there = false;
      if (all_there) release |= 1u << lane;
    }
    for (int lane = 0; lane < warpSize; ++lane)
      if (release >> lane & 1u) lanes[lane].wait = Wait::kRunnable;
    if (release != 0) warp_epoch_[static_cast<size_t>(warp)] = ++epoch_counter_;
    return release != 0;
  }
}

// __syncthreads() completes when every thread of the block waits there. A thread that has
// returned never arrives: on the GPU that is undefined behaviour, here it is reported.
bool Scheduler::release_block_barrier() {
  for (const Fiber& f : fibers_)
    if (f.wait != Wait::kBlockBarrier) return false;
  for (Fiber& f : fibers_) f.wait = Wait::kRunnable;
  ++interval_;
  return true;
}

std::string Scheduler::describe_stall() const {
  int at_block = 0, at_warp = 0, done = 0;
  for (const Fiber& f : fibers_) {
    at_block += f.wait == Wait::kBlockBarrier;
    at_warp += f.wait == Wait::kWarpBarrier;
    done += f.wait == Wait::kDone;
  }
  return "block (" + std::to_string(blockIdx.x) + "," + std::to_string(blockIdx.y) + "," + std::to_string(blockIdx.z) +
         ") of " + std::to_string(threads_) + " threads cannot continue: " + std::to_string(at_block) +
         " wait in __syncthreads(), " + std::to_string(at_warp) +
         " in a warp collective (__syncwarp/__shfl_*_sync) whose lanes "
         "never all arrive, " +
         std::to_string(done) + " have returned";
}

cudaError_t Scheduler::run_block(unsigned block_linear) {
  blockIdx =
      uint3{block_linear % gridDim.x, block_linear / gridDim.x % gridDim.y, block_linear / (gridDim.x * gridDim.y)};
  ++block_serial_;
  ++interval_;
  start_fibers();
  warp_epoch_.assign(static_cast<size_t>((threads_ + warpSize - 1) / warpSize), 0);
  if (checks_.warps_apart) return run_block_warps_apart(block_linear);
  for (int round = 0;; ++round) {
    for (int j = 0; j < threads_; ++j) {
      const int i = (round & 1) ? threads_ - 1 - j : j;
      if (fibers_[static_cast<size_t>(i)].wait == Wait::kRunnable) resume(i);
    }
    bool all_done = true;
    for (const Fiber& f : fibers_) all_done = all_done && f.wait == Wait::kDone;
    if (all_done) return cudaSuccess;
    if (!release_warp_barriers() && !release_block_barrier()) {
      // The suspended fibers are abandoned; their stacks are reused by the next launch.
      std::fprintf(stderr, "winfer emulator: launch failed: %s\n", describe_stall().c_str());
      return cudaErrorLaunchFailure;
    }
  }
}

// One warp at a time: a warp drawn at random runs (its lanes in ascending or descending order,
// also drawn) through its warp barriers and shuffles until every lane waits at __syncthreads() or
// has returned, then the next warp; the block barrier is released once all have, and the warps
// are drawn again. So one warp can finish a reduction, write shared memory and read what the
// others have not written yet, which the lock-step order never shows.
cudaError_t Scheduler::run_block_warps_apart(unsigned block_linear) {
  const int warps = (threads_ + warpSize - 1) / warpSize;
  std::vector<int> order(static_cast<size_t>(warps));
  uint64_t state = checks_.seed * 0x9E3779B97F4A7C15ull ^ (block_serial_ + 1) * 0xBF58476D1CE4E5B9ull ^ block_linear;
  if (state == 0) state = 1;
  for (;;) {
    for (int w = 0; w < warps; ++w) order[static_cast<size_t>(w)] = w;
    for (int i = warps; i > 1; --i)
      std::swap(order[static_cast<size_t>(i - 1)],
                order[static_cast<size_t>(xorshift(state) % static_cast<uint64_t>(i))]);
    for (int warp : order) {
      const int first = warp * warpSize, lanes = std::min(warpSize, threads_ - first);
      do {
        const bool descending = xorshift(state) & 1u;
        for (int j = 0; j < lanes; ++j) {
          const int i = first + (descending ? lanes - 1 - j : j);
          if (fibers_[static_cast<size_t>(i)].wait == Wait::kRunnable) resume(i);
        }
      } while (release_warp_barrier(warp));
    }
    bool all_done = true;
    for (const Fiber& f : fibers_) all_done = all_done && f.wait == Wait::kDone;
    if (all_done) return cudaSuccess;
    if (!release_block_barrier()) {
      std::fprintf(stderr, "winfer emulator: launch failed: %s\n", describe_stall().c_str());
      return cudaErrorLaunchFailure;
    }
  }
}

// The first thread of the block to declare the variable poisons it, before any thread of the
// block can use it (each uses it only after its own declaration).
void Scheduler::shared_declared(void* address, size_t bytes) {
  const bool watched = checks_.uninit_shared || checks_.race_shared;
  if (!running_ || !(checks_.poison_shared || watched)) return;
  auto* p = static_cast<unsigned char*>(address);
  SharedVariable* v = nullptr;
  for (SharedVariable& s : shared_)
    if (s.address == p) v = &s;
  if (!v) {
    shared_.push_back(SharedVariable{p, bytes, 0, {}});
    v = &shared_.back();
    shared_lo_ = std::min(shared_lo_, reinterpret_cast<uintptr_t>(p));
    shared_hi_ = std::max(shared_hi_, reinterpret_cast<uintptr_t>(p) + bytes);
  }
  if (watched && v->granules.size() != (bytes + 3) / 4) v->granules.assign((bytes + 3) / 4, Granule{});
  if (!checks_.poison_shared || v->poisoned_in == block_serial_) return;
  v->poisoned_in = block_serial_;
  static const unsigned char pattern[4] = {0xA5, 0xA5, 0xA5, 0x7F};  // 0x7FA5A5A5: float sNaN
  for (size_t i = 0; i < bytes; ++i) p[i] = pattern[i % 4];
}

// Ordered: a block barrier between them, the same thread, or a warp barrier of their warp.
bool Scheduler::races_(const Touch& before, const Touch& now) const {
  if (before.thread < 0 || before.interval != now.interval || before.thread == now.thread) return false;
  return !(before.thread / warpSize == now.thread / warpSize && before.warp_epoch != now.warp_epoch);
}

void Scheduler::report_shared(const char* what, const SharedVariable& v, size_t offset, size_t bytes,
                              const Touch* other) {
  if (!fault()) return;
  const uint3 t = threadIdx;
  std::string with;
  if (other) {
    const Fiber& f = fibers_[static_cast<size_t>(other->thread)];
    with = " and thread (" + std::to_string(f.index.x) + "," + std::to_string(f.index.y) + "," +
           std::to_string(f.index.z) + ") with no __syncthreads() between";
  }
  std::fprintf(stderr,
               "winfer emulator: %s: kernel %s, %zu bytes at offset %zu of a %zu-byte __shared__ variable, "
               "block (%u,%u,%u) thread (%u,%u,%u)%s\n",
               what, launch_name(), bytes, offset, v.bytes, blockIdx.x, blockIdx.y, blockIdx.z, t.x, t.y, t.z,
               with.c_str());
}

void Scheduler::access(const void* address, size_t bytes, bool write) {
  const auto a = reinterpret_cast<uintptr_t>(address);
  if (a >= shared_hi_ || a + bytes <= shared_lo_ || current_ < 0) return;
  for (SharedVariable& v : shared_) {
    const auto lo = reinterpret_cast<uintptr_t>(v.address);
    if (a + bytes <= lo || a >= lo + v.bytes || v.granules.empty()) continue;
    const size_t offset = a - lo;
    const Touch now{interval_, warp_epoch_[static_cast<size_t>(current_ / warpSize)], current_};
    for (size_t g = offset / 4; g < std::min(v.granules.size(), (offset + bytes + 3) / 4); ++g) {
      Granule& gr = v.granules[g];
      if (write) {
        if (checks_.race_shared) {
          const Touch* other = races_(gr.write, now)        ? &gr.write
                               : races_(gr.first_read, now) ? &gr.first_read
                               : races_(gr.last_read, now)  ? &gr.last_read
                                                            : nullptr;
          if (other) report_shared("shared-memory race (write after another thread's access)", v, offset, bytes, other);
        }
        gr.written_in = block_serial_;
        gr.write = now;
      } else {
        if (checks_.uninit_shared && gr.written_in != block_serial_) {
          report_shared("read of shared memory never written in this block", v, offset, bytes, nullptr);
          gr.written_in = block_serial_;  // once per granule and block
        }
        if (checks_.race_shared && races_(gr.write, now))
          report_shared("shared-memory race (read of another thread's write)", v, offset, bytes, &gr.write);
        if (gr.first_read.interval != now.interval) gr.first_read = now;
        gr.last_read = now;
      }
    }
    return;
  }
}

bool valid_configuration(dim3 grid, dim3 block) {
  const unsigned long long threads = 1ull * block.x * block.y * block.z;
  return grid.x >= 1 && grid.y >= 1 && grid.z >= 1 && grid.x <= 0x7fffffffu && grid.y <= 65535 && grid.z <= 65535 &&
         block.x >= 1 && block.y >= 1 && block.z >= 1 && block.x <= 1024 && block.y <= 1024 && block.z <= 64 &&
         threads <= kMaxThreadsPerBlock;
}

// Blocks in a fixed pseudo-random order (Fisher-Yates with a xorshift generator, identical on
// every platform).
std::vector<unsigned> block_order(unsigned count) {
  std::vector<unsigned> order(count);
  for (unsigned i = 0; i < count; ++i) order[i] = i;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (unsigned i = count; i > 1; --i) {
    xorshift(state);
    std::swap(order[i - 1], order[static_cast<unsigned>(state % i)]);
  }
  return order;
}

cudaError_t Scheduler::run_grid(dim3 grid, dim3 block, void (*body)(void*), void* closure) {
  if (running_) {
    std::fprintf(stderr, "winfer emulator: a kernel launched another kernel (not supported)\n");
    return cudaErrorNotSupported;
  }
  if (!valid_configuration(grid, block)) return cudaErrorInvalidConfiguration;
  gridDim = grid;
  blockDim = block;
  threads_ = static_cast<int>(block.x * block.y * block.z);
  body_ = body;
  closure_ = closure;
  checks_ = get_checks();
  watching = checks_.uninit_shared || checks_.race_shared;
  faulted_ = false;
  faults_ = 0;
  running_ = true;
  cudaError_t result = cudaSuccess;
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  if (blocks > 0xffffffffull) {
    result = cudaErrorInvalidConfiguration;  // more blocks than the emulator can order
  } else {
    for (unsigned b : block_order(static_cast<unsigned>(blocks))) {
      result = run_block(b);
      if (result == cudaSuccess && faulted_) result = cudaErrorLaunchFailure;
      if (result != cudaSuccess) break;
    }
  }
  running_ = false;
  watching = false;
  launch_name_ = nullptr;
  if (faults_ > kPrintedFaults)
    std::fprintf(stderr, "winfer emulator: ... and %ld more such reports in this launch\n", faults_ - kPrintedFaults);
  return result;
}

// ---- runtime state --------------------------------------------------------------------------------
thread_local cudaError_t last_error = cudaSuccess;

cudaError_t record(cudaError_t e) {
  if (e != cudaSuccess) last_error = e;
  return e;
}

// Live allocations (start -> size), to check that copies stay inside them, and the bytes they
// take (sizes rounded up to cudaMalloc's alignment), for cudaMemGetInfo.
std::mutex allocations_mutex;
std::map<uintptr_t, size_t>& allocations() {
  static std::map<uintptr_t, size_t> map;
  return map;
}
size_t allocated_bytes = 0;           // guarded by allocations_mutex
constexpr size_t kMallocAlign = 256;  // cudaMalloc's guaranteed alignment
size_t rounded_allocation(size_t bytes) { return (bytes + kMallocAlign - 1) / kMallocAlign * kMallocAlign; }

// The emulated device's memory: the host's physical memory.
size_t device_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
}

bool inside_allocation(const void* p, size_t bytes) {
  if (bytes == 0) return true;
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(allocations_mutex);
  auto it = allocations().upper_bound(a);
  if (it == allocations().begin()) return false;
  --it;
  return a >= it->first && a + bytes <= it->first + it->second;
}

bool copy_in_bounds(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if ((dst_device && !inside_allocation(dst, bytes)) || (src_device && !inside_allocation(src, bytes))) {
    std::fprintf(stderr, "winfer emulator: cudaMemcpy of %zu bytes outside a cudaMalloc allocation\n", bytes);
    return false;
  }
  return true;
}

}  // namespace

cudaError_t run_grid(dim3 grid, dim3 block, void (*thread_body)(void*), void* closure) {
  return record(scheduler.run_grid(grid, block, thread_body, closure));
}

Checks checks() { return get_checks(); }

Checks set_checks(const Checks& c) {
  const Checks previous = get_checks();
  std::lock_guard<std::mutex> lock(checks_mutex);
  current_checks = c;
  return previous;
}

void shared_declared(void* address, size_t bytes) { scheduler.shared_declared(address, bytes); }

bool shared_access_checked() {
#if defined(WINFER_EMU_ACCESS_HOOKS)
  return true;
#else
  return false;
#endif
}

void name_next_launch(const char* name) { scheduler.set_launch_name(name); }

bool alignment_checked() {
#if defined(WINFER_EMU_ALIGNMENT_CHECK)
  return true;
#else
  return false;
#endif
}

int shfl_idx_source(int lane, int src, int width) { return (lane / width) * width + ((src % width) + width) % width; }
int shfl_up_source(int lane, int delta, int width) { return lane % width >= delta ? lane - delta : lane; }
int shfl_down_source(int lane, int delta, int width) { return lane % width + delta < width ? lane + delta : lane; }
int shfl_xor_source(int lane, int lane_mask, int width) {
  const int src = lane ^ lane_mask;
  return src >= (lane / width + 1) * width ? lane : src;  // later groups are out of reach
}

void warp_exchange(unsigned mask, const void* value, size_t size, void* out, SourceLaneFn source, int arg, int width) {
  const int linear = scheduler.current_linear_thread();
  const int warp = linear / warpSize, lane = linear % warpSize;
  std::memcpy(scheduler.warp_slot(warp, lane), value, size);
  scheduler.wait_warp_barrier(mask);  // every lane of the mask has published its value
  const int src = source(lane, arg, width);
  const bool readable = src >= 0 && src < warpSize && (mask >> src & 1u) &&
                        warp * warpSize + src < static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
  std::memcpy(out, readable ? scheduler.warp_slot(warp, src) : value, size);
  scheduler.wait_warp_barrier(mask);  // every lane has read before any publishes again
}

}  // namespace winfer_emu

void __syncthreads() {
  if (!winfer_emu::scheduler.in_kernel()) return;
  winfer_emu::scheduler.wait_block_barrier();
}

void __syncwarp(unsigned mask) {
  if (!winfer_emu::scheduler.in_kernel()) return;
  winfer_emu::scheduler.wait_warp_barrier(mask);
}

void __pipeline_memcpy_async(void* dst_shared, const void* src_global, size_t size_and_align, size_t zfill) {
  if (zfill > size_and_align) zfill = size_and_align;
  if (!winfer_emu::scheduler.in_kernel()) {  // outside a kernel: at once
    std::memcpy(dst_shared, src_global, size_and_align - zfill);
    std::memset(static_cast<unsigned char*>(dst_shared) + (size_and_align - zfill), 0, zfill);
    return;
  }
  winfer_emu::scheduler.current_fiber().async_copies.push_back({dst_shared, src_global, size_and_align, zfill});
}

void __pipeline_commit() {
  if (!winfer_emu::scheduler.in_kernel()) return;
  winfer_emu::Fiber& f = winfer_emu::scheduler.current_fiber();
  f.async_group_ends.push_back(f.async_copies.size());
}

void __pipeline_wait_prior(size_t prior) {
  if (!winfer_emu::scheduler.in_kernel()) return;
  winfer_emu::Fiber& f = winfer_emu::scheduler.current_fiber();
  const size_t groups = f.async_group_ends.size();
  if (groups > prior) f.finish_async_copies(f.async_group_ends[groups - prior - 1]);
}

// ---- alignment check --------------------------------------------------------------------------------
// The emulated build compiles every emulated kernel and test with -fsanitize=alignment (CMakeLists.txt,
// WINFER_EMU_ALIGNMENT_CHECK) and without UBSan's runtime: these are the handlers the compiler
// calls on a misaligned load or store (a float4 at an address that is not a multiple of 16: x86
// does it, a GPU faults). In a kernel the access is reported with the kernel's source line, block
// and thread, and the launch fails; outside one (host code) the process aborts, as UBSan would.
// The sanitizer builds leave this to UBSan itself (fatal there).
#if defined(WINFER_EMU_ALIGNMENT_CHECK)
namespace {
struct UbsanSourceLocation {
  const char* file;
  uint32_t line, column;
};
struct UbsanTypeDescriptor {
  uint16_t kind, info;
  char name[1];
};
struct UbsanTypeMismatchData {
  UbsanSourceLocation location;
  const UbsanTypeDescriptor* type;
  unsigned char log_alignment, check_kind;
};

void report_misaligned(const UbsanTypeMismatchData* data, uintptr_t pointer) {
  static const char* const kinds[] = {"load", "store", "reference binding", "member access", "member call"};
  const char* what = data->check_kind < 5 ? kinds[data->check_kind] : "access";
  const unsigned long alignment = 1ul << data->log_alignment;
  if (!winfer_emu::scheduler.in_kernel()) {
    std::fprintf(stderr,
                 "winfer emulator: misaligned %s of %s at %#lx (needs %lu-byte alignment) at %s:%u, outside a kernel\n",
                 what, data->type->name, static_cast<unsigned long>(pointer), alignment, data->location.file,
                 data->location.line);
    std::abort();
  }
  if (!winfer_emu::scheduler.fault()) return;  // reported the first few of this launch
  std::fprintf(stderr,
               "winfer emulator: misaligned %s of %s at %#lx (needs %lu-byte alignment): kernel %s at %s:%u, "
               "block (%u,%u,%u) thread (%u,%u,%u)\n",
               what, data->type->name, static_cast<unsigned long>(pointer), alignment,
               winfer_emu::scheduler.launch_name(), data->location.file, data->location.line, blockIdx.x, blockIdx.y,
               blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z);
}
}  // namespace

extern "C" void __ubsan_handle_type_mismatch_v1(UbsanTypeMismatchData* data, uintptr_t pointer) {
  report_misaligned(data, pointer);
}
extern "C" void __ubsan_handle_type_mismatch_v1_abort(UbsanTypeMismatchData* data, uintptr_t pointer) {
  report_misaligned(data, pointer);
}
#endif

// ---- access hooks ---------------------------------------------------------------------------------
// The emulated kernels are compiled with -fsanitize=thread's instrumentation (CMakeLists.txt,
// WINFER_EMU_ACCESS_HOOKS) and linked without ThreadSanitizer's runtime: the compiler's calls on
// every load and store land here, and go to the scheduler's shared-memory checks while a kernel
// runs with them (Checks::uninit_shared, race_shared); otherwise they return at once. The rest of
// the runtime's interface the instrumentation calls (function entry/exit, vptr updates, atomics
// in host code of those files) is done plainly.
#if defined(WINFER_EMU_ACCESS_HOOKS)
namespace {
inline void hook(const void* address, size_t bytes, bool write) {
  if (winfer_emu::watching) winfer_emu::scheduler.access(address, bytes, write);
}
}  // namespace

#define WINFER_EMU_ACCESS_HOOK(n)                                          \
  extern "C" void __tsan_read##n(void* a) { hook(a, n, false); }           \
  extern "C" void __tsan_write##n(void* a) { hook(a, n, true); }           \
  extern "C" void __tsan_unaligned_read##n(void* a) { hook(a, n, false); } \
  extern "C" void __tsan_unaligned_write##n(void* a) { hook(a, n, true); } \
  extern "C" void __tsan_volatile_read##n(void* a) { hook(a, n, false); }  \
  extern "C" void __tsan_volatile_write##n(void* a) { hook(a, n, true); }
WINFER_EMU_ACCESS_HOOK(1)
WINFER_EMU_ACCESS_HOOK(2)
WINFER_EMU_ACCESS_HOOK(4)
WINFER_EMU_ACCESS_HOOK(8)
WINFER_EMU_ACCESS_HOOK(16)
#undef WINFER_EMU_ACCESS_HOOK
extern "C" void __tsan_read_range(void* a, unsigned long n) { hook(a, n, false); }
extern "C" void __tsan_write_range(void* a, unsigned long n) { hook(a, n, true); }
extern "C" void* __tsan_memcpy(void* d, const void* s, unsigned long n) {
  hook(s, n, false);
  hook(d, n, true);
  return std::memcpy(d, s, n);
}
extern "C" void* __tsan_memmove(void* d, const void* s, unsigned long n) {
  hook(s, n, false);
  hook(d, n, true);
  return std::memmove(d, s, n);
}
extern "C" void* __tsan_memset(void* d, int c, unsigned long n) {
  hook(d, n, true);
  return std::memset(d, c, n);
}
extern "C" void __tsan_init() {}
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_vptr_update(void** p, void* v) { *p = v; }
extern "C" void __tsan_vptr_read(void**) {}
// Atomics (host code only: a kernel's atomicAdd is emu.h's plain read-modify-write).
#define WINFER_EMU_ATOMIC(bits, type)                                                                         \
  extern "C" type __tsan_atomic##bits##_load(const volatile type* a, int) {                                   \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                              \
  }                                                                                                           \
  extern "C" void __tsan_atomic##bits##_store(volatile type* a, type v, int) {                                \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                                 \
  }                                                                                                           \
  extern "C" type __tsan_atomic##bits##_exchange(volatile type* a, type v, int) {                             \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                       \
  }                                                                                                           \
  extern "C" type __tsan_atomic##bits##_fetch_add(volatile type* a, type v, int) {                            \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                                        \
  }                                                                                                           \
  extern "C" type __tsan_atomic##bits##_fetch_sub(volatile type* a, type v, int) {                            \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                                        \
  }                                                                                                           \
  extern "C" int __tsan_atomic##bits##_compare_exchange_strong(volatile type* a, type* c, type v, int, int) { \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                   \
  }                                                                                                           \
  extern "C" int __tsan_atomic##bits##_compare_exchange_weak(volatile type* a, type* c, type v, int, int) {   \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                   \
  }                                                                                                           \
  extern "C" type __tsan_atomic##bits##_compare_exchange_val(volatile type* a, type c, type v, int, int) {    \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                         \
    return c;                                                                                                 \
  }
WINFER_EMU_ATOMIC(8, unsigned char)
WINFER_EMU_ATOMIC(16, unsigned short)
WINFER_EMU_ATOMIC(32, unsigned int)
WINFER_EMU_ATOMIC(64, unsigned long long)
#undef WINFER_EMU_ATOMIC
extern "C" void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
extern "C" void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
#endif

// ---- runtime API -----------------------------------------------------------------------------------
using winfer_emu::record;

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorLaunchFailure: return "unspecified launch failure (emulator: see stderr)";
    case cudaErrorNotSupported: return "operation not supported";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = winfer_emu::last_error;
  winfer_emu::last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError() { return winfer_emu::last_error; }

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return record(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop || device != 0) return record(cudaErrorInvalidValue);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "winfer host emulator");
  prop->totalGlobalMem = winfer_emu::device_memory_bytes();
  prop->multiProcessorCount = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : record(cudaErrorInvalidValue); }

cudaError_t cudaGetDevice(int* device) {
  if (!device) return record(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (!ptr) return record(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  size_t free_bytes = 0, total_bytes = 0;
  (void)cudaMemGetInfo(&free_bytes, &total_bytes);
  if (bytes > free_bytes) return record(cudaErrorMemoryAllocation);  // also keeps the rounding from overflowing
  const size_t rounded = winfer_emu::rounded_allocation(bytes);
  void* p = std::aligned_alloc(winfer_emu::kMallocAlign, rounded);
  if (!p) return record(cudaErrorMemoryAllocation);
  std::memset(p, 0xFF, bytes);
  std::lock_guard<std::mutex> lock(winfer_emu::allocations_mutex);
  winfer_emu::allocations()[reinterpret_cast<uintptr_t>(p)] = bytes;
  winfer_emu::allocated_bytes += rounded;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return record(cudaErrorInvalidValue);
  *total_bytes = winfer_emu::device_memory_bytes();
  std::lock_guard<std::mutex> lock(winfer_emu::allocations_mutex);
  *free_bytes = *total_bytes - std::min(*total_bytes, winfer_emu::allocated_bytes);
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(winfer_emu::allocations_mutex);
    const auto it = winfer_emu::allocations().find(reinterpret_cast<uintptr_t>(ptr));
    if (it == winfer_emu::allocations().end()) return record(cudaErrorInvalidDevicePointer);
    winfer_emu::allocated_bytes -= winfer_emu::rounded_allocation(it->second);
    winfer_emu::allocations().erase(it);
  }
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (bytes == 0) return cudaSuccess;
  if (!dst || !src || !winfer_emu::copy_in_bounds(dst, src, bytes, kind)) return record(cudaErrorInvalidValue);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (!ptr || !winfer_emu::inside_allocation(ptr, bytes)) return record(cudaErrorInvalidValue);
  std::memset(ptr, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t) { return cudaMemset(ptr, value, bytes); }

struct EmuStream {};

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  if (!stream) return record(cudaErrorInvalidValue);
  *stream = new EmuStream;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}

// Work runs synchronously (a failed launch is reported by the launch itself), so there is never
// anything to wait for.
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

struct EmuEvent {
  bool recorded = false;
  std::chrono::steady_clock::time_point time;
};

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (!event) return record(cudaErrorInvalidValue);
  *event = new EmuEvent;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!event) return record(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}

// The stream's earlier work has finished (it ran synchronously): now is when the GPU would
// reach the event.
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  if (!event) return record(cudaErrorInvalidResourceHandle);
  event->recorded = true;
  event->time = std::chrono::steady_clock::now();
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return event ? cudaSuccess : record(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return record(cudaErrorInvalidValue);
  if (!start || !end || !start->recorded || !end->recorded) return record(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return cudaSuccess;
}
