// Memory a model or session keeps for its whole life (weights, winograd's transformed weights)
// moved into 2 MiB pages after it was filled, by a background thread, instead of being faulted
// in as 2 MiB pages while a load fills it.
//
// Why after: on a VM whose host takes back the guest's free memory (free page reporting hands
// the host every free 2 MiB block a few seconds after it is freed), a fresh 2 MiB page costs
// ~10 ms per MiB to fault in (the host backs it 4 KiB at a time), where 4 KiB pages come from
// memory the guest still holds: ResNet-18's load (44.6 MiB of weights) took 400-700 ms with its
// weights faulted in as 2 MiB pages, 37 ms in 4 KiB pages (docs/PERFORMANCE.md, session 43).
// Collapsing them later (MADV_COLLAPSE, Linux 6.1) pays the same on a thread of its own, while
// the caller already runs; on bare metal it costs ~0.3 ms per MiB either way.
#pragma once

#include <cstddef>
#include <memory>

namespace winfer {

// Queues [begin, begin + bytes) of the memory `owner` keeps alive for a background thread to
// move into 2 MiB pages, one 2 MiB range at a time: the whole ranges inside it whose 4 KiB pages
// are all resident (a range with pages handed back, a hole, stays as it is: collapsing it would
// commit them again). Contents and addresses stay; a thread reading the range meanwhile waits
// for it. Stops at `owner`'s end; does nothing where huge pages are off (WINFER_HUGE_PAGES=0,
// Tensor::huge_pages_enabled) or unknown (not Linux). On a kernel without MADV_COLLAPSE the range
// is marked for khugepaged (MADV_HUGEPAGE), which collapses it in its own time.
void promote_to_huge_pages(const std::shared_ptr<const void>& owner, const void* begin, size_t bytes);

// Blocks until every queued range was handled (tests; a benchmark that wants the steady state).
void wait_for_huge_page_promotion();

}  // namespace winfer
