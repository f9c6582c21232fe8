#include "engine/src/core/huge_page_promotion.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <new>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#endif

#include "winfer/tensor.h"

namespace winfer {
namespace {

constexpr uintptr_t kPromotedPageBytes = uintptr_t(2) << 20;

struct Range {
  std::weak_ptr<const void> owner;
  uintptr_t begin, end;
};

#if defined(__linux__)
// Whether every 4 KiB page of the 2 MiB range at `at` is resident.
bool fully_resident(uintptr_t at) {
  static const long page = ::sysconf(_SC_PAGESIZE) > 0 ? ::sysconf(_SC_PAGESIZE) : 4096;
  std::vector<unsigned char> resident(kPromotedPageBytes / static_cast<uintptr_t>(page));
  if (::mincore(reinterpret_cast<void*>(at), kPromotedPageBytes, resident.data()) != 0) return false;
  for (unsigned char r : resident) {
    if ((r & 1) == 0) return false;
  }
  return true;
}

// Transparent huge pages available to MADV_HUGEPAGE regions ("always" or "madvise").
bool transparent_huge_pages_on() {
  static const bool on = [] {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string modes;
    std::getline(f, modes);
    return modes.find("[always]") != std::string::npos || modes.find("[madvise]") != std::string::npos;
  }();
  return on;
}

// The 2 MiB at `at` replaced by a copy in one 2 MiB page: the copy is made in a mapping of its
// own (its page faulted in there, where a fault takes no lock the caller's threads wait on,
// unlike MADV_COLLAPSE, which holds the process's mmap lock for writing while it copies: the
// first run after a load waited 250-550 ms for ResNet-18's), then moved over the old pages with
// one mremap. Only for memory nobody writes any more: a write between the copy and the move
// would be lost.
void replace_with_huge_page(uintptr_t at) {
  void* reserved = ::mmap(nullptr, 2 * kPromotedPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserved == MAP_FAILED) return;
  const auto base = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t fresh = (base + kPromotedPageBytes - 1) / kPromotedPageBytes * kPromotedPageBytes;
  if (fresh > base) ::munmap(reserved, fresh - base);
  if (base + 2 * kPromotedPageBytes > fresh + kPromotedPageBytes)
    ::munmap(reinterpret_cast<void*>(fresh + kPromotedPageBytes),
             base + 2 * kPromotedPageBytes - fresh - kPromotedPageBytes);
  void* copy = reinterpret_cast<void*>(fresh);
  ::madvise(copy, kPromotedPageBytes, MADV_HUGEPAGE);  // advice: may fail (then 4 KiB pages, same contents)
  std::memcpy(copy, reinterpret_cast<const void*>(at), kPromotedPageBytes);
  if (::mremap(copy, kPromotedPageBytes, kPromotedPageBytes, MREMAP_MAYMOVE | MREMAP_FIXED,
               reinterpret_cast<void*>(at)) == MAP_FAILED)
    ::munmap(copy, kPromotedPageBytes);
}
#endif

class Promoter;
Promoter& promoter();

// One background thread at a time, started when a range is queued and gone once none is left
// (no thread lingers in a process that loaded its model long ago); joined when the library is
// unloaded or the process exits, so its code never runs unmapped.
class Promoter {
 public:
  Promoter() {
#if defined(__linux__)
    // A process forked while the thread exists has no such thread: the child starts afresh (a
    // join of the parent's thread at its exit would wait on nothing). The mutex is held across
    // the fork so that the child's copy is never left locked by a thread it lacks.
    ::pthread_atfork([] { promoter().mutex_.lock(); }, [] { promoter().mutex_.unlock(); },
                     [] { promoter().after_fork_in_child(); });
#endif
  }

  ~Promoter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    if (worker_.joinable()) worker_.join();
  }

  void add(Range range) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    queue_.push_back(std::move(range));
    if (running_) return;
    if (worker_.joinable()) worker_.join();  // finished: it cleared running_ on its way out
    running_ = true;
    worker_ = std::thread([this] { work(); });
  }

  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return !running_; });
  }

 private:
  friend Promoter& promoter();

  void after_fork_in_child() {
    new (&worker_) std::thread();  // the parent's thread handle, not destroyed: nothing to join here
    running_ = false;
    queue_.clear();  // the parent's work; the child's own loads queue theirs
    mutex_.unlock();
  }

  void work() {
#if defined(__linux__)
    // The lowest priority: on a machine whose cores all run inference it takes only idle time.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);  // may fail: then as any thread
#endif
    for (;;) {
      Range range;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_ || queue_.empty()) {
          running_ = false;
          idle_.notify_all();
          return;
        }
        range = std::move(queue_.front());
        queue_.pop_front();
      }
      promote(range);
    }
  }

  bool stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stop_;
  }

  void promote(const Range& range) {
#if defined(__linux__)
    for (uintptr_t at = (range.begin + kPromotedPageBytes - 1) / kPromotedPageBytes * kPromotedPageBytes;
         at + kPromotedPageBytes <= range.end; at += kPromotedPageBytes) {
      // Holding the owner for one range at a time: its memory cannot be freed (and reused)
      // under the copy, and an owner released meanwhile ends the work.
      const std::shared_ptr<const void> alive = range.owner.lock();
      if (!alive || stopping()) return;
      if (fully_resident(at)) replace_with_huge_page(at);
    }
#else
    (void)range;
#endif
  }

  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<Range> queue_;
  std::thread worker_;
  bool running_ = false, stop_ = false;
};

Promoter& promoter() {
  static Promoter instance;
  return instance;
}

}  // namespace

void promote_to_huge_pages(const std::shared_ptr<const void>& owner, const void* begin, size_t bytes) {
#if defined(__linux__)
  if (!Tensor::huge_pages_enabled() || !transparent_huge_pages_on() || bytes < kPromotedPageBytes) return;
  const auto at = reinterpret_cast<uintptr_t>(begin);
  promoter().add(Range{owner, at, at + bytes});
#else
  (void)owner, (void)begin, (void)bytes;  // 4 KiB pages stay
#endif
}

void wait_for_huge_page_promotion() { promoter().wait(); }

}  // namespace winfer
