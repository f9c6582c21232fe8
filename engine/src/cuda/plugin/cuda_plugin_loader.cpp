// cuda_backend() of programs that load the CUDA backend as a plug-in (the CLI, libwinfer.so):
// libwinfer_cuda.so is opened on the first question asked of the backend (a session on a CUDA
// device, `auto`, the CUDA algorithm names), not before, so a process that never uses a GPU maps
// none of its code, cudart or the CUDA libraries. Where it is looked for: $WINFER_CUDA_PLUGIN,
// else <libdir>/winfer beside this binary (engine/src/core/module_path.h). Where it cannot be
// loaded, the backend has no device and says why, as a build without CUDA does.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "engine/src/core/module_path.h"
#include "engine/src/device_backend.h"
#include "engine/src/session_impl.h"

namespace winfer {
namespace {

constexpr const char* kPluginFile = "libwinfer_cuda.so";
constexpr const char* kPluginEntry = "winfer_cuda_backend_plugin_v1";

struct LoadedPlugin {
  const DeviceBackend* backend = nullptr;
  std::string error;  // why backend is null
};

// The plug-in resolves winfer's symbols in the process's global scope. A libwinfer.so that was
// itself opened with RTLD_LOCAL (a Python extension module, say) is not there: promote it.
void make_this_library_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&make_this_library_global), &info) == 0 || info.dli_fname == nullptr) return;
  if (void* self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) (void)self;  // kept open
}

LoadedPlugin load_plugin() {
  LoadedPlugin loaded;
  const char* override_path = std::getenv("WINFER_CUDA_PLUGIN");
  const std::string path = override_path != nullptr && *override_path != '\0' ? std::string(override_path)
                                                                              : detail::find_module(kPluginFile);
  const std::string remedy = "; build winfer with nvcc present (its CUDA backend) or use device 'cpu'";
  make_this_library_global();
  // Sessions and the model's device weights live in the plug-in, which stays open.
  const detail::ModuleSymbol entry = detail::open_module_symbol(path, kPluginEntry);
  if (!entry.opened) {
    loaded.error = "the CUDA backend plug-in could not be loaded: " + entry.load_error + remedy;
    return loaded;
  }
  using Entry = const DeviceBackend* (*)();
  loaded.backend = entry.address != nullptr ? reinterpret_cast<Entry>(entry.address)() : nullptr;
  if (loaded.backend == nullptr) {
    loaded.error = "'" + path + "' is not winfer's CUDA backend plug-in (no " + kPluginEntry + ")" + remedy;
  }
  return loaded;
}

const LoadedPlugin& plugin() {
  static const LoadedPlugin loaded = load_plugin();  // thread-safe, once
  return loaded;
}

class PluginCudaBackend : public DeviceBackend {
 public:
  DeviceAvailability availability() const override {
    if (const DeviceBackend* b = plugin().backend) return b->availability();
    DeviceAvailability a;
    a.reason = plugin().error;
    return a;
  }
  std::vector<std::string> conv_algorithm_names() const override {
    const DeviceBackend* b = plugin().backend;
    return b != nullptr ? b->conv_algorithm_names() : std::vector<std::string>();
  }
  bool supports_op(const Op& op) const override {
    const DeviceBackend* b = plugin().backend;
    return b != nullptr && b->supports_op(op);
  }
  Result<std::unique_ptr<SessionImpl>> create_session(std::shared_ptr<const Model> model, const SessionOptions& options,
                                                      int device_index) const override {
    if (const DeviceBackend* b = plugin().backend) return b->create_session(std::move(model), options, device_index);
    return unsupported("device '" + options.device + "': no CUDA device: " + plugin().error);
  }
};

}  // namespace

const DeviceBackend& cuda_backend() {
  static const PluginCudaBackend backend;
  return backend;
}

}  // namespace winfer
