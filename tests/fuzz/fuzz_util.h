// Shared by the fuzz targets: the readers under test take file paths, so each input is written
// to a file in a private temporary folder (created once per process, removed at exit).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace winfer_fuzz {

inline const std::string& scratch_dir() {
  // Never destroyed: the atexit handler below runs after static destructors registered later.
  static const std::string* const dir = [] {
    const char* base = std::getenv("TMPDIR");
    auto* path = new std::string(std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/winfer-fuzz-XXXXXX");
    if (::mkdtemp(path->data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return path;
  }();
  return *dir;
}

// Writes the input to scratch_dir()/name and returns the path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  if (std::fclose(f) != 0) std::abort();
  return path;
}

// A failed Status must explain itself: an empty message is a finding.
template <typename StatusLike>
void require_message(const StatusLike& status) {
  if (!status.ok() && status.message().empty()) {
    std::fprintf(stderr, "error without a message\n");
    std::abort();
  }
}

}  // namespace winfer_fuzz
