#include "bench/peers/peers.h"

namespace winfer::bench {

std::vector<const ConvProvider*> peer_providers() {
  std::vector<const ConvProvider*> peers;
#if defined(WINFER_HAVE_ONEDNN)
  peers.push_back(&onednn_provider());
#endif
#if defined(WINFER_HAVE_XNNPACK)
  peers.push_back(&xnnpack_provider());
#endif
  return peers;
}

std::vector<std::string> known_peer_names() { return {"onednn", "xnnpack"}; }

std::string peer_description() {
  std::string text;
#if defined(WINFER_HAVE_ONEDNN)
  text += onednn_description();
#endif
#if defined(WINFER_HAVE_XNNPACK)
  text += (text.empty() ? "" : "; ") + xnnpack_description();
#endif
  return text.empty() ? "none built (WINFER_BENCH_PEERS; see docs/PERFORMANCE.md)" : text;
}

}  // namespace winfer::bench
