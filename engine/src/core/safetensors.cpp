#include "winfer/safetensors.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <nlohmann/json.hpp>

#include "file_io.h"

namespace winfer {

namespace {

using json = nlohmann::json;

constexpr size_t kLengthBytes = 8;
// The reference implementation refuses headers over 100 MB; a real header (a few hundred bytes
// per tensor) is far smaller, so anything larger is corrupt or hostile.
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;
// A CNN has hundreds of tensors (ResNet-152: 934); more than this is not a model winfer can run,
// and each entry costs an index slot and a name.
constexpr size_t kMaxTensors = size_t(1) << 16;
// The writer pads the header with spaces so that the data starts at a multiple of this, which
// keeps the first tensor aligned in the (page-aligned) mapping, as the reference writer does.
constexpr size_t kDataAlignment = 8;
const char* const kMetadataKey = "__metadata__";

struct DtypeSize {
  const char* name;
  size_t bytes;
};
constexpr DtypeSize kDtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
    {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8},
};

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// Finds the first key repeated within one JSON object, at any depth. A SAX pass of its own:
// nlohmann's parse callback (the obvious way to see keys) rescans the parent object after every
// child object, so a header of n tensors took O(n^2) time: 65536 tensors, a 4 MB header, kept
// open() busy for minutes (found by the limits test, tests/engine/error_catalogue_test.cpp).
class DuplicateKeyFinder : public nlohmann::json_sax<json> {
 public:
  std::string duplicate;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open_objects_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!open_objects_.back().insert(key).second && duplicate.empty()) duplicate = key;
    return duplicate.empty();  // stop at the first duplicate
  }
  bool end_object() override {
    open_objects_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  std::vector<std::set<std::string>> open_objects_;  // keys seen so far, innermost object last
};

// Parses the header, refusing duplicate keys at any level: nlohmann would silently keep the
// last one, and a duplicated tensor name would make "which data is conv1.weight?" ambiguous.
Result<json> parse_header_json(const std::string& path, const char* begin, const char* end) {
  json header;
  try {
    header = json::parse(begin, end);
  } catch (const json::exception& e) {
    return parse_error(path + ": header is not valid JSON: " + e.what());
  }
  DuplicateKeyFinder finder;  // the text is valid JSON now; this pass only looks at keys
  json::sax_parse(begin, end, &finder);
  if (!finder.duplicate.empty()) return parse_error(path + ": header has duplicate key " + in_quotes(finder.duplicate));
  if (!header.is_object()) {
    return parse_error(path + ": header must be a JSON object, got " + header.type_name());
  }
  return header;
}

// A field of a tensor entry with the expected JSON type, or a message saying what was found.
Result<const json*> get_field(const std::string& where, const json& entry, const char* key, json::value_t type) {
  auto it = entry.find(key);
  if (it == entry.end()) return parse_error(where + ": missing \"" + key + "\"");
  if (it->type() != type) {
    return parse_error(where + ": \"" + key + "\" must be " + json(type).type_name() + ", got " + it->type_name());
  }
  return &*it;
}

Result<Shape> read_shape(const std::string& where, const json& dims_json) {
  std::vector<int64_t> dims;
  for (const json& d : dims_json) {
    if (d.is_number_unsigned()) {
      // Values beyond int64 cannot be a real dimension; map them to a value Shape::make rejects.
      const uint64_t u = d.get<uint64_t>();
      dims.push_back(u > uint64_t(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                       : static_cast<int64_t>(u));
    } else if (d.is_number_integer()) {
      dims.push_back(d.get<int64_t>());
    } else {
      return parse_error(where + ": \"shape\" must hold integers, got " + d.dump());
    }
  }
  Result<Shape> shape = Shape::make(dims);
  if (!shape.ok()) return parse_error(where + ": " + shape.status().message());
  return shape;
}

struct ByteRange {
  uint64_t begin;
  uint64_t end;
};

Result<ByteRange> read_offsets(const std::string& where, const json& offsets, uint64_t data_size) {
  if (offsets.size() != 2 || !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
    return parse_error(where + ": \"data_offsets\" must be [begin, end] with non-negative integers, got " +
                       offsets.dump());
  }
  const ByteRange r{offsets[0].get<uint64_t>(), offsets[1].get<uint64_t>()};
  if (r.begin > r.end) {
    return parse_error(where + ": data_offsets begin " + std::to_string(r.begin) + " > end " + std::to_string(r.end));
  }
  if (r.end > data_size) {
    return parse_error(where + ": data_offsets end " + std::to_string(r.end) + " is beyond the data region of " +
                       std::to_string(data_size) + " bytes");
  }
  return r;
}

struct Entry {
  SafeTensor tensor;
  ByteRange range;
};

Result<Entry> read_entry(const std::string& path, const std::string& name, const json& entry, const unsigned char* data,
                         uint64_t data_size) {
  const std::string where = path + ": tensor " + in_quotes(name);
  if (!entry.is_object()) {
    return parse_error(where + ": entry must be an object, got " + entry.type_name());
  }
  WINFER_ASSIGN_OR_RETURN(const json* dtype, get_field(where, entry, "dtype", json::value_t::string));
  WINFER_ASSIGN_OR_RETURN(const json* dims, get_field(where, entry, "shape", json::value_t::array));
  WINFER_ASSIGN_OR_RETURN(const json* offsets, get_field(where, entry, "data_offsets", json::value_t::array));

  Entry e;
  e.tensor.name = name;
  e.tensor.dtype = dtype->get<std::string>();
  WINFER_ASSIGN_OR_RETURN(e.tensor.shape, read_shape(where, *dims));
  const size_t element_bytes = safetensors_dtype_size(e.tensor.dtype);
  if (element_bytes == 0) return unsupported(where + ": unknown dtype " + in_quotes(e.tensor.dtype));
  WINFER_ASSIGN_OR_RETURN(e.range, read_offsets(where, *offsets, data_size));

  // numel <= 2^40 (Shape::make) and element_bytes <= 8, so this cannot overflow.
  const uint64_t expected = uint64_t(e.tensor.shape.numel()) * element_bytes;
  const uint64_t actual = e.range.end - e.range.begin;
  if (actual != expected) {
    return parse_error(where + ": data_offsets span " + std::to_string(actual) + " bytes but " + e.tensor.dtype + " " +
                       e.tensor.shape.to_string() + " needs " + std::to_string(expected));
  }
  e.tensor.data = data + e.range.begin;
  e.tensor.byte_size = static_cast<size_t>(actual);
  return e;
}

Status read_metadata(const std::string& path, const json& value, std::map<std::string, std::string>& out) {
  if (!value.is_object()) {
    return parse_error(path + ": \"__metadata__\" must be an object, got " + value.type_name());
  }
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!it.value().is_string()) {
      return parse_error(path + ": \"__metadata__\" value of " + in_quotes(it.key()) + " must be a string, got " +
                         it.value().type_name());
    }
    out[it.key()] = it.value().get<std::string>();
  }
  return Status::Ok();
}

// Sorts by data offset and rejects two tensors sharing bytes: a writer never produces that, and
// an engine that prepares weights in place must not find one tensor aliasing another.
Status sort_and_check_overlap(const std::string& path, std::vector<Entry>& entries) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.range.begin != b.range.begin ? a.range.begin < b.range.begin : a.range.end < b.range.end;
  });
  const Entry* previous = nullptr;  // the non-empty range ending furthest so far
  for (const Entry& e : entries) {
    if (e.range.begin == e.range.end) continue;  // an empty tensor shares no bytes
    if (previous != nullptr && e.range.begin < previous->range.end) {
      return parse_error(path + ": data of tensors " + in_quotes(previous->tensor.name) + " [" +
                         std::to_string(previous->range.begin) + ", " + std::to_string(previous->range.end) + ") and " +
                         in_quotes(e.tensor.name) + " [" + std::to_string(e.range.begin) + ", " +
                         std::to_string(e.range.end) + ") overlap");
    }
    if (previous == nullptr || e.range.end > previous->range.end) previous = &e;
  }
  return Status::Ok();
}

// Checks the 8-byte length (`bytes`, read only when the file holds 8 bytes) and that the header
// fits in the file.
Result<uint64_t> read_header_length(const std::string& path, const unsigned char* bytes, size_t file_size) {
  if (file_size < kLengthBytes) {
    return parse_error(path + ": file is " + std::to_string(file_size) +
                       " bytes, too short for the 8-byte safetensors header length");
  }
  const uint64_t n = detail::load_le_u64(bytes);
  if (n > kMaxHeaderBytes) {
    return parse_error(path + ": header length " + std::to_string(n) + " is absurd (limit " +
                       std::to_string(kMaxHeaderBytes) + " bytes); not a safetensors file?");
  }
  if (n > file_size - kLengthBytes) {
    return parse_error(path + ": header length " + std::to_string(n) + " reaches beyond the file of " +
                       std::to_string(file_size) + " bytes");
  }
  return n;
}

}  // namespace

size_t safetensors_dtype_size(const std::string& dtype) {
  for (const DtypeSize& d : kDtypes) {
    if (dtype == d.name) return d.bytes;
  }
  return 0;
}

Status SafeTensorsFile::parse(const std::string& path, const char* header_text, size_t header_size,
                              const unsigned char* data, uint64_t data_size, SafeTensorsFile* file) {
  WINFER_ASSIGN_OR_RETURN(json header, parse_header_json(path, header_text, header_text + header_size));
  if (header.size() > kMaxTensors + (header.contains(kMetadataKey) ? 1 : 0)) {
    return parse_error(path + ": the header lists " + std::to_string(header.size()) +
                       " entries, more than the limit of " + std::to_string(kMaxTensors) + " tensors");
  }

  file->path_ = path;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kMetadataKey) {
      WINFER_RETURN_IF_ERROR(read_metadata(path, it.value(), file->metadata_));
      continue;
    }
    WINFER_ASSIGN_OR_RETURN(Entry e, read_entry(path, it.key(), it.value(), data, data_size));
    entries.push_back(std::move(e));
  }
  WINFER_RETURN_IF_ERROR(sort_and_check_overlap(path, entries));

  for (Entry& e : entries) {
    file->index_[e.tensor.name] = file->tensors_.size();
    file->tensors_.push_back(std::move(e.tensor));
  }
  return Status::Ok();
}

namespace {

// Weights are mapped, not read: the limit only bounds what a corrupt path can make winfer map.
constexpr detail::InputKind kSafetensorsInput{"weights file", uint64_t(64) << 30};  // 64 GiB

// An existing file is replaced only by a safetensors file: its 8-byte header length is plausible
// and the header starts as a JSON object.
bool looks_like_safetensors(const std::string& head, uint64_t size) {
  if (head.size() < kLengthBytes + 1) return false;
  const uint64_t length = detail::load_le_u64(reinterpret_cast<const unsigned char*>(head.data()));
  return length <= size - kLengthBytes && head[kLengthBytes] == '{';
}
const detail::OutputKind kSafetensorsOutput{"safetensors file", "a safetensors file", looks_like_safetensors};

}  // namespace

// The length and the header are read with pread, not through the mapping: a fault there would
// map the cached pages around the header, the first weights among them (a large folio whole when
// the file was just written), and they would stay resident beside the packed copies (the ONNX
// walk's defect, fixed in session 31; docs/MEMORY.md, "Loading"). Tensors still point into the
// mapping, which copy_data translates back to file offsets.
Result<std::shared_ptr<const SafeTensorsFile>> SafeTensorsFile::open(const std::string& path) {
  WINFER_ASSIGN_OR_RETURN(detail::MappedFile mapped, detail::MappedFile::map(path, kSafetensorsInput));
  unsigned char length[kLengthBytes] = {};
  if (mapped.size() >= kLengthBytes) {
    WINFER_RETURN_IF_ERROR(detail::read_at(mapped.fd(), path, "the header length", 0, kLengthBytes, length));
  }
  WINFER_ASSIGN_OR_RETURN(const uint64_t header_size, read_header_length(path, length, mapped.size()));
  std::string header(header_size, '\0');
  WINFER_RETURN_IF_ERROR(detail::read_at(mapped.fd(), path, "the header", kLengthBytes, header_size, &header[0]));
  std::shared_ptr<SafeTensorsFile> file(new SafeTensorsFile());
  const uint64_t data_offset = kLengthBytes + header_size;
  WINFER_RETURN_IF_ERROR(
      parse(path, header.data(), header.size(), mapped.data() + data_offset, mapped.size() - data_offset, file.get()));
  // Hand the mapping over to the file object only now that everything is valid.
  file->map_size_ = mapped.size();
  file->map_ = mapped.data();
  file->fd_ = mapped.release_fd();
  mapped.release();
  return std::shared_ptr<const SafeTensorsFile>(std::move(file));
}

Result<std::shared_ptr<const SafeTensorsFile>> SafeTensorsFile::from_memory(const void* data, size_t size,
                                                                            const std::string& name) {
  if (data == nullptr && size > 0) return invalid_argument(name + ": null data of " + std::to_string(size) + " bytes");
  std::shared_ptr<SafeTensorsFile> file(new SafeTensorsFile());
  const auto* bytes = static_cast<const unsigned char*>(data);
  file->owned_.assign(bytes, bytes + size);  // tensors point into this copy, never resized again
  const unsigned char* owned = file->owned_.data();
  WINFER_ASSIGN_OR_RETURN(const uint64_t header_size, read_header_length(name, owned, size));
  const uint64_t data_offset = kLengthBytes + header_size;
  WINFER_RETURN_IF_ERROR(parse(name, reinterpret_cast<const char*>(owned + kLengthBytes), header_size,
                               owned + data_offset, size - data_offset, file.get()));
  return std::shared_ptr<const SafeTensorsFile>(std::move(file));
}

Status SafeTensorsFile::copy_data(const SafeTensor& tensor, void* out) const {
  const auto* bytes = static_cast<const unsigned char*>(tensor.data);
  if (fd_ >= 0 && map_ != nullptr) {
    return detail::read_at(fd_, path_, "tensor '" + tensor.name + "'", static_cast<uint64_t>(bytes - map_),
                           tensor.byte_size, out);
  }
  if (tensor.byte_size > 0) std::memcpy(out, bytes, tensor.byte_size);
  return Status::Ok();
}

SafeTensorsFile::~SafeTensorsFile() {
  if (fd_ >= 0) ::close(fd_);
  if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), map_size_);
}

const SafeTensor* SafeTensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// One tensor to write: its header entry and where its bytes are.
struct TensorToWrite {
  const std::string* name;
  const char* dtype;
  const Shape* shape;
  const void* data;
  uint64_t bytes;
};

Status write_file(const std::string& path, const std::vector<TensorToWrite>& tensors,
                  const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    header[*t.name] = {{"dtype", t.dtype}, {"shape", t.shape->dims()}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  if (!metadata.empty()) header[kMetadataKey] = metadata;

  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {  // names or metadata that are not valid UTF-8
    return invalid_argument(path + ": cannot encode the header: " + e.what());
  }
  while ((kLengthBytes + text.size()) % kDataAlignment != 0) text.push_back(' ');

  unsigned char length[kLengthBytes];
  detail::store_le(length, text.size(), kLengthBytes);
  detail::FileWriter out(path, kSafetensorsOutput);
  WINFER_RETURN_IF_ERROR(out.open());
  WINFER_RETURN_IF_ERROR(out.write(length, kLengthBytes));
  WINFER_RETURN_IF_ERROR(out.write(text.data(), text.size()));
  for (const TensorToWrite& t : tensors) {
    if (t.bytes != 0) WINFER_RETURN_IF_ERROR(out.write(t.data, t.bytes));
  }
  return out.close();
}

Status check_name(const std::string& path, const std::string& name, std::set<std::string>* seen) {
  const std::string where = path + ": tensor " + in_quotes(name);
  if (name == kMetadataKey) return invalid_argument(where + ": the name is reserved");
  if (!seen->insert(name).second) return invalid_argument(where + ": duplicate name");
  return Status::Ok();
}

}  // namespace

Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  // Logical C order: an NHWC activation is stored as its NCHW equivalent.
  std::vector<Tensor> logical;
  logical.reserve(tensors.size());
  std::vector<TensorToWrite> entries;
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    WINFER_RETURN_IF_ERROR(check_name(path, name, &seen));
    if (tensor.empty()) {
      return invalid_argument(path + ": tensor " + in_quotes(name) + ": tensor has no data");
    }
    logical.push_back(tensor.layout() == Layout::kNHWC ? tensor.to_layout(Layout::kNCHW) : tensor);
    entries.push_back({&name, "F32", &tensor.shape(), logical.back().data(), logical.back().bytes()});
  }
  return write_file(path, entries, metadata);
}

Status write_safetensors_raw(const std::string& path, const std::vector<RawTensor>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  std::vector<TensorToWrite> entries;
  std::set<std::string> seen;
  for (const RawTensor& t : tensors) {
    WINFER_RETURN_IF_ERROR(check_name(path, t.name, &seen));
    const std::string where = path + ": tensor " + in_quotes(t.name);
    const size_t element = safetensors_dtype_size(t.dtype);
    if (element == 0) return invalid_argument(where + ": unknown dtype " + in_quotes(t.dtype));
    if (t.bytes.size() != static_cast<size_t>(t.shape.numel()) * element) {
      return invalid_argument(where + ": " + std::to_string(t.bytes.size()) + " bytes of data, expected " +
                              std::to_string(t.shape.numel()) + " x " + std::to_string(element) + " for " + t.dtype +
                              " " + t.shape.to_string());
    }
    entries.push_back({&t.name, t.dtype.c_str(), &t.shape, t.bytes.data(), t.bytes.size()});
  }
  return write_file(path, entries, metadata);
}

}  // namespace winfer
