// Peer libraries timed by `winfer bench` next to the engine's algorithms: oneDNN and XNNPACK,
// each compiled in only when CMake found it (option WINFER_BENCH_PEERS, see docs/PERFORMANCE.md).
#pragma once

#include <string>
#include <vector>

#include "bench/conv_provider.h"

namespace winfer::bench {

// The peers built into this binary ("onednn", "xnnpack"), possibly none.
std::vector<const ConvProvider*> peer_providers();
// Every peer name the bench knows, built or not (to tell "unknown" from "not built").
std::vector<std::string> known_peer_names();
// One line on the built peers: library versions and what they detected; "none built" if none.
std::string peer_description();

#if defined(WINFER_HAVE_ONEDNN)
const ConvProvider& onednn_provider();
std::string onednn_description();
#endif
#if defined(WINFER_HAVE_XNNPACK)
const ConvProvider& xnnpack_provider();
std::string xnnpack_description();
#endif

}  // namespace winfer::bench
