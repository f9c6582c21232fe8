#include "file_io.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

namespace winfer {
namespace detail {

Status os_error(const std::string& path, const std::string& what, int err) {
  std::string message = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return not_found(std::move(message));
  return io_error(std::move(message));
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

// "model file 'x.yaml'": how every message about a file starts.
std::string subject(const char* what, const std::string& path) { return std::string(what) + " '" + path + "'"; }

// A failed stat()/open() in words. A symlink loop is said as such (stat's ELOOP), not as a
// missing file.
Status access_error(const std::string& who, int err) {
  switch (err) {
    case ENOENT: return not_found(who + " does not exist");
    case ENOTDIR: return not_found(who + " does not exist (a part of the path is not a directory)");
    case ELOOP: return io_error(who + " is a symbolic link loop (too many levels of symbolic links)");
    case EACCES: return io_error(who + " cannot be read: permission denied");
    default: return io_error(who + " cannot be read: " + std::strerror(err));
  }
}

// What a file that is not a regular one is, in words.
const char* file_type_phrase(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO (named pipe)"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
                          : "a special file";
}

// Refusal of anything but a regular file. A FIFO or a device is refused because open() of a FIFO
// blocks until a writer comes and a device such as /dev/zero or /dev/urandom never ends.
Status not_a_regular_file(const std::string& who, mode_t mode) {
  if (S_ISDIR(mode)) return invalid_argument(who + " is a directory, not a file");
  return invalid_argument(who + " is " + file_type_phrase(mode) +
                          ", not a regular file; winfer reads only regular files");
}

Status too_large(const std::string& who, const char* what, uint64_t size, uint64_t limit) {
  const char* article = std::strchr("aeiouAEIOU", what[0]) != nullptr ? "an " : "a ";  // "an ONNX model file"
  return invalid_argument(who + " is " + std::to_string(size) + " bytes, more than the limit of " +
                          std::to_string(limit) + " bytes for " + article + what + " (docs/ERRORS.md, \"Limits\")");
}

}  // namespace

Result<InputFile> open_input_file(const std::string& path, const InputKind& kind) {
  const std::string who = subject(kind.what, path);
  if (path.empty()) return invalid_argument(std::string(kind.what) + ": the path is empty");
  if (path.find('\0') != std::string::npos) return invalid_argument(who + ": the path contains a NUL byte");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return access_error(who, errno);
  if (!S_ISREG(st.st_mode)) return not_a_regular_file(who, st.st_mode);
  if (uint64_t(st.st_size) > kind.max_bytes) return too_large(who, kind.what, uint64_t(st.st_size), kind.max_bytes);

  // O_NONBLOCK: should the path have become a FIFO since stat(), open() returns at once and the
  // fstat below refuses it. It has no effect on reads of a regular file.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) return access_error(who, errno);
  if (::fstat(fd.get(), &st) != 0) return access_error(who, errno);
  if (!S_ISREG(st.st_mode)) return not_a_regular_file(who, st.st_mode);
  if (uint64_t(st.st_size) > kind.max_bytes) return too_large(who, kind.what, uint64_t(st.st_size), kind.max_bytes);
  InputFile file;
  file.fd = std::move(fd);
  file.size = uint64_t(st.st_size);
  return file;
}

Status check_input_folder(const std::string& path, const char* what) {
  const std::string who = subject(what, path);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return access_error(who, errno);
  if (!S_ISDIR(st.st_mode)) {
    return invalid_argument(who + " is " + (S_ISREG(st.st_mode) ? "a file" : file_type_phrase(st.st_mode)) +
                            ", not a folder");
  }
  return Status::Ok();
}

Result<std::string> read_input_file(const std::string& path, const InputKind& kind) {
  WINFER_ASSIGN_OR_RETURN(InputFile file, open_input_file(path, kind));
  const std::string who = subject(kind.what, path);
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(file.size));
  } catch (const std::bad_alloc&) {
    return out_of_memory(who + ": out of memory for its " + std::to_string(file.size) + " bytes");
  }
  // Reads until end of file, but never past the limit: a file the size of which stat() did not
  // tell (one of /proc's) or that grows meanwhile costs at most kind.max_bytes.
  size_t filled = 0;
  for (;;) {
    if (filled == bytes.size()) {
      if (bytes.size() >= kind.max_bytes) {
        char probe;
        const ssize_t more = ::read(file.fd.get(), &probe, 1);
        if (more > 0) return too_large(who, kind.what, kind.max_bytes + 1, kind.max_bytes);
        if (more < 0 && errno == EINTR) continue;
        break;
      }
      const size_t grown = std::min<uint64_t>(kind.max_bytes, std::max<size_t>(4096, bytes.size() * 2));
      bytes.resize(grown);
    }
    const ssize_t n = ::read(file.fd.get(), &bytes[filled], bytes.size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(path, std::string("cannot read the ") + kind.what, errno);
    }
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  bytes.resize(filled);
  return bytes;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), fd_(std::move(other.fd_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
    data_ = other.data_;
    size_ = other.size_;
    fd_ = std::move(other.fd_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Result<MappedFile> MappedFile::map(const std::string& path, const InputKind& kind) {
  WINFER_ASSIGN_OR_RETURN(InputFile file, open_input_file(path, kind));
  // mmap cannot map zero bytes; an empty mapping lets the format reader say what it expected.
  if (file.size == 0) return MappedFile();
  const size_t size = static_cast<size_t>(file.size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd.get(), 0);
  if (p == MAP_FAILED) return os_error(path, "cannot mmap " + std::to_string(size) + " bytes", errno);
  MappedFile mapped;
  mapped.data_ = static_cast<const unsigned char*>(p);
  mapped.size_ = size;
  mapped.fd_ = std::move(file.fd);
  return mapped;
}

Status read_at(int fd, const std::string& path, const std::string& what, uint64_t offset, size_t size, void* out) {
  unsigned char* dst = static_cast<unsigned char*>(out);
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, dst + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error(path, "cannot read " + what, errno);
    if (n == 0) {
      return io_error(path + ": ends at byte " + std::to_string(offset + done) + " while reading " + what + " (bytes " +
                      std::to_string(offset) + ".." + std::to_string(offset + size) +
                      "): was it changed while it was being loaded?");
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

namespace {

// The first bytes of an existing regular file, for OutputKind::looks_like.
Result<std::string> read_head(const std::string& path, size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) return os_error(path, "cannot open to check what it is", errno);
  std::string head(max_bytes, '\0');
  size_t filled = 0;
  while (filled < head.size()) {
    const ssize_t n = ::read(fd.get(), &head[filled], head.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return os_error(path, "cannot read to check what it is", errno);
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  head.resize(filled);
  return head;
}

// Where a write to `path` lands: `path` itself, or the regular file a symlink names. Refuses
// what must not be replaced. *exists tells whether the target is there already.
Result<std::string> output_target(const std::string& path, const OutputKind& kind, bool* exists) {
  const std::string who = subject(kind.what, path);
  if (path.empty()) return invalid_argument(std::string(kind.what) + ": the path is empty");
  if (path.find('\0') != std::string::npos) return invalid_argument(who + ": the path contains a NUL byte");
  *exists = false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return path;  // a new file
    return access_error(who, errno);
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT)
        return invalid_argument(who +
                                " is a symbolic link to a file that does not exist; "
                                "give the target path itself");
      return access_error(who, errno);
    }
    std::unique_ptr<char, void (*)(void*)> resolved(::realpath(path.c_str(), nullptr), ::free);
    if (!resolved) return access_error(who, errno);
    target = resolved.get();
  }
  if (!S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return invalid_argument(who + " is a directory; give the name of a file to write");
    return invalid_argument(who + " is " + file_type_phrase(st.st_mode) +
                            "; winfer writes only regular files and will not replace it");
  }
  *exists = true;
  if (st.st_size > 0) {
    WINFER_ASSIGN_OR_RETURN(std::string head, read_head(target, 4096));
    if (!kind.looks_like(head, uint64_t(st.st_size))) {
      return invalid_argument(who + " exists and is not " + kind.format + "; winfer replaces only " + kind.format +
                              " (remove the file or choose another name)");
    }
  }
  return target;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status check_output_path(const std::string& path, const OutputKind& kind) {
  bool exists = false;
  return output_target(path, kind, &exists).status();
}

FileWriter::~FileWriter() {
  fd_.reset();
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

Status FileWriter::open() {
  bool exists = false;
  WINFER_ASSIGN_OR_RETURN(target_, output_target(path_, kind_, &exists));
  mode_t mode = 0644;
  struct stat st {};
  if (exists && ::stat(target_.c_str(), &st) == 0) mode = st.st_mode & 0777;
  // The temporary file sits beside the target (a rename within one file system is atomic), is
  // hidden, and is created exclusively: it never replaces anything itself.
  static std::atomic<unsigned> counter{0};
  const std::string dir = directory_of(target_);
  const std::string base = target_.substr(target_.rfind('/') == std::string::npos ? 0 : target_.rfind('/') + 1);
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_ = dir + "/." + base + ".winfer-tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd_ = UniqueFd(::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
    if (fd_.get() >= 0) return Status::Ok();
    if (errno != EEXIST) break;
  }
  const int err = errno;
  temp_.clear();
  return os_error(path_, std::string("cannot create the ") + kind_.what + " (a temporary file in '" + dir + "')", err);
}

Status FileWriter::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_.get(), p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return os_error(path_, "write failed", errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status FileWriter::close() {
  const int fd = fd_.release();  // closed here, once, to see close()'s result
  if (fd < 0) return internal_error(path_ + ": FileWriter::close without a successful open");
  if (::close(fd) != 0) return os_error(path_, "close failed", errno);
  // The target may have changed since open() (another process): check it again, so that the
  // rename never replaces something that open() would have refused.
  bool exists = false;
  auto target = output_target(path_, kind_, &exists);
  if (!target.ok()) return target.status();
  if (::rename(temp_.c_str(), target.value().c_str()) != 0) {
    return os_error(path_, std::string("cannot move the written ") + kind_.what + " into place", errno);
  }
  temp_.clear();
  return Status::Ok();
}

Status write_output_file(const std::string& path, const OutputKind& kind, const void* data, size_t size) {
  FileWriter out(path, kind);
  WINFER_RETURN_IF_ERROR(out.open());
  WINFER_RETURN_IF_ERROR(out.write(data, size));
  return out.close();
}

}  // namespace detail
}  // namespace winfer
