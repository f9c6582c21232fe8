// Where winfer's run-time modules are (the CUDA backend plug-in, the bench's peer and CUDA
// modules): <libdir>/winfer beside the binary holding winfer's code. Not part of the public API.
#pragma once

#include <string>
#include <vector>

namespace winfer::detail {

// The paths a module file named `file` (e.g. "libwinfer_cuda.so") is looked for at, first
// match wins: `<dir>/../<libdir>/winfer/<file>` and `<dir>/winfer/<file>`, where <dir> is the
// folder of the executable or shared library this code was linked into (build/bin ->
// build/lib/winfer; <prefix>/bin and <prefix>/<libdir>/libwinfer.so -> <prefix>/<libdir>/winfer).
std::vector<std::string> module_candidates(const std::string& file);

// The first of module_candidates(file) that exists, else the first candidate (for messages).
std::string find_module(const std::string& file);

// A symbol of a module, opened with dlopen(RTLD_NOW | RTLD_LOCAL) and never closed (what the
// caller gets from it lives in it).
struct ModuleSymbol {
  bool opened = false;  // false: `load_error` says why (the loader's message, with the path)
  std::string load_error;
  void* address = nullptr;  // null when the module has no such symbol
};
ModuleSymbol open_module_symbol(const std::string& path, const char* symbol);

}  // namespace winfer::detail
