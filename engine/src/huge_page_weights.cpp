#include "engine/src/huge_page_weights.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)  // defined by the standard headers above
#include <malloc.h>
#endif

#include "engine/src/core/huge_page_promotion.h"
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

thread_local WeightBlock* t_read_into = nullptr;

size_t rounded_bytes(const Shape& shape) {
  return (static_cast<size_t>(shape.numel()) * sizeof(float) + Tensor::kAlignment - 1) / Tensor::kAlignment *
         Tensor::kAlignment;
}

}  // namespace

// Committed at once: the load reads every tensor into it next (a fault per 4 KiB page otherwise:
// ResNet-18's load 43 -> 38 ms).
WeightBlock::WeightBlock(size_t capacity)
    : block_(Tensor::allocate_block(capacity, /*commit_now=*/true)), capacity_(capacity) {}

Tensor WeightBlock::take(const Shape& shape) {
  const size_t bytes = rounded_bytes(shape);
  if (static_cast<size_t>(shape.numel()) * sizeof(float) > kOwnPagesAtMostBytes || used_ + bytes > capacity_)
    return Tensor();
  Tensor t = Tensor::in_block(block_, static_cast<char*>(block_.get()) + used_, shape);
  used_ += bytes;
  return t;
}

bool WeightBlock::holds(const void* p) const {
  const auto* base = static_cast<const char*>(block_.get());
  const auto* at = static_cast<const char*>(p);
  return at >= base && at < base + capacity_;
}

void WeightBlock::release_unused() {
#if defined(__linux__)
  constexpr uintptr_t kPage = 4096;
  const auto base = reinterpret_cast<uintptr_t>(block_.get());
  const uintptr_t begin = (base + used_ + kPage - 1) / kPage * kPage, end = (base + capacity_) / kPage * kPage;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice: may fail
#endif
}

void WeightBlock::release_holes(std::vector<const Tensor*> live) {
#if defined(__linux__)
  constexpr uintptr_t kPage = 4096;
  live.erase(std::remove_if(live.begin(), live.end(), [&](const Tensor* t) { return !holds(t->data()); }), live.end());
  std::sort(live.begin(), live.end(), [](const Tensor* a, const Tensor* b) { return a->data() < b->data(); });
  const auto base = reinterpret_cast<uintptr_t>(block_.get());
  uintptr_t free_from = base;  // bytes before it are in use
  const auto release = [&](uintptr_t from, uintptr_t to) {
    const uintptr_t begin = (from + kPage - 1) / kPage * kPage, end = to / kPage * kPage;
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice: may fail
  };
  for (const Tensor* t : live) {
    const auto at = reinterpret_cast<uintptr_t>(t->data());
    if (at > free_from) release(free_from, at);
    free_from = std::max(free_from, at + t->block_bytes());
  }
  release(free_from, base + used_);
#else
  (void)live;
#endif
}

void WeightBlock::promote() const { promote_to_huge_pages(block_, block_.get(), used_); }

ReadWeightsInto::ReadWeightsInto(WeightBlock* block) : previous_(t_read_into) { t_read_into = block; }
ReadWeightsInto::~ReadWeightsInto() { t_read_into = previous_; }

Tensor allocate_weight(const Shape& shape) {
  if (t_read_into != nullptr) {
    Tensor t = t_read_into->take(shape);
    if (!t.empty()) return t;
  }
  return Tensor::allocate_for_overwrite(shape);
}

FreeHeapPages::FreeHeapPages() : trimmed_at_(free_heap_bytes()) {}

void FreeHeapPages::layer_packed() {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
  if (free_heap_bytes() >= trimmed_at_ + kTrimAfterFreeBytes) trimmed_at_ = trim_heap();
#else
  trimmed_at_ = trim_heap();
#endif
}

void FreeHeapPages::loader_gone() { trim_heap(); }

void gather_weights_in_huge_pages(const std::vector<Tensor*>& weights, const WeightBlock* read_into,
                                  size_t also_read_bytes) {
  if (!Tensor::huge_pages_enabled()) return;
  constexpr size_t kHugePageBytes = size_t(2) << 20;
  std::vector<Tensor*> small;
  size_t bytes = 0, all_bytes = 0;
  for (Tensor* t : weights) {
    all_bytes += t->bytes();
    if (t->empty() || t->bytes() >= kOwnPagesWeightBytes) continue;
    if (read_into != nullptr && read_into->holds(t->data())) continue;
    small.push_back(t);
    bytes += t->block_bytes();
  }
  if (all_bytes + also_read_bytes < kGatherFromWeightBytes || bytes < kHugePageBytes) return;
  const std::shared_ptr<void> block = Tensor::allocate_block(bytes);
  char* at = static_cast<char*>(block.get());
  FreeHeapPages heap;
  for (Tensor* t : small) {
    if (!t->move_into(block, at)) continue;  // shared storage: stays where it is
    at += t->block_bytes();
    heap.layer_packed();
  }
  promote_to_huge_pages(block, block.get(), static_cast<size_t>(at - static_cast<char*>(block.get())));
}

}  // namespace winfer
