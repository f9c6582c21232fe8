#include <map>
#include <mutex>

#include "bench/peers/peers.h"
#include "engine/src/core/module_path.h"

namespace winfer::bench {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

Result<const ConvProvider*> open_module(const std::string& name) {
  const std::string path = detail::find_module("libwinfer_peer_" + name + ".so");
  const std::string remedy = "; rebuild (cmake --build) or reinstall winfer, or leave " + name + " out of --conv";
  // The provider and the objects it prepares live in the module, which stays open.
  const detail::ModuleSymbol entry = detail::open_module_symbol(path, "winfer_bench_peer");
  if (!entry.opened)
    return unsupported("--conv " + name + ": the peer module could not be loaded: " + entry.load_error + remedy);
  using Entry = const ConvProvider* (*)();
  const ConvProvider* provider = entry.address != nullptr ? reinterpret_cast<Entry>(entry.address)() : nullptr;
  if (provider == nullptr || provider->name() != name)
    return unsupported("--conv " + name + ": " + path + " is not the " + name + " peer module" + remedy);
  return provider;
}

}  // namespace

std::vector<std::string> built_peer_names() {
  std::vector<std::string> names;
#if defined(WINFER_HAVE_ONEDNN)
  names.push_back("onednn");
#endif
#if defined(WINFER_HAVE_XNNPACK)
  names.push_back("xnnpack");
#endif
  return names;
}

std::vector<std::string> known_peer_names() { return {"onednn", "xnnpack"}; }

Result<const ConvProvider*> load_peer(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, Result<const ConvProvider*>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, open_module(name)).first;
  return it->second;
}

std::string peer_description(const std::vector<const ConvProvider*>& providers) {
  std::string text;
  for (const ConvProvider* p : providers)
    if (p->is_peer()) text += (text.empty() ? "" : "; ") + p->description();
  if (!text.empty()) return text;
  const std::vector<std::string> built = built_peer_names();
  if (built.empty()) return "none built (WINFER_BENCH_PEERS; see docs/PERFORMANCE.md)";
  return "none run (built: " + join(built) + ")";
}

}  // namespace winfer::bench
