// run_cuda_bench() of the CLI: the CUDA layer bench lives in libwinfer_bench_cuda.so
// (<libdir>/winfer, engine/src/core/module_path.h), opened on the first `winfer bench --layers
// --device cuda`, so that the CLI holds no CUDA code and maps none until then.
#include "bench/cuda/cuda_bench.h"
#include "engine/src/core/module_path.h"

namespace winfer::bench {
namespace {

using RunFunction = Result<CudaBenchReport> (*)(const LayerSet&, const CudaBenchOptions&);

struct LoadedModule {
  RunFunction run = nullptr;
  std::string error;  // why run is null
};

LoadedModule load_module() {
  LoadedModule loaded;
  const std::string path = detail::find_module("libwinfer_bench_cuda.so");
  const std::string remedy = "; rebuild (cmake --build) or reinstall winfer";
  const detail::ModuleSymbol entry = detail::open_module_symbol(path, "winfer_bench_cuda_module_v1");
  if (!entry.opened) {
    loaded.error = "the bench's CUDA module could not be loaded: " + entry.load_error + remedy;
    return loaded;
  }
  using Entry = void* (*)();
  loaded.run =
      entry.address != nullptr ? reinterpret_cast<RunFunction>(reinterpret_cast<Entry>(entry.address)()) : nullptr;
  if (loaded.run == nullptr) loaded.error = "'" + path + "' is not the bench's CUDA module" + remedy;
  return loaded;
}

}  // namespace

Result<CudaBenchReport> run_cuda_bench(const LayerSet& set, const CudaBenchOptions& options) {
  static const LoadedModule module = load_module();  // thread-safe, once
  if (module.run == nullptr) return device_error("no CUDA device: " + module.error);
  return module.run(set, options);
}

}  // namespace winfer::bench
