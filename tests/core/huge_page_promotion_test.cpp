// Memory moved into 2 MiB pages by the background thread (engine/src/core/huge_page_promotion.h):
// the same addresses and contents before, during and after; ranges with pages handed back left
// alone; an owner gone before its turn skipped.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "engine/src/core/huge_page_promotion.h"
#include "winfer/tensor.h"

using namespace winfer;

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// Whether this process gets 2 MiB pages at all: Linux with transparent huge pages for the asking
// ("always" or "madvise") and WINFER_HUGE_PAGES not 0.
bool huge_pages_expected() {
#if defined(__linux__)
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(f, modes);
  const bool thp = modes.find("[always]") != std::string::npos || modes.find("[madvise]") != std::string::npos;
  if (!thp) MESSAGE("transparent huge pages are off here (", modes, "): only contents are checked");
  return thp && Tensor::huge_pages_enabled();
#else
  MESSAGE("not Linux: only contents are checked");
  return false;
#endif
}

// Bytes of 2 MiB pages (AnonHugePages in /proc/self/smaps) in the mappings inside [begin, end).
size_t huge_page_bytes_in(const void* begin_ptr, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(begin_ptr), end = begin + bytes;
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  size_t total = 0;
  while (std::getline(smaps, line)) {
    uintptr_t from = 0, to = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> from >> dash >> to && dash == '-') {
      inside = from >= begin && to <= end;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) total += std::stoull(line.substr(14)) * 1024;
  }
  return total;
}

float pattern(size_t i) { return static_cast<float>(i % 1000003) * 0.5f + 1.f; }

// A block (Tensor::allocate_block, aligned to 2 MiB) of `bytes` filled with pattern().
std::shared_ptr<void> filled_block(size_t bytes) {
  std::shared_ptr<void> block = Tensor::allocate_block(bytes);
  auto* f = static_cast<float*>(block.get());
  for (size_t i = 0; i < bytes / sizeof(float); ++i) f[i] = pattern(i);
  return block;
}

size_t mismatches(const void* block, size_t bytes) {
  const auto* f = static_cast<const float*>(block);
  size_t bad = 0;
  for (size_t i = 0; i < bytes / sizeof(float); ++i) bad += f[i] != pattern(i);
  return bad;
}

}  // namespace

TEST_CASE("promote_to_huge_pages: a block's whole 2 MiB ranges in 2 MiB pages, same addresses and contents") {
  const size_t bytes = 3 * kHugePage + 100 * 1024;  // three whole ranges and a tail that stays
  const std::shared_ptr<void> block = filled_block(bytes);
  REQUIRE(reinterpret_cast<uintptr_t>(block.get()) % kHugePage == 0);
  const bool expect_huge = huge_pages_expected();
  CHECK(huge_page_bytes_in(block.get(), bytes) == 0);  // 4 KiB pages until promoted

  promote_to_huge_pages(block, block.get(), bytes);
  wait_for_huge_page_promotion();

  CHECK(mismatches(block.get(), bytes) == 0);
  if (expect_huge) CHECK(huge_page_bytes_in(block.get(), bytes) == 3 * kHugePage);
}

TEST_CASE("promote_to_huge_pages: threads reading the block meanwhile always see its contents") {
  const size_t bytes = 8 * kHugePage;
  const std::shared_ptr<void> block = filled_block(bytes);
  std::atomic<bool> done{false};
  std::atomic<size_t> passes{0}, bad{0};
  std::thread reader([&] {
    while (!done.load() || passes.load() == 0) {
      bad += mismatches(block.get(), bytes);
      ++passes;
    }
  });
  promote_to_huge_pages(block, block.get(), bytes);
  wait_for_huge_page_promotion();
  done = true;
  reader.join();
  CHECK(passes.load() > 0);
  CHECK(bad.load() == 0);
  CHECK(mismatches(block.get(), bytes) == 0);
  if (huge_pages_expected()) CHECK(huge_page_bytes_in(block.get(), bytes) == bytes);
}

#if defined(__linux__)
TEST_CASE("promote_to_huge_pages: a range with a page handed back stays in 4 KiB pages, the page still free") {
  const size_t bytes = 2 * kHugePage;
  const std::shared_ptr<void> block = filled_block(bytes);
  char* hole = static_cast<char*>(block.get()) + 64 * 4096;  // in the first range
  REQUIRE(::madvise(hole, 4096, MADV_DONTNEED) == 0);        // reads as zeros from now on

  promote_to_huge_pages(block, block.get(), bytes);
  wait_for_huge_page_promotion();

  unsigned char resident = 1;
  REQUIRE(::mincore(hole, 4096, &resident) == 0);
  CHECK((resident & 1) == 0);
  const auto* f = static_cast<const float*>(block.get());
  size_t bad = 0;
  for (size_t i = 0; i < bytes / sizeof(float); ++i) {
    const bool in_hole = i >= 64 * 1024 && i < 65 * 1024;
    if (!in_hole) bad += f[i] != pattern(i);
  }
  CHECK(bad == 0);
  if (huge_pages_expected()) {
    CHECK(huge_page_bytes_in(block.get(), kHugePage) == 0);
    CHECK(huge_page_bytes_in(static_cast<char*>(block.get()) + kHugePage, kHugePage) == kHugePage);
  }
}
#endif

TEST_CASE("promote_to_huge_pages: an owner gone before its turn is skipped, a tensor promotes its own storage") {
  // The first block keeps the thread busy while the second one's owner goes away.
  std::shared_ptr<void> busy = filled_block(8 * kHugePage);
  std::shared_ptr<void> gone = filled_block(4 * kHugePage);
  promote_to_huge_pages(busy, busy.get(), 8 * kHugePage);
  promote_to_huge_pages(gone, gone.get(), 4 * kHugePage);
  gone.reset();  // unmapped: the thread must not touch it
  Tensor packed = Tensor::allocate(Shape{static_cast<int64_t>(kHugePage / sizeof(float)) + 7}, Layout::kPlain,
                                   DType::kFloat32, /*huge_pages=*/true);
  if (Tensor::huge_pages_enabled()) CHECK(reinterpret_cast<uintptr_t>(packed.data()) % kHugePage == 0);
  for (int64_t i = 0; i < packed.numel(); ++i) packed.data()[i] = pattern(static_cast<size_t>(i));
  packed.promote_to_huge_pages();
  wait_for_huge_page_promotion();
  CHECK(mismatches(busy.get(), 8 * kHugePage) == 0);
  CHECK(mismatches(packed.data(), static_cast<size_t>(packed.numel()) * sizeof(float)) == 0);
  if (huge_pages_expected()) {
    CHECK(huge_page_bytes_in(busy.get(), 8 * kHugePage) == 8 * kHugePage);
    CHECK(huge_page_bytes_in(packed.data(), packed.bytes()) == kHugePage);
  }
}

#if defined(__linux__)
TEST_CASE("promote_to_huge_pages: a child forked while the work goes on promotes its own blocks and exits") {
  std::shared_ptr<void> busy = filled_block(16 * kHugePage);
  promote_to_huge_pages(busy, busy.get(), 16 * kHugePage);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::alarm(60);  // a deadlock ends the child (reported below), never the suite
    std::shared_ptr<void> own = filled_block(2 * kHugePage);
    promote_to_huge_pages(own, own.get(), 2 * kHugePage);
    wait_for_huge_page_promotion();
    const bool intact = mismatches(own.get(), 2 * kHugePage) == 0 && mismatches(busy.get(), 16 * kHugePage) == 0;
    const bool huge = !huge_pages_expected() || huge_page_bytes_in(own.get(), 2 * kHugePage) == 2 * kHugePage;
    own.reset();
    busy.reset();
    std::exit(intact && huge ? 0 : 3);  // static destructors run: the promoter's must not wait on the parent's thread
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  wait_for_huge_page_promotion();
  CHECK(mismatches(busy.get(), 16 * kHugePage) == 0);
}
#endif
