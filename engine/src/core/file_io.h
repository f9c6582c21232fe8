// Internal helpers shared by the file-format readers and writers (safetensors, npy): opening a
// file with errors that name the path and the OS reason, memory-mapping it, and little-endian
// integer encoding. Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

// What a file is to winfer, for messages and limits: "model file", at most 8 MiB. Every file
// winfer reads is opened through open_input_file with its kind, so every input path refuses the
// same things the same way (docs/ERRORS.md, "Files").
struct InputKind {
  const char* what;    // "model file", "labels file", "weights file", ...
  uint64_t max_bytes;  // larger files are refused before a byte is read
};

// A file descriptor that closes itself. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  void reset();
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

struct InputFile {
  UniqueFd fd;
  uint64_t size = 0;
};

// Opens `path` for reading the way winfer opens every input file:
//  * the path is checked before open(): a FIFO would block open() forever and a device such as
//    /dev/zero reads without end, so anything but a regular file (after symlinks) is refused,
//    as are missing files, directories and symlink loops, each with its own message;
//  * open() itself is non-blocking and fstat() checks the opened file again, so that a path
//    swapped for a FIFO in between cannot block either;
//  * a file larger than kind.max_bytes is refused with both numbers.
// Messages read "model file 'x.yaml' is a FIFO (named pipe), not a regular file; ...".
Result<InputFile> open_input_file(const std::string& path, const InputKind& kind);

// Checks that `path` is a folder (after symlinks), with the same words as open_input_file for
// what it is instead: "dataset folder 'x' is a FIFO (named pipe), not a folder".
Status check_input_folder(const std::string& path, const char* what);

// The whole file as bytes, through open_input_file. At most kind.max_bytes are read, whatever
// stat said: a file that grows while it is read is refused, not followed.
Result<std::string> read_input_file(const std::string& path, const InputKind& kind);

// A read-only, private memory mapping of a whole regular file. Move-only; unmaps on destruction.
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Opens through open_input_file (same refusals and limit). An empty file gives an empty
  // mapping (data() == nullptr, size() == 0). The file stays open (fd()) for read_at.
  static Result<MappedFile> map(const std::string& path, const InputKind& kind);

  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  // Gives up ownership without unmapping: the caller now owns [data(), data() + size()) and
  // must munmap it (read data() and size() first).
  void release() {
    data_ = nullptr;
    size_ = 0;
  }
  // The open file the mapping was made from (-1 for an empty one); release_fd() hands it over.
  int fd() const { return fd_.get(); }
  int release_fd() { return fd_.release(); }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  UniqueFd fd_;
};

// Reads `size` bytes at `offset` of the open file `fd` into `out` (pread, retried until done):
// the bytes come from the page cache without being mapped, so none of the file's pages enter
// the resident set and loading weights never holds them twice (docs/MEMORY.md, "Loading").
// Weights are read this way rather than copied out of the file's mapping: a mapping's pages
// fault in with their neighbours (Linux maps up to 64 KiB of cached pages per fault, a large
// folio whole), which stayed resident beside the copies unless given back page by page
// (madvise, a system call per tensor), and the faults cost more than the copy (ResNet-50's
// ONNX load: 103 -> 91 ms). A file that ends early (changed since it was checked) is an error
// naming `path`, `what` and the offsets.
Status read_at(int fd, const std::string& path, const std::string& what, uint64_t offset, size_t size, void* out);

// What a file that winfer writes is, so that it replaces only a file of its own kind: an
// output path never destroys what it names. `looks_like` sees the first bytes (up to 4 KiB) of
// an existing non-empty regular file and its size; false refuses the write.
struct OutputKind {
  const char* what;    // "output .npy file", "autotune cache", ...
  const char* format;  // "a .npy file", "a winfer autotune cache", ... (for messages)
  std::function<bool(const std::string& head, uint64_t size)> looks_like;
};

// Writes a file as a whole, safely: open() checks the target first (a missing path is created;
// a regular file is replaced only when `kind.looks_like` accepts it or it is empty; a directory,
// device, FIFO, socket or symlink loop is refused), the bytes go to a new temporary file beside
// it, and close() renames that over the target, so a reader never sees half a file and a failed
// write leaves the old file as it was. A symlink to a regular file is followed: its target is
// replaced, the link kept. The destructor removes the temporary file of a write not closed.
class FileWriter {
 public:
  FileWriter(std::string path, const OutputKind& kind) : path_(std::move(path)), kind_(kind) {}
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  Status open();
  Status write(const void* data, size_t size);
  Status close();  // must be called: it renames the written file into place

 private:
  std::string path_;
  OutputKind kind_;
  std::string target_;  // path_ with a final symlink resolved
  std::string temp_;
  UniqueFd fd_;
};

// Checks that `path` may be written as `kind` (the checks of FileWriter::open), without writing.
// Lets a command refuse a bad --output before its long run rather than after.
Status check_output_path(const std::string& path, const OutputKind& kind);

// A whole file in one call through FileWriter.
Status write_output_file(const std::string& path, const OutputKind& kind, const void* data, size_t size);

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
