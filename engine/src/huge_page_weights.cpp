#include "engine/src/huge_page_weights.h"

#include <memory>
#if defined(__GLIBC__)  // defined by the standard headers above
#include <malloc.h>
#endif

#include "engine/src/op.h"

namespace winfer {
namespace {

#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
size_t free_heap_bytes() { return ::mallinfo2().fordblks; }
#else
size_t free_heap_bytes() { return 0; }
#endif

size_t trim_heap() {
#if defined(__GLIBC__)
  ::malloc_trim(0);
#endif
  return free_heap_bytes();
}

}  // namespace

FreeHeapPages::FreeHeapPages() : trimmed_at_(free_heap_bytes()) {}

void FreeHeapPages::layer_packed() {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
  if (free_heap_bytes() >= trimmed_at_ + kTrimAfterFreeBytes) trimmed_at_ = trim_heap();
#else
  trimmed_at_ = trim_heap();
#endif
}

void FreeHeapPages::loader_gone() { trim_heap(); }

void gather_weights_in_huge_pages(const std::vector<Tensor*>& weights) {
  if (!Tensor::huge_pages_enabled()) return;
  constexpr size_t kHugePageBytes = size_t(2) << 20;
  std::vector<Tensor*> small;
  size_t bytes = 0, all_bytes = 0;
  for (Tensor* t : weights) {
    all_bytes += t->bytes();
    if (t->empty() || t->bytes() >= kOwnPagesWeightBytes) continue;
    small.push_back(t);
    bytes += t->block_bytes();
  }
  if (all_bytes < kGatherFromWeightBytes || bytes < kHugePageBytes) return;
  const std::shared_ptr<void> block = Tensor::allocate_block(bytes);
  char* at = static_cast<char*>(block.get());
  FreeHeapPages heap;
  for (Tensor* t : small) {
    if (!t->move_into(block, at)) continue;  // shared storage: stays where it is
    at += t->block_bytes();
    heap.layer_packed();
  }
}

}  // namespace winfer
