// Internal helpers shared by the file-format readers and writers (safetensors, npy): opening a
// file with errors that name the path and the OS reason, memory-mapping it, and little-endian
// integer encoding. Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "winfer/status.h"

// The formats store little-endian data and the readers copy it as-is into native floats.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "winfer's file formats assume a little-endian host"
#endif

namespace winfer {
namespace detail {

// Status for a failed OS call on `path`; `err` is an errno value. ENOENT/ENOTDIR become
// kNotFound, everything else kIoError: "x.bin: cannot open: No such file or directory".
Status os_error(const std::string& path, const std::string& what, int err);

// A read-only, private memory mapping of a whole regular file. Move-only; unmaps on destruction.
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Fails on a missing file, a directory or other non-regular file, and an unreadable file.
  // An empty file gives an empty mapping (data() == nullptr, size() == 0).
  static Result<MappedFile> map(const std::string& path);

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  // Gives up ownership without unmapping: the caller now owns [data(), data() + size()) and
  // must munmap it (read data() and size() first).
  void release() {
    data_ = nullptr;
    size_ = 0;
  }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

// Writes `size` bytes to `path` (created or truncated), reporting the OS reason on failure.
// Used by writers that assemble the whole file in pieces.
class FileWriter {
 public:
  explicit FileWriter(std::string path) : path_(std::move(path)) {}
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  Status open();
  Status write(const void* data, size_t size);
  Status close();  // must be called to learn whether the final flush succeeded

 private:
  std::string path_;
  int fd_ = -1;
};

inline uint64_t load_le_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint32_t load_le_u32(const unsigned char* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint16_t load_le_u16(const unsigned char* p) { return uint16_t(p[0] | p[1] << 8); }

inline void store_le(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace detail
}  // namespace winfer
