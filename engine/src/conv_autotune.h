// conv_algorithm "auto" (CPU): per convolution layer, the fastest algorithm that keeps the
// session within SessionOptions::memory_budget.
//
// Two parts, tested separately:
//  * select_conv_algorithms(): the choice itself, from each layer's candidates (time, workspace,
//    packed weights) and a function giving the session's bytes for a choice. No timing, no
//    graph: deterministic, so the budget logic is tested with made-up numbers.
//  * autotune_conv_layers(): builds the candidates of a real session (timing each supported
//    algorithm on the layer's shape, with the grouped convolution it absorbed where its kernel
//    runs a pair, or reading the time from the cache file), plans the memory of each choice with
//    the session's planner, and calls select_conv_algorithms().
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "engine/src/session_plan.h"
#include "winfer/model.h"
#include "winfer/session.h"

namespace winfer {

class ConvAlgorithm;

// One layer to choose for: its name and the algorithms that support it (registry order).
struct ConvLayerCandidates {
  std::string layer;
  std::vector<ConvCandidate> candidates;  // non-empty
};

struct ConvSelection {
  std::vector<int> choice;  // per layer: index into its candidates
  size_t session_bytes = 0;
  std::vector<std::string> rules, reasons;  // per layer (see ConvChoice)
};

// Bytes the session would allocate with `choice` (index per layer into its candidates).
using SessionBytesFn = std::function<size_t(const std::vector<int>& choice)>;

// Every layer starts at its fastest candidate (ties: the smaller workspace + weights, then
// registry order). While the session is over `budget` (0 = none), the layer switch that costs
// the fewest milliseconds per byte of the session saved is made (switches that save nothing
// at the session's peak are taken only when nothing else is left); then layers are moved back
// to faster candidates, largest gain first, wherever the budget still holds. Fails with
// kOutOfMemory, naming the smallest reachable size, when no choice fits.
Result<ConvSelection> select_conv_algorithms(const std::vector<ConvLayerCandidates>& layers, size_t budget,
                                             const SessionBytesFn& session_bytes);

struct ConvAutotuneOptions {
  int threads = 1;
  size_t budget = 0;
  std::string cache_path;
  size_t alignment = 64;
  bool plan_memory = true;
  int repeats = 3;  // timed runs per algorithm and layer (the best counts)
};

struct ConvAutotuneResult {
  std::vector<const ConvAlgorithm*> algorithm_of;  // per node: the chosen algorithm, or null (not tuned)
  std::vector<ConvChoice> choices;                 // per tuned layer, execution order
  size_t session_bytes = 0;
};

// `memory` holds every node's KernelMemory except the tuned convolutions' (any values; they
// are filled per choice). Tuned: every conv2d that is not depthwise.
Result<ConvAutotuneResult> autotune_conv_layers(const Model& model, const std::vector<Shape>& shapes,
                                                std::vector<KernelMemory> memory, const ConvAutotuneOptions& options);

// True for the nodes autotune_conv_layers() chooses an algorithm for.
bool is_tuned_conv(const Model& model, const std::vector<Shape>& shapes, size_t node);

// The session's bytes as SessionOptions::memory_budget counts them (see MemoryReport::session_bytes).
size_t session_bytes_of(const MemoryReport& report, bool plan_memory);

}  // namespace winfer
