// IDX reading through zlib's gz* functions, which read gzip and plain files alike.
#include "winfer/idx_dataset.h"

#include "engine/src/core/file_io.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace winfer {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to `size` bytes; returns how many were read, or -1 with `error` set.
int64_t read_fully(gzFile file, uint8_t* out, int64_t size, std::string* error) {
  int64_t done = 0;
  while (done < size) {
    const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(size - done, int64_t(1) << 24));
    const int n = gzread(file, out + done, chunk);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      *error = code == Z_ERRNO ? std::strerror(errno) : message;
      return -1;
    }
    if (n == 0) break;
    done += n;
  }
  // zlib reports a gzip stream that stops early only through gzerror, not as a read error.
  int code = Z_OK;
  const char* message = gzerror(file, &code);
  if (done < size && code != Z_OK) {
    *error = message;
    return -1;
  }
  return done;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// The first of `base.gz` and `base` that is there, of whatever type (read_idx refuses what is
// not a regular file, naming it); "" if neither is.
std::string existing(const std::string& base) {
  std::error_code ec;
  for (const std::string& candidate : {base + ".gz", base}) {
    if (std::filesystem::symlink_status(candidate, ec).type() != std::filesystem::file_type::not_found)
      return candidate;
  }
  return "";
}

Result<IdxArray> read_split_file(const std::string& dir, const std::string& stem) {
  const std::string base = (std::filesystem::path(dir) / stem).string();
  const std::string path = existing(base);
  if (path.empty()) return not_found(base + "(.gz): no such file");
  return read_idx(path);
}

}  // namespace

Result<IdxArray> read_idx(const std::string& path, int64_t max_bytes) {
  // The file itself (gzipped or not) is at most its data, its header and gzip's overhead on
  // incompressible data; opened as every input file is (no FIFO, device or directory).
  const uint64_t limit = uint64_t(max_bytes) + uint64_t(max_bytes) / 64 + 4096;
  WINFER_ASSIGN_OR_RETURN(detail::InputFile opened, detail::open_input_file(path, {"IDX file", limit}));
  GzFile file(gzdopen(opened.fd.get(), "rb"));
  if (!file) return out_of_memory(path + ": cannot start reading the IDX file (out of memory)");
  opened.fd.release();  // gzclose closes it now
  std::string error;
  uint8_t magic[4];
  const int64_t got = read_fully(file.get(), magic, 4, &error);
  if (got < 0) return io_error(path + ": cannot read (corrupt gzip data?): " + error);
  if (got < 4 || magic[0] != 0 || magic[1] != 0) return parse_error(path + ": not an IDX file (bad magic number)");
  if (magic[2] != 0x08) {
    char type[8];
    std::snprintf(type, sizeof type, "0x%02x", magic[2]);
    return unsupported(path + ": IDX element type " + type + " is not unsigned bytes (0x08)");
  }
  const int rank = magic[3];
  if (rank < 1) return parse_error(path + ": IDX file with no dimensions");

  IdxArray array;
  std::vector<uint8_t> header(static_cast<size_t>(4 * rank));
  if (read_fully(file.get(), header.data(), 4 * rank, &error) != 4 * rank) {
    return parse_error(path + ": truncated IDX header" + (error.empty() ? "" : ": " + error));
  }
  int64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = big_endian_u32(header.data() + 4 * i);
    array.dims.push_back(d);
    total = d == 0 ? 0 : (total > max_bytes / d ? max_bytes + 1 : total * d);
  }
  if (total > max_bytes) {
    return invalid_argument(path + ": the IDX header promises more than " + std::to_string(max_bytes) +
                            " bytes of data; refused (corrupt header?)");
  }
  // The buffer grows with the data actually read (16 MiB at a time), so a 20-byte file whose
  // header promises 1 GiB is found truncated without allocating the gigabyte first.
  constexpr int64_t kChunk = int64_t(1) << 24;
  int64_t read = 0;
  while (read < total) {
    const int64_t want = std::min(kChunk, total - read);
    array.data.resize(static_cast<size_t>(read + want));
    const int64_t got_now = read_fully(file.get(), array.data.data() + read, want, &error);
    if (got_now < 0) return io_error(path + ": cannot read the data (corrupt gzip data?): " + error);
    read += got_now;
    if (got_now < want) break;
  }
  if (read < total) {
    return parse_error(path + ": truncated: the header promises " + std::to_string(total) +
                       " bytes of data, the file has " + std::to_string(read));
  }
  return array;
}

Image ImageDataset::image(int64_t index) const {
  Image image = Image::blank(width, height, 1);
  const size_t plane = static_cast<size_t>(width * height);
  std::memcpy(image.pixels.data(), pixels.data() + static_cast<size_t>(index) * plane, plane);
  return image;
}

Result<ImageDataset> load_mnist_split(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "test") return invalid_argument("unknown split '" + split + "' (train or test)");
  const std::string prefix = split == "train" ? "train" : "t10k";
  WINFER_RETURN_IF_ERROR(detail::check_input_folder(dir, "dataset folder"));
  WINFER_ASSIGN_OR_RETURN(IdxArray images, read_split_file(dir, prefix + "-images-idx3-ubyte"));
  WINFER_ASSIGN_OR_RETURN(IdxArray labels, read_split_file(dir, prefix + "-labels-idx1-ubyte"));
  if (images.dims.size() != 3) {
    return parse_error(dir + ": " + prefix + "-images-idx3-ubyte has " + std::to_string(images.dims.size()) +
                       " dimensions, expected 3 (count, rows, columns)");
  }
  if (images.dims[1] < 1 || images.dims[2] < 1) {
    return parse_error(dir + ": " + prefix + "-images-idx3-ubyte has images of " + std::to_string(images.dims[1]) +
                       "x" + std::to_string(images.dims[2]) + " pixels; rows and columns must be at least 1");
  }
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    return parse_error(dir + ": " + prefix + "-labels-idx1-ubyte does not hold one label per image (" +
                       std::to_string(images.dims[0]) + " images)");
  }
  ImageDataset dataset;
  dataset.count = images.dims[0];
  dataset.height = images.dims[1];
  dataset.width = images.dims[2];
  dataset.pixels = std::move(images.data);
  dataset.labels = std::move(labels.data);
  return dataset;
}

}  // namespace winfer
