#include "winfer/tensor.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>

#include "engine/src/core/huge_page_promotion.h"
#include "kernels/cpu/layout.h"

namespace winfer {

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kNCHW: return "NCHW";
    case Layout::kNHWC: return "NHWC";
    case Layout::kPlain: return "plain";
  }
  return "?";
}

const char* dtype_name(DType dtype) { return dtype == DType::kUInt8 ? "u8" : "float32"; }

size_t dtype_size(DType dtype) { return dtype == DType::kUInt8 ? 1 : sizeof(float); }

Tensor Tensor::allocate(const Shape& shape, Layout layout, DType dtype, bool huge_pages) {
  Tensor t = allocate_for_overwrite(shape, layout, dtype, huge_pages);
  std::memset(t.data_, 0, t.bytes());
  return t;
}

namespace {

constexpr size_t kHugePageBytes = size_t(2) << 20;

// WINFER_HUGE_PAGES=0 turns the 2 MiB pages off (read once per process): to measure what they
// change, or where a system's huge pages cost more than they save.
bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* env = std::getenv("WINFER_HUGE_PAGES");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return wanted;
}

// `bytes` in memory aligned to 2 MiB, freed by the returned deleter. On Linux a mapping of its
// own (zero-filled, nothing committed until touched), so that promote_to_huge_pages can move a
// copy over any 2 MiB of it and freeing it hands every page back; elsewhere the heap's.
struct AlignedToHugePage {
  void* data;
  std::function<void(void*)> release;
};
AlignedToHugePage allocate_aligned_to_huge_page(size_t bytes) {
#if defined(__linux__)
  const size_t mapped = (bytes + 4095) / 4096 * 4096;
  void* reserved = ::mmap(nullptr, mapped + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserved == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t at = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (at > base) ::munmap(reserved, at - base);  // the head and tail of the reservation
  if (base + kHugePageBytes > at) ::munmap(reinterpret_cast<void*>(at + mapped), base + kHugePageBytes - at);
  return {reinterpret_cast<void*>(at), [mapped](void* p) { ::munmap(p, mapped); }};
#else
  void* raw = nullptr;
  if (::posix_memalign(&raw, kHugePageBytes, bytes) != 0 || raw == nullptr) throw std::bad_alloc();
  return {raw, [](void* p) { std::free(p); }};
#endif
}

// A large block's pages in one call (MADV_POPULATE_WRITE, Linux 5.14) rather than a fault per
// 4 KiB page as the caller first writes them: a model's weights are most of what loading touches
// first (ResNet-18's weights read into one block: load 43 -> 38 ms). Only for memory whose every
// byte the caller writes right away (allocate_for_overwrite's contract, allocate's fill, a block
// weights are read into), so nothing is committed that would not be anyway; an older kernel
// refuses the advice and the first writes fault the pages in as before.
void populate(void* raw, size_t bytes) {
#if defined(__linux__)
  constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE, which older headers lack
  constexpr size_t kMinPopulate = size_t(256) << 10;
  if (bytes < kMinPopulate) return;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE) > 0 ? ::sysconf(_SC_PAGESIZE) : 4096);
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(raw) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(raw) + bytes) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, kPopulateWrite);  // advice: may fail
#else
  (void)raw, (void)bytes;
#endif
}

}  // namespace

Tensor Tensor::allocate_for_overwrite(const Shape& shape, Layout layout, DType dtype, bool huge_pages) {
  Tensor t;
  t.shape_ = shape;
  t.layout_ = layout;
  t.dtype_ = dtype;
  // Round up to the alignment (a vector load may read the rounding), and never ask for 0 bytes.
  size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  bytes = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (bytes == 0) bytes = kAlignment;
  const bool huge = huge_pages && bytes >= kHugePageBytes && huge_pages_wanted();
  void* raw = nullptr;
  std::function<void(void*)> release = [](void* p) { std::free(p); };
  if (huge) {
    AlignedToHugePage aligned = allocate_aligned_to_huge_page(bytes);
    raw = aligned.data;
    release = std::move(aligned.release);
  } else if (::posix_memalign(&raw, kAlignment, bytes) != 0 || raw == nullptr) {
    throw std::bad_alloc();
  }
  populate(raw, bytes);
  // The rounding past the last element is zeroed: no element, but a vector load may read it.
  const size_t used = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  std::memset(static_cast<unsigned char*>(raw) + used, 0, bytes - used);
  t.storage_ = std::shared_ptr<float>(static_cast<float*>(raw), [release](float* p) { release(p); });
  t.data_ = t.storage_.get();
  return t;
}

void Tensor::promote_to_huge_pages() const {
  if (storage_) winfer::promote_to_huge_pages(storage_, data_, bytes());
}

bool Tensor::huge_pages_enabled() { return huge_pages_wanted(); }

std::shared_ptr<void> Tensor::allocate_block(size_t bytes, bool commit_now) {
  bytes = std::max((bytes + kAlignment - 1) / kAlignment * kAlignment, kAlignment);
  AlignedToHugePage aligned = allocate_aligned_to_huge_page(bytes);
  if (commit_now) populate(aligned.data, bytes);
  return std::shared_ptr<void>(aligned.data, std::move(aligned.release));
}

Tensor Tensor::in_block(const std::shared_ptr<void>& block, void* at, const Shape& shape) {
  Tensor t;
  t.shape_ = shape;
  t.storage_ = std::shared_ptr<float>(block, static_cast<float*>(at));  // shares the block's ownership
  t.data_ = t.storage_.get();
  const size_t used = t.bytes();
  std::memset(static_cast<unsigned char*>(at) + used, 0, t.block_bytes() - used);
  return t;
}

size_t Tensor::block_bytes() const { return (bytes() + kAlignment - 1) / kAlignment * kAlignment; }

bool Tensor::move_into(const std::shared_ptr<void>& block, void* at) {
  if (!storage_ || storage_.use_count() != 1 || empty()) return false;
  const size_t used = bytes();
  std::memcpy(at, data_, used);
  std::memset(static_cast<unsigned char*>(at) + used, 0, block_bytes() - used);
  storage_ = std::shared_ptr<float>(block, static_cast<float*>(at));  // shares the block's ownership
  data_ = storage_.get();
  return true;
}

Tensor Tensor::view(float* data, const Shape& shape, Layout layout) {
  Tensor t;
  t.shape_ = shape;
  t.layout_ = layout;
  t.data_ = data;
  return t;
}

bool Tensor::repoint_view(float* data) {
  if (storage_) return false;
  data_ = data;
  return true;
}

Tensor Tensor::allocate_untouched(const Shape& shape) {
#if defined(__linux__)
  const size_t bytes = std::max<size_t>(static_cast<size_t>(shape.numel()) * sizeof(float), 1);
  void* raw = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  Tensor t;
  t.shape_ = shape;
  t.storage_ = std::shared_ptr<float>(static_cast<float*>(raw), [bytes](float* p) { ::munmap(p, bytes); });
  t.data_ = t.storage_.get();
  return t;
#else
  return allocate(shape);
#endif
}

Tensor Tensor::view(void* data, const Shape& shape, Layout layout, DType dtype) {
  Tensor t = view(static_cast<float*>(data), shape, layout);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::reshaped(const Shape& shape, Layout layout) const {
  Tensor t = *this;
  t.shape_ = shape;
  t.layout_ = layout;
  return t;
}

Tensor Tensor::to_layout(Layout layout) const {
  if (empty()) return Tensor();
  Tensor out = allocate(shape_, layout, dtype_);
  const bool four_d = shape_.rank() == 4;
  const bool transpose = four_d && (layout_ == Layout::kNHWC) != (layout == Layout::kNHWC);
  if (transpose && dtype_ == DType::kUInt8) {
    // u8 tensors are never user-facing; this byte loop serves tests and debugging.
    const int64_t n = shape_.n(), c = shape_.c(), hw = shape_.h() * shape_.w();
    const bool to_nhwc = layout == Layout::kNHWC;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p) {
          const int64_t nchw = (i * c + ch) * hw + p, nhwc = (i * hw + p) * c + ch;
          out.u8()[to_nhwc ? nhwc : nchw] = u8()[to_nhwc ? nchw : nhwc];
        }
  } else if (four_d && layout_ == Layout::kNCHW && layout == Layout::kNHWC) {
    nchw_to_nhwc(shape_.n(), shape_.c(), shape_.h(), shape_.w(), data_, out.data(), 1);
  } else if (four_d && layout_ == Layout::kNHWC && layout != Layout::kNHWC) {
    nhwc_to_nchw(shape_.n(), shape_.c(), shape_.h(), shape_.w(), data_, out.data(), 1);
  } else {
    std::memcpy(out.data(), data_, bytes());
  }
  return out;
}

}  // namespace winfer
