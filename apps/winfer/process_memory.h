// Process memory measurement and fork-per-measurement helpers shared by `winfer bench MODEL`
// and `winfer plan`.
//
// A measurement runs in a forked child: the child's peak resident set (VmHWM) starts from the
// parent's small footprint, so its growth over the value read at the child's start is what the
// measured work allocated and touched. The parent must not have started OpenMP or BLAS threads
// before forking (libgomp's pool does not survive fork).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace winfer::cli {

// Peak resident set size of this process so far (VmHWM), or nullopt where /proc is missing.
std::optional<size_t> peak_resident_bytes();

// The growth of the peak resident set while `pass` runs, in a process that has already run
// the same work once ("warm"): the heap's free memory goes back to the system (malloc_trim,
// with glibc's mmap and trim thresholds set back to their initial 128 KiB, which the first run
// raised) and the peak restarts from the current resident set (5 written to /proc/self/clear_refs,
// Linux 4.0+), which is the baseline. What the first run paid once for the process (code
// pages, the thread pool's stacks, library buffers such as OpenBLAS's, the allocator's
// growth) is then in the baseline; every byte the work allocates and touches is not, however
// it was allocated. nullopt where the peak cannot be restarted or `pass` returns false.
std::optional<size_t> warm_peak_growth(const std::function<bool()>& pass);

// Runs `work` in a forked child and returns the text it produced. `error` is set (and the
// result empty) when the child could not be started, was killed (e.g. by the OOM killer) or
// exited without a result. The child leaves with _exit (no exit handlers of the parent run).
std::string run_in_child(const std::function<std::string()>& work, std::string* error);

}  // namespace winfer::cli
