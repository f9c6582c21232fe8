// How far apart two CPUs are: the round trip of one cache line written in turn by a thread on
// each (CPU 0 and CPU 1 unless given), in nanoseconds. On this VM it reads ~55 ns in most minutes
// and ~340 ns in others, when the hypervisor has put the two vCPUs on cores of different
// last-level caches; in those minutes every parallel layer that reads rows the other thread wrote
// is slower (MobileNetV2 at batch 4 on 2 threads, the whole batch at once: 19.8 ms instead of
// 14.6), while runs side by side (SessionOptions::images_per_run) are not
// (docs/PERFORMANCE.md, session 29). Run it next to a benchmark to say which minutes it had.
//
//   bench/tools/core_pingpong.sh [CPU_A CPU_B] [ROUND_TRIPS]
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

alignas(64) std::atomic<long> g_turn{0};

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int a = argc > 2 ? std::atoi(argv[1]) : 0, b = argc > 2 ? std::atoi(argv[2]) : 1;
  const long trips = argc > 3 ? std::atol(argv[3]) : (argc == 2 ? std::atol(argv[1]) : 1000000);
  if (trips < 1) {
    std::fprintf(stderr, "core_pingpong: ROUND_TRIPS must be >= 1\n");
    return 2;
  }
  bool pinned_b = true;
  std::thread other([&] {
    pinned_b = pin_to(b);
    for (long i = 1; i < 2 * trips; i += 2) {
      while (g_turn.load(std::memory_order_acquire) != i) {
      }
      g_turn.store(i + 1, std::memory_order_release);
    }
  });
  if (!pin_to(a)) {
    std::fprintf(stderr, "core_pingpong: cannot run on CPU %d\n", a);
    other.detach();
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < 2 * trips; i += 2) {
    g_turn.store(i + 1, std::memory_order_release);
    while (g_turn.load(std::memory_order_acquire) != i + 2) {
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  other.join();
  if (!pinned_b) {
    std::fprintf(stderr, "core_pingpong: cannot run on CPU %d\n", b);
    return 1;
  }
  std::printf("CPU %d <-> CPU %d: %.1f ns per round trip of a cache line (%ld trips)\n", a, b, ns / double(trips),
              trips);
  return 0;
}
