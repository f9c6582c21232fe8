#include "kernels/cuda/fault_injection.h"

#include <atomic>

namespace winfer {
namespace cuda {
namespace testing {
namespace {

std::atomic<size_t> allocation_limit{0};
std::atomic<int64_t> launches_left{-1};

}  // namespace

void fail_allocations_above(size_t bytes) { allocation_limit.store(bytes); }
void fail_launches_after(int64_t launches) { launches_left.store(launches); }
void clear_faults() {
  allocation_limit.store(0);
  launches_left.store(-1);
}

bool allocation_fails(size_t bytes) {
  const size_t limit = allocation_limit.load(std::memory_order_relaxed);
  return limit != 0 && bytes > limit;
}

bool launch_fails() {
  if (launches_left.load(std::memory_order_relaxed) < 0) return false;
  // Count down to 0, then stay there: every later launch fails.
  int64_t left = launches_left.load();
  while (left > 0 && !launches_left.compare_exchange_weak(left, left - 1)) {
  }
  return left == 0;
}

}  // namespace testing
}  // namespace cuda
}  // namespace winfer
