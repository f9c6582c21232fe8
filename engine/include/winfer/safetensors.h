// safetensors: the weights format (https://github.com/huggingface/safetensors).
//
// Layout: an 8-byte little-endian u64 N, then N bytes of UTF-8 JSON (possibly padded with
// trailing spaces) mapping each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// plus an optional "__metadata__" object of strings; the raw little-endian data follows, and
// offsets count from the first byte after the header.
//
// SafeTensorsFile maps the file read-only and validates everything at open(), so that a tensor
// handed out afterwards always lies inside the mapping with exactly numel x dtype-size bytes.
// Error codes: kNotFound (missing file), kIoError (permission, directory, mmap), kParseError
// (anything malformed in the file), kUnsupported (a dtype winfer does not know).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "winfer/shape.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {

struct SafeTensor {
  std::string name;
  std::string dtype;  // as in the file: "F32", "F16", "I64", ...
  Shape shape;
  // Points into the mapping. Not necessarily aligned to the element size: the format only
  // promises byte offsets, so copy (memcpy) rather than dereference when alignment matters.
  const void* data;
  size_t byte_size;
};

// Size in bytes of one element of a safetensors dtype, or 0 when the dtype is unknown.
size_t safetensors_dtype_size(const std::string& dtype);

class SafeTensorsFile {
 public:
  static Result<std::shared_ptr<const SafeTensorsFile>> open(const std::string& path);
  // The same checks on safetensors bytes held in memory, which are copied (the caller may free
  // them on return). `name` stands for the path in error messages and path().
  static Result<std::shared_ptr<const SafeTensorsFile>> from_memory(const void* data, size_t size,
                                                                    const std::string& name);

  const std::string& path() const { return path_; }
  // Sorted by data offset, i.e. in the order the data lies in the file.
  const std::vector<SafeTensor>& tensors() const { return tensors_; }
  const SafeTensor* find(const std::string& name) const;  // nullptr if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // True when the tensors' data lies in a read-only mapping of the file (open()), false for
  // from_memory()'s copy.
  bool is_mapped() const { return map_ != nullptr; }
  // Copies `tensor`'s byte_size bytes (a tensor of this file) into `out`. From a file (open())
  // they are read with pread, not through the mapping: reading a mapping leaves its pages
  // resident around every tensor (Linux maps a fault's neighbours too, up to a whole large
  // folio), and a loader that copies every weight would hold much of the file beside the
  // copies. From memory, memcpy. Errors name the file and the tensor (a file changed on disk
  // since open() may end early).
  Status copy_data(const SafeTensor& tensor, void* out) const;

  ~SafeTensorsFile();
  SafeTensorsFile(const SafeTensorsFile&) = delete;
  SafeTensorsFile& operator=(const SafeTensorsFile&) = delete;

 private:
  SafeTensorsFile() = default;
  // Validates the JSON header and fills `file`'s tensors (pointing into the `data_size` bytes of
  // the data region at `data`) and metadata.
  static Status parse(const std::string& path, const char* header_text, size_t header_size, const unsigned char* data,
                      uint64_t data_size, SafeTensorsFile* file);

  std::string path_;
  const unsigned char* map_ = nullptr;
  size_t map_size_ = 0;
  int fd_ = -1;  // open(): the file the mapping was made from, for copy_data
  std::vector<SafeTensor> tensors_;
  std::map<std::string, size_t> index_;  // name -> position in tensors_
  std::map<std::string, std::string> metadata_;
  std::vector<unsigned char> owned_;  // from_memory(): the copy the tensors point into
};

// Writes a safetensors file of F32 tensors whose data lies in the given order. Tensors are
// written in logical C order (an NHWC tensor is converted to NCHW first). Fails on duplicate or
// reserved ("__metadata__") names and on tensors without data.
Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

// A tensor of any safetensors dtype ("I8", "I32", "F32", ...) as its little-endian bytes in C order.
struct RawTensor {
  std::string name;
  std::string dtype;
  Shape shape;
  std::vector<unsigned char> bytes;  // shape.numel() x the dtype's size
};
// Writes tensors of any dtype, in the given order (quantized models: s8 weights, s32 biases).
// Fails as write_safetensors does, and on an unknown dtype or a byte count that does not match.
Status write_safetensors_raw(const std::string& path, const std::vector<RawTensor>& tensors,
                             const std::map<std::string, std::string>& metadata = {});

}  // namespace winfer
