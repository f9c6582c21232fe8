// What the engine and the peak probes need to know about the CPUs this process runs on, and a
// way to start threads all at once: the default thread count (engine/src/session.cpp) and the
// FMA and VNNI peak probes (fma_probe.cpp, vnni_probe.cpp) share these, so they count CPUs the
// same way.
#pragma once

#include <functional>

namespace winfer::cpu {

// CPUs the calling thread may run on (sched_getaffinity: taskset, cgroup cpusets and a
// container's CPU list count; kernels configured for more than 1024 CPUs too); the online CPUs
// when the affinity cannot be read. At least 1.
int affinity_cpu_count();

// CPU time of the calling thread, in seconds (CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_seconds();

// body(t) for every t in [0, threads), each on a thread of its own, all at once (the caller runs
// t = 0; std::thread, not the kernels' pool, whose tasks may run one after another on one
// thread). Returns when every body has returned.
void run_on_threads_at_once(int threads, const std::function<void(int)>& body);

}  // namespace winfer::cpu
