// cuBLAS and cuDNN opened on first use (loader.h).
#include "kernels/cuda/native/loader.h"

#include <dlfcn.h>

#define WINFER_STRINGIFY_(x) #x
#define WINFER_STRINGIFY(x) WINFER_STRINGIFY_(x)

namespace winfer {
namespace cuda {
namespace {

// One library as loaded once per process: its table of functions, or why it could not be.
template <class Api>
struct Loaded {
  Api api;
  std::string error;  // empty when every function was found
};

std::string dlerror_text(const char* fallback) {
  const char* error = dlerror();
  return error != nullptr ? error : fallback;
}

// dlopen by soname first: that honours LD_LIBRARY_PATH, the caller's RUNPATH and the ld.so
// cache, which is how PyTorch's pip-installed cuBLAS/cuDNN are found on the GPU machines. Then
// the folder the library was found in at build time (`build_dir`, may be empty), so that a
// toolkit outside the loader's paths works as it did when it was linked. Never closed: the
// functions are used until the process ends.
void* open_library(const char* soname, const char* build_dir, std::string* error) {
  void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  *error = dlerror_text("dlopen failed");
  if (build_dir == nullptr || *build_dir == '\0') return nullptr;
  const std::string path = std::string(build_dir) + "/" + soname;
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) return handle;
  const std::string second = dlerror_text("dlopen failed");
  if (second != *error) *error += "; " + second;  // not twice the same missing dependency
  return nullptr;
}

template <class Fn>
bool resolve(void* handle, const char* symbol, Fn* fn, std::string* error) {
  (void)dlerror();
  *fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*fn != nullptr) return true;
  *error = std::string("it lacks ") + symbol + " (" + dlerror_text("null symbol") + ")";
  return false;
}

// `what (soname) could not be loaded: reason; remedy`, the one message for a missing library
// or a missing function in it.
template <class Api>
Status loaded_status(const Loaded<Api>& loaded, const char* what, const char* soname, const char* remedy) {
  if (loaded.error.empty()) return Status();
  return Status(StatusCode::kLibraryError,
                std::string(what) + " (" + soname + ") could not be loaded: " + loaded.error + "; " + remedy);
}

#if defined(WINFER_CUBLAS_DIR)
constexpr const char* kCublasDir = WINFER_CUBLAS_DIR;
#else
constexpr const char* kCublasDir = "";
#endif

}  // namespace

const char* cublas_soname() { return "libcublas.so." WINFER_STRINGIFY(CUBLAS_VER_MAJOR); }

#define WINFER_RESOLVE_FUNCTION(name) resolve(handle, #name, &loaded.api.name, &loaded.error)&&

Status load_cublas(const CublasApi** api) {
  static const Loaded<CublasApi> cublas = [] {
    Loaded<CublasApi> loaded;
    void* handle = open_library(cublas_soname(), kCublasDir, &loaded.error);
    if (handle != nullptr) (void)(WINFER_CUBLAS_FUNCTIONS(WINFER_RESOLVE_FUNCTION) true);
    return loaded;
  }();
  *api = cublas.error.empty() ? &cublas.api : nullptr;
  return loaded_status(cublas, "cuBLAS", cublas_soname(),
                       "install the CUDA toolkit's cuBLAS (or add its folder to LD_LIBRARY_PATH), or use --device cpu");
}

#if WINFER_HAVE_CUDNN
#if defined(WINFER_CUDNN_DIR)
constexpr const char* kCudnnDir = WINFER_CUDNN_DIR;
#else
constexpr const char* kCudnnDir = "";
#endif

const char* cudnn_soname() { return "libcudnn.so." WINFER_STRINGIFY(CUDNN_MAJOR); }

Status load_cudnn(const CudnnApi** api) {
  static const Loaded<CudnnApi> cudnn = [] {
    Loaded<CudnnApi> loaded;
    void* handle = open_library(cudnn_soname(), kCudnnDir, &loaded.error);
    if (handle != nullptr) (void)(WINFER_CUDNN_FUNCTIONS(WINFER_RESOLVE_FUNCTION) true);
    return loaded;
  }();
  *api = cudnn.error.empty() ? &cudnn.api : nullptr;
  return loaded_status(cudnn, "cuDNN", cudnn_soname(),
                       "install cuDNN " WINFER_STRINGIFY(
                           CUDNN_MAJOR) " (or add its folder to LD_LIBRARY_PATH), or choose another --conv than cudnn");
}
#endif

#undef WINFER_RESOLVE_FUNCTION

}  // namespace cuda
}  // namespace winfer
