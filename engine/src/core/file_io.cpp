#include "file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace winfer {
namespace detail {

Status os_error(const std::string& path, const std::string& what, int err) {
  std::string message = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return not_found(std::move(message));
  return io_error(std::move(message));
}

namespace {

// Closes a descriptor on every return path of MappedFile::map.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Result<MappedFile> MappedFile::map(const std::string& path) {
  FdCloser fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) return os_error(path, "cannot open", errno);

  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) return os_error(path, "cannot stat", errno);
  // open() succeeds on a directory; say so instead of failing later with a confusing mmap error.
  if (S_ISDIR(st.st_mode)) return os_error(path, "cannot read", EISDIR);
  if (!S_ISREG(st.st_mode)) return io_error(path + ": not a regular file");
  // mmap cannot map zero bytes; an empty mapping lets the format reader say what it expected.
  if (st.st_size == 0) return MappedFile();

  const size_t size = static_cast<size_t>(st.st_size);
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) return os_error(path, "cannot mmap " + std::to_string(size) + " bytes", errno);

  MappedFile file;
  file.data_ = static_cast<const unsigned char*>(p);
  file.size_ = size;
  return file;
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status FileWriter::open() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return os_error(path_, "cannot create", errno);
  return Status::Ok();
}

Status FileWriter::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
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
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return os_error(path_, "close failed", errno);
  return Status::Ok();
}

}  // namespace detail
}  // namespace winfer
