#include "engine/src/onnx/onnx_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "winfer/shape.h"

namespace winfer::onnx_import {
namespace fs = std::filesystem;

namespace {

constexpr detail::InputKind kOnnxFile{"ONNX model file", kMaxOnnxFileBytes};
constexpr detail::InputKind kExternalDataFile{"ONNX external data file", kMaxExternalDataBytes};

uint64_t element_size(int32_t type) {
  switch (type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32: return 4;
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::DOUBLE: return 8;
    default: return 0;
  }
}

// ---- the initializers' raw_data, located without copying -----------------------------------
// A plain walk over protobuf's wire format (tag varint, then a varint, 8 or 4 bytes, or a
// length-prefixed payload). It copies the model without the raw_data of the graph's initializers
// (ModelProto.graph = 7, GraphProto.initializer = 5, TensorProto.raw_data = 9) and notes where
// each one's bytes lie in the file, so that protobuf parses kilobytes instead of the weights and
// the weights are read from the file one tensor at a time. Anything the walk does not understand
// (groups, a truncated field) makes it give up: protobuf then parses the whole file as before
// and says what is wrong with it.
//
// The walk reads the file with pread (FileBlocks), not through its mapping: each tensor's header
// lies beside its weights, and a mapping's fault maps the cached pages around it, a large folio
// whole. Walked through the mapping, RegNetY-400MF's 17 MB ONNX file, freshly written (its page
// cache in large folios), left 12 MiB of it resident during the load; the same file read back
// after eviction 0.1 MiB (docs/PERFORMANCE.md, session 31).

// The file in blocks read on demand: byte_at and append read only the blocks they need, and a
// payload skipped over (the weights) is never read.
class FileBlocks {
 public:
  FileBlocks(int fd, uint64_t size) : fd_(fd), size_(size) {}

  bool byte_at(uint64_t offset, unsigned char* out) {
    if (offset >= size_) return false;
    if (offset < block_begin_ || offset >= block_begin_ + block_.size()) {
      const uint64_t begin = offset - offset % kBlockBytes;
      block_.resize(static_cast<size_t>(std::min<uint64_t>(kBlockBytes, size_ - begin)));
      if (!read(begin, block_.size(), block_.data())) return false;
      block_begin_ = begin;
    }
    *out = block_[static_cast<size_t>(offset - block_begin_)];
    return true;
  }

  // Appends bytes [offset, offset + n) of the file to *out.
  bool append(uint64_t offset, uint64_t n, std::string* out) {
    if (n > size_ || offset > size_ - n) return false;
    const size_t at = out->size();
    out->resize(at + static_cast<size_t>(n));
    if (offset >= block_begin_ && offset + n <= block_begin_ + block_.size()) {
      std::memcpy(&(*out)[at], block_.data() + (offset - block_begin_), static_cast<size_t>(n));
      return true;
    }
    return read(offset, static_cast<size_t>(n), &(*out)[at]);
  }

 private:
  static constexpr uint64_t kBlockBytes = 16 * 1024;

  bool read(uint64_t offset, size_t n, void* out) const {
    // An error here (the file shrank, an I/O error) ends the walk; protobuf's parse of the
    // mapping then meets the same file and reports it.
    return detail::read_at(fd_, std::string(), std::string(), offset, n, out).ok();
  }

  int fd_;
  uint64_t size_;
  uint64_t block_begin_ = 0;
  std::vector<unsigned char> block_;
};

bool read_varint(FileBlocks& file, uint64_t& p, uint64_t end, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    unsigned char b = 0;
    if (p >= end || !file.byte_at(p, &b)) return false;
    ++p;
    *value |= uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

void write_varint(std::string* out, uint64_t value) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// A field's extent, as offsets in the file.
struct WireField {
  uint64_t number = 0;
  int type = 0;
  uint64_t start = 0;    // the tag's first byte
  uint64_t payload = 0;  // length-delimited fields: the bytes after the length
  uint64_t end = 0;      // one past the field
};

bool next_field(FileBlocks& file, uint64_t& p, uint64_t end, WireField* f) {
  f->start = p;
  uint64_t tag = 0;
  if (!read_varint(file, p, end, &tag)) return false;
  f->number = tag >> 3;
  f->type = static_cast<int>(tag & 7);
  if (f->number == 0) return false;
  uint64_t n = 0;
  switch (f->type) {
    case 0:
      if (!read_varint(file, p, end, &n)) return false;
      break;
    case 1:
      if (end - p < 8) return false;
      p += 8;
      break;
    case 5:
      if (end - p < 4) return false;
      p += 4;
      break;
    case 2:
      if (!read_varint(file, p, end, &n) || n > end - p) return false;
      f->payload = p;
      p += n;
      break;
    default: return false;  // groups (deprecated): left to protobuf
  }
  f->end = p;
  return true;
}

void append_field(std::string* out, uint64_t number, const std::string& payload) {
  write_varint(out, (number << 3) | 2);
  write_varint(out, payload.size());
  out->append(payload);
}

struct RawSpan {
  bool present = false;
  uint64_t offset = 0;  // in the file
  uint64_t size = 0;
};

bool strip_tensor(FileBlocks& file, uint64_t p, uint64_t end, std::string* out, RawSpan* raw) {
  while (p < end) {
    WireField f;
    if (!next_field(file, p, end, &f)) return false;
    if (f.number == 9 && f.type == 2) {  // raw_data: the last one wins, as when protobuf parses
      *raw = RawSpan{true, f.payload, f.end - f.payload};
    } else if (!file.append(f.start, f.end - f.start, out)) {
      return false;
    }
  }
  return true;
}

bool strip_graph(FileBlocks& file, uint64_t p, uint64_t end, std::string* out, std::vector<RawSpan>* spans) {
  std::string tensor;
  while (p < end) {
    WireField f;
    if (!next_field(file, p, end, &f)) return false;
    if (f.number == 5 && f.type == 2) {
      tensor.clear();
      RawSpan raw;
      if (!strip_tensor(file, f.payload, f.end, &tensor, &raw)) return false;
      append_field(out, 5, tensor);
      spans->push_back(raw);
    } else if (!file.append(f.start, f.end - f.start, out)) {
      return false;
    }
  }
  return true;
}

// The model without its initializers' raw_data, and where each initializer's lies (in the order
// protobuf will list them: several `graph` fields merge, their initializers concatenated).
bool strip_model(FileBlocks& file, uint64_t size, std::string* out, std::vector<RawSpan>* spans) {
  std::string graph;
  uint64_t p = 0;
  while (p < size) {
    WireField f;
    if (!next_field(file, p, size, &f)) return false;
    if (f.number == 7 && f.type == 2) {
      graph.clear();
      if (!strip_graph(file, f.payload, f.end, &graph, spans)) return false;
      append_field(out, 7, graph);
    } else if (!file.append(f.start, f.end - f.start, out)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string data_type_name(int32_t type) {
  if (onnx::TensorProto_DataType_IsValid(type)) {
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(type));
  }
  return "data type " + std::to_string(type);
}

Result<std::unique_ptr<OnnxFile>> OnnxFile::open(const std::string& path, const std::string& confine_to) {
  std::unique_ptr<OnnxFile> file(new OnnxFile());
  file->path_ = path;
  file->confine_to_ = confine_to;
  // The file stays mapped while the model is imported, but is read with pread, never through
  // the mapping: protobuf parses a copy without the initializers' raw_data (strip_model), whose
  // bytes are read from the file (at their offsets in the mapping) when a layer asks for them
  // (read_floats). Only a file the walk does not understand is parsed from the mapping.
  WINFER_ASSIGN_OR_RETURN(file->mapped_, detail::MappedFile::map(path, kOnnxFile));
  const detail::MappedFile& mapped = file->mapped_;
  if (mapped.size() == 0) return parse_error(path + ": the file is empty; expected an ONNX model (protobuf)");
  std::string stripped;
  std::vector<RawSpan> spans;
  FileBlocks blocks(mapped.fd(), mapped.size());
  const bool walked = strip_model(blocks, mapped.size(), &stripped, &spans);
  bool parsed = walked && file->model_.ParseFromString(stripped) &&
                file->model_.graph().initializer_size() == static_cast<int>(spans.size());
  if (parsed) {
    for (size_t i = 0; i < spans.size(); ++i) {  // (mutable_graph() only where there is one: it would add it)
      onnx::TensorProto* tensor = file->model_.mutable_graph()->mutable_initializer(int(i));
      if (spans[i].present) file->raw_in_file_[tensor] = {mapped.data() + spans[i].offset, spans[i].size};
    }
  } else {
    // Not what the walk expects: protobuf parses the whole file (copying the weights) and
    // judges it.
    file->model_.Clear();
    file->raw_in_file_.clear();
    if (!file->model_.ParseFromArray(mapped.data(), static_cast<int>(mapped.size()))) {
      return parse_error(path + ": not an ONNX model: protobuf cannot parse its " + std::to_string(mapped.size()) +
                         " bytes as an onnx.ModelProto (a truncated file, or another format)");
    }
  }
  std::string().swap(stripped);
  WINFER_RETURN_IF_ERROR(file->check_header());
  return file;
}

Status OnnxFile::check_header() {
  if (!model_.has_graph()) {
    return parse_error(path_ + ": not an ONNX model: it has no graph (ir_version " +
                       std::to_string(model_.ir_version()) + "; a file of another format may parse as an empty model)");
  }
  if (model_.ir_version() <= 0) return parse_error(path_ + ": not an ONNX model: ir_version is missing");
  opset_ = 0;
  for (const onnx::OperatorSetIdProto& set : model_.opset_import()) {
    if (set.domain().empty() || set.domain() == "ai.onnx") opset_ = set.version();
  }
  if (opset_ == 0) {
    return unsupported(path_ + ": the model imports no version of the default ONNX operator set (opset_import)");
  }
  if (opset_ < kOldestOpset || opset_ > kNewestOpset) {
    return unsupported(path_ + ": opset " + std::to_string(opset_) + " is outside the versions winfer reads (" +
                       std::to_string(kOldestOpset) + " to " + std::to_string(kNewestOpset) +
                       "); re-export with e.g. torch.onnx.export(..., opset_version=17)");
  }
  if (model_.graph().node_size() > kMaxGraphNodes) {
    return invalid_argument(path_ + ": the graph has " + std::to_string(model_.graph().node_size()) +
                            " nodes, more than the limit of " + std::to_string(kMaxGraphNodes));
  }
  return Status::Ok();
}

Result<int64_t> OnnxFile::element_count(const onnx::TensorProto& tensor, const std::string& what) const {
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  for (int64_t d : dims) {
    if (d < 0) return invalid_argument(path_ + ": " + what + " has a negative dim " + Shape(dims).to_string());
  }
  if (dims.empty()) return int64_t(1);
  auto shape = Shape::make(dims);
  if (!shape.ok()) return Status(shape.status()).with_context(path_ + ": " + what);
  return shape.value().numel();
}

Result<const unsigned char*> OnnxFile::external_bytes(const onnx::TensorProto& tensor, const std::string& what,
                                                      uint64_t expected_bytes) {
  std::string location;
  uint64_t offset = 0, length = 0;
  bool has_length = false;
  for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
    const std::string& key = entry.key();
    if (key == "location") {
      location = entry.value();
    } else if (key == "offset" || key == "length") {
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(entry.value().c_str(), &end, 10);
      if (entry.value().empty() || *end != '\0' || errno != 0 || entry.value()[0] == '-') {
        return invalid_argument(path_ + ": " + what + ": external_data " + key + " '" + entry.value() +
                                "' is not a byte count");
      }
      (key == "offset" ? offset : length) = v;
      if (key == "length") has_length = true;
    }
  }
  if (location.empty()) return invalid_argument(path_ + ": " + what + " is EXTERNAL but names no location");
  const fs::path relative = fs::path(location).lexically_normal();
  if (relative.is_absolute() || relative.empty() || *relative.begin() == "..") {
    return invalid_argument(path_ + ": " + what + ": external data location '" + location +
                            "' must be a path inside the model's folder");
  }
  const std::string file_path = (fs::path(path_).parent_path() / relative).string();
  if (!confine_to_.empty()) {
    // As for a YAML model's side files: resolved with symlinks, it must lie inside the folder.
    std::error_code root_error, path_error;
    const fs::path root = fs::weakly_canonical(confine_to_, root_error);
    const fs::path resolved = fs::weakly_canonical(file_path, path_error);
    const bool inside = !root_error && !path_error &&
                        std::mismatch(root.begin(), root.end(), resolved.begin(), resolved.end()).first == root.end();
    if (!inside) {
      return invalid_argument(path_ + ": " + what + ": external data '" + location + "' resolves to '" +
                              resolved.string() + "', outside the folder '" + root.string() +
                              "' that model files may name (--confine-to, LoadOptions::confine_to)");
    }
  }
  auto it = external_files_.find(file_path);
  if (it == external_files_.end()) {
    auto mapped = detail::MappedFile::map(file_path, kExternalDataFile);
    if (!mapped.ok()) return Status(mapped.status()).with_context(path_ + ": " + what);
    it = external_files_.emplace(file_path, std::move(mapped).value()).first;
  }
  const uint64_t size = it->second.size();
  if (!has_length) length = offset <= size ? size - offset : 0;
  if (length != expected_bytes) {
    return invalid_argument(path_ + ": " + what + ": external data holds " + std::to_string(length) +
                            " bytes, but its dims and type need " + std::to_string(expected_bytes));
  }
  if (offset > size || length > size - offset) {
    return invalid_argument(path_ + ": " + what + ": external data file '" + file_path + "' is " +
                            std::to_string(size) + " bytes, too short for " + std::to_string(length) +
                            " bytes at offset " + std::to_string(offset));
  }
  return it->second.data() + offset;
}

Result<const unsigned char*> OnnxFile::raw_bytes(const onnx::TensorProto& tensor, const std::string& what,
                                                 uint64_t expected_bytes, bool* has_raw) {
  *has_raw = true;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) return external_bytes(tensor, what, expected_bytes);
  auto in_file = raw_in_file_.find(&tensor);
  if (in_file != raw_in_file_.end()) {
    if (in_file->second.second != expected_bytes) {
      return invalid_argument(path_ + ": " + what + " has " + std::to_string(in_file->second.second) +
                              " bytes of raw_data, but its dims and type need " + std::to_string(expected_bytes));
    }
    return in_file->second.first;
  }
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != expected_bytes) {
      return invalid_argument(path_ + ": " + what + " has " + std::to_string(tensor.raw_data().size()) +
                              " bytes of raw_data, but its dims and type need " + std::to_string(expected_bytes));
    }
    return reinterpret_cast<const unsigned char*>(tensor.raw_data().data());
  }
  *has_raw = false;
  return static_cast<const unsigned char*>(nullptr);
}

Status OnnxFile::check_floats(const onnx::TensorProto& tensor, const std::string& what, int64_t count) {
  if (tensor.data_type() != onnx::TensorProto::FLOAT) {
    return unsupported(path_ + ": " + what + " is " + data_type_name(tensor.data_type()) +
                       "; winfer reads float32 (FLOAT) weights only");
  }
  bool has_raw = false;
  WINFER_RETURN_IF_ERROR(raw_bytes(tensor, what, uint64_t(count) * 4, &has_raw).status());
  if (!has_raw && tensor.float_data_size() != count) {
    return invalid_argument(path_ + ": " + what + " has " + std::to_string(tensor.float_data_size()) +
                            " values in float_data, but its dims need " + std::to_string(count));
  }
  return Status::Ok();
}

const detail::MappedFile* OnnxFile::mapping_of(const unsigned char* bytes, std::string* path) const {
  const auto holds = [bytes](const detail::MappedFile& m) {
    return m.data() != nullptr && bytes >= m.data() && bytes < m.data() + m.size();
  };
  if (holds(mapped_)) {
    *path = path_;
    return &mapped_;
  }
  for (const auto& [file, m] : external_files_) {
    if (holds(m)) {
      *path = file;
      return &m;
    }
  }
  return nullptr;
}

Status OnnxFile::read_floats(const onnx::TensorProto& tensor, const std::string& what, float* out, int64_t count) {
  WINFER_RETURN_IF_ERROR(check_floats(tensor, what, count));
  bool has_raw = false;
  WINFER_ASSIGN_OR_RETURN(const unsigned char* bytes, raw_bytes(tensor, what, uint64_t(count) * 4, &has_raw));
  if (has_raw) {
    // Little-endian, as ONNX stores it. Bytes in a mapped file (the model's own raw_data, an
    // external data file) are read from the file with pread, not through the mapping: no page
    // faults, and none of the file's pages enter the resident set (safetensors.h, copy_data).
    const bool in_file = tensor.data_location() == onnx::TensorProto::EXTERNAL || raw_in_file_.count(&tensor) != 0;
    if (count > 0 && in_file) {
      std::string file;
      const detail::MappedFile* mapping = mapping_of(bytes, &file);
      if (mapping == nullptr || mapping->fd() < 0) {
        return internal_error(path_ + ": " + what + ": its raw data lies in no file mapped for it");
      }
      return detail::read_at(mapping->fd(), file, what, static_cast<uint64_t>(bytes - mapping->data()),
                             size_t(count) * 4, out);
    } else if (count > 0) {
      std::memcpy(out, bytes, size_t(count) * 4);
    }
    return Status::Ok();
  }
  std::copy(tensor.float_data().begin(), tensor.float_data().end(), out);
  return Status::Ok();
}

Result<std::vector<double>> OnnxFile::read_doubles(const onnx::TensorProto& tensor, const std::string& what) {
  if (tensor.data_type() == onnx::TensorProto::FLOAT) {
    WINFER_ASSIGN_OR_RETURN(int64_t count, element_count(tensor, what));
    WINFER_RETURN_IF_ERROR(check_floats(tensor, what, count));
    std::vector<float> values(static_cast<size_t>(count));
    WINFER_RETURN_IF_ERROR(read_floats(tensor, what, values.data(), count));
    return std::vector<double>(values.begin(), values.end());
  }
  WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> ints, read_ints(tensor, what));
  return std::vector<double>(ints.begin(), ints.end());
}

Result<std::vector<int64_t>> OnnxFile::read_ints(const onnx::TensorProto& tensor, const std::string& what) {
  const int32_t type = tensor.data_type();
  if (type == onnx::TensorProto::FLOAT) {
    WINFER_ASSIGN_OR_RETURN(std::vector<double> values, read_doubles(tensor, what));
    return std::vector<int64_t>(values.begin(), values.end());
  }
  if (type != onnx::TensorProto::INT64 && type != onnx::TensorProto::INT32) {
    return unsupported(path_ + ": " + what + " is " + data_type_name(type) +
                       "; winfer reads INT64, INT32 and FLOAT constants only");
  }
  WINFER_ASSIGN_OR_RETURN(int64_t count, element_count(tensor, what));
  bool has_raw = false;
  WINFER_ASSIGN_OR_RETURN(const unsigned char* bytes,
                          raw_bytes(tensor, what, uint64_t(count) * element_size(type), &has_raw));
  const int typed = type == onnx::TensorProto::INT64 ? tensor.int64_data_size() : tensor.int32_data_size();
  if (!has_raw && typed != count) {
    return invalid_argument(path_ + ": " + what + " has " + std::to_string(typed) + " values, but its dims need " +
                            std::to_string(count));
  }
  std::vector<int64_t> values(static_cast<size_t>(count));  // only for values the file holds
  if (has_raw) {
    for (int64_t i = 0; i < count; ++i) {
      if (type == onnx::TensorProto::INT64) {
        std::memcpy(&values[i], bytes + i * 8, 8);
      } else {
        int32_t v = 0;
        std::memcpy(&v, bytes + i * 4, 4);
        values[i] = v;
      }
    }
    return values;
  }
  for (int64_t i = 0; i < count; ++i) {
    values[i] = type == onnx::TensorProto::INT64 ? tensor.int64_data(int(i)) : tensor.int32_data(int(i));
  }
  return values;
}

}  // namespace winfer::onnx_import
