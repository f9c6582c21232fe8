// The memory plan of a session, shared by the CPU and the CUDA backend: one buffer per graph
// tensor (same index) and one per workspace, their lifetimes over the execution steps, the
// in-place aliases the ops allow, and the planner's offsets written into a MemoryReport.
// Backends differ only in the workspace each kernel asks for and in the arena's alignment.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/src/graph.h"
#include "engine/src/planner.h"
#include "winfer/model.h"
#include "winfer/session.h"

namespace winfer {

// What the kernels of a session read and need, per node (execution order).
struct KernelMemory {
  size_t workspace_bytes = 0;
  size_t owned_weight_bytes = 0;           // allocated for this session's kernels (packed weights)
  size_t shared_weight_bytes = 0;          // read from the model's own tensors
  int in_place_input = -1;                 // Kernel::in_place_input()
  std::vector<bool> strided_outputs = {};  // per output: Kernel::supports_output_pixel_stride(output)
};

struct SessionPlan {
  MemoryReport report;
  std::vector<int> workspace_of;  // per node: index of its workspace buffer in report.buffers, or -1
  // Per graph tensor: the concat output it is a channel slice of (its producer writes it there
  // with that tensor's pixel stride, and the concat copies nothing), or -1.
  std::vector<int> slice_of;
};

// Lifetimes, in-place aliases, concat slices (when `concat_alias`) and workspaces -> offsets
// (multiples of `alignment`; a slice's offset is its concat output's plus its channel offset).
Result<SessionPlan> plan_session_memory(const Model& model, const std::vector<Shape>& shapes,
                                        const std::vector<KernelMemory>& kernels, size_t alignment,
                                        bool concat_alias = false);

// Arena byte ranges [begin, end) not alive at each step: what poisoning overwrites.
std::vector<std::vector<std::pair<size_t, size_t>>> dead_ranges_per_step(const MemoryReport& report);

}  // namespace winfer
