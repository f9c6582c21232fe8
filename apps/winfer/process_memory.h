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

// Runs `work` in a forked child and returns the text it produced. `error` is set (and the
// result empty) when the child could not be started, was killed (e.g. by the OOM killer) or
// exited without a result. The child leaves with _exit (no exit handlers of the parent run).
std::string run_in_child(const std::function<std::string()>& work, std::string* error);

}  // namespace winfer::cli
