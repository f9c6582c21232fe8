// Memory a model or session keeps for its whole life (weights, winograd's transformed weights)
// moved into 2 MiB pages after it was filled, by a background thread, instead of being faulted
// in as 2 MiB pages while a load fills it.
//
// Why after: on a VM whose host takes back the guest's free memory (free page reporting hands
// the host every free 2 MiB block a few seconds after it is freed), a fresh 2 MiB page costs
// ~10 ms per MiB to fault in (the host backs it 4 KiB at a time), where 4 KiB pages come from
// memory the guest still holds: ResNet-18's load (44.6 MiB of weights) took 400-700 ms with its
// weights faulted in as 2 MiB pages, 37 ms in 4 KiB pages (docs/PERFORMANCE.md, session 43).
// Moving them later pays the same on a thread of its own, while the caller already runs; where
// free 2 MiB pages are at hand (just freed here, or on bare metal) it costs ~0.3 ms per MiB.
#pragma once

#include <cstddef>
#include <memory>

namespace winfer {

// Queues [begin, begin + bytes) of the memory `owner` keeps alive for a background thread to
// move into 2 MiB pages, one 2 MiB range at a time: the whole ranges inside it whose 4 KiB pages
// are all resident (a range with pages handed back, a hole, stays as it is: moving it would
// commit them again), each copied into a 2 MiB page of a mapping of its own and moved over the
// old pages with mremap. Contents and addresses stay; a thread reading the range meanwhile waits
// at most for the page-table swap. Only for memory nobody writes any more (a write between the
// copy and the swap would be lost) and that lies in mappings of its own (Tensor::allocate_block,
// Tensor::allocate with huge_pages). Stops at `owner`'s end; does nothing where huge pages are off
// (WINFER_HUGE_PAGES=0, Tensor::huge_pages_enabled; transparent huge pages "never") or unknown
// (not Linux).
void promote_to_huge_pages(const std::shared_ptr<const void>& owner, const void* begin, size_t bytes);

// Blocks until every queued range was handled (tests; a benchmark that wants the steady state;
// a memory measurement whose baseline must not hold a model just released, process_memory.cpp).
void wait_for_huge_page_promotion();

}  // namespace winfer
