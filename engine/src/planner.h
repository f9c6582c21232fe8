// The memory planner: places every buffer of a run (activation tensors, convolution
// workspaces) at an offset in one arena so that buffers alive at the same time never share a
// byte, and the arena stays close to the least memory any placement could use.
//
// It knows nothing about graphs or kernels: a buffer is a size and a lifetime over execution
// steps (the Session builds the list from its graph and kernels), which keeps the planner
// testable on its own. See docs/MEMORY.md for the algorithm and the numbers it reports.
#pragma once

#include <cstddef>
#include <vector>

#include "winfer/status.h"

namespace winfer {

struct PlanBuffer {
  size_t bytes = 0;
  // Alive from the start of step `first_step` to the end of step `last_step` (inclusive, and
  // 0 <= first_step <= last_step): written at first_step, last read at last_step.
  int first_step = 0;
  int last_step = 0;
  // In place: this buffer reuses the storage of buffer `alias_of`, which must end at the step
  // where this one starts (the step's kernel reads its input and writes its output in the same
  // bytes). Chains (relu in place on an add in place on ...) are allowed; one buffer may be
  // taken over by at most one other. The shared storage is as large as the largest buffer
  // using it. -1: its own storage.
  int alias_of = -1;
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per buffer, multiples of the alignment
  size_t arena_bytes = 0;       // a multiple of the alignment; every buffer ends within it
  // Every buffer in its own allocation, each rounded up to the alignment (no reuse at all).
  size_t sum_bytes = 0;
  // max over steps of the bytes alive at that step (storage shared in place counted once,
  // sizes rounded up to the alignment): no placement of these lifetimes can use less.
  size_t lower_bound_bytes = 0;
  int steps = 0;                   // 1 + the largest last_step (0 without buffers)
  std::vector<size_t> live_bytes;  // per step, counted as for lower_bound_bytes
};

// Greedy placement with best fit: storage blocks (a buffer with every buffer aliasing it) are
// placed one by one, each in the smallest gap left between already placed blocks whose
// lifetimes overlap its own, or above them when no gap fits. The order is largest first
// (greedy by size); greedy by breadth and deterministic perturbations of the size order are
// tried too, and the smallest arena wins. The result is deterministic. `alignment` must be a
// power of two. Fails on an invalid buffer list (bad lifetimes or aliases), naming the buffer.
Result<MemoryPlan> plan_memory(const std::vector<PlanBuffer>& buffers, size_t alignment);

}  // namespace winfer
