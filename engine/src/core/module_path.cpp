#include "engine/src/core/module_path.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>

namespace winfer::detail {
namespace {

// The folder of the binary (executable or shared library) holding this function: dladdr names
// it, which for libwinfer.so is the library, not the program that loaded it.
std::string binary_dir() {
  Dl_info info{};
  std::string path;
  // The main program's name may be argv[0] ("winfer", found on PATH): then /proc/self/exe.
  if (dladdr(reinterpret_cast<void*>(&binary_dir), &info) != 0 && info.dli_fname != nullptr &&
      std::strchr(info.dli_fname, '/') != nullptr) {
    char resolved[PATH_MAX];
    if (realpath(info.dli_fname, resolved) != nullptr) path = resolved;
  }
  if (path.empty()) {
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    path = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string("./unknown");
  }
  return path.substr(0, path.rfind('/'));
}

}  // namespace

std::vector<std::string> module_candidates(const std::string& file) {
  const std::string dir = binary_dir();
  return {dir + "/../" WINFER_MODULE_SUBDIR "/" + file, dir + "/winfer/" + file};
}

std::string find_module(const std::string& file) {
  const std::vector<std::string> candidates = module_candidates(file);
  for (const std::string& path : candidates) {
    if (access(path.c_str(), F_OK) == 0) return path;
  }
  return candidates.front();
}

ModuleSymbol open_module_symbol(const std::string& path, const char* symbol) {
  ModuleSymbol result;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    result.load_error = error != nullptr ? error : path + ": dlopen failed";
    return result;
  }
  result.opened = true;
  result.address = dlsym(handle, symbol);
  return result;
}

}  // namespace winfer::detail
