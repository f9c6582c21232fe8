#include "kernels/cpu/cpu_threads.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <thread>
#include <vector>

namespace winfer::cpu {

int affinity_cpu_count() {
  // A cpu_set_t holds 1024 CPUs; a kernel configured for more refuses it (EINVAL), so grow.
  for (size_t cpus = CPU_SETSIZE; cpus <= (size_t{1} << 20); cpus *= 8) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == nullptr) break;
    const size_t bytes = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(bytes, set);
    const bool ok = sched_getaffinity(0, bytes, set) == 0;
    const int count = ok ? CPU_COUNT_S(bytes, set) : 0;
    CPU_FREE(set);
    if (ok) return count > 0 ? count : 1;
    if (errno != EINVAL) break;
  }
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(std::min<long>(online, 1 << 20)) : 1;
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void run_on_threads_at_once(int threads, const std::function<void(int)>& body) {
  std::vector<std::thread> others;
  for (int t = 1; t < threads; ++t) others.emplace_back(body, t);
  body(0);
  for (std::thread& other : others) other.join();
}

}  // namespace winfer::cpu
