// Peer libraries timed by `winfer bench` next to the engine's algorithms: oneDNN and XNNPACK,
// each built only when CMake found it (option WINFER_BENCH_PEERS, see docs/PERFORMANCE.md).
//
// Each peer is a module of its own, libwinfer_peer_<name>.so, linked against its library and
// opened by load_peer() when a bench run times it: every other command (and a bench of the
// engine's algorithms alone) maps neither oneDNN nor XNNPACK. The build writes the modules to
// <build>/<libdir>/winfer/ and cmake --install to <prefix>/<libdir>/winfer/; both are found from
// the executable's folder (<bin>/../<libdir>/winfer).
#pragma once

#include <string>
#include <vector>

#include "bench/conv_provider.h"

namespace winfer::bench {

// The peers built with this binary ("onednn", "xnnpack"), possibly none; known without loading them.
std::vector<std::string> built_peer_names();
// Every peer name the bench knows, built or not (to tell "unknown" from "not built").
std::vector<std::string> known_peer_names();
// The built peer `name`, its module opened by the first call (thread-safe; the same provider or
// the same error afterwards). kUnsupported naming the module and dlerror() when it cannot be.
Result<const ConvProvider*> load_peer(const std::string& name);
// One line on the peers among `providers` (library versions, what they detected), or why there
// is none: "none built (...)" or "none run (built: onednn, xnnpack)".
std::string peer_description(const std::vector<const ConvProvider*>& providers);

}  // namespace winfer::bench

// Each peer module's one entry point: its provider, alive until the process ends.
extern "C" const winfer::bench::ConvProvider* winfer_bench_peer();
