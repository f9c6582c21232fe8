// OnnxFile: an ONNX model file opened for import. The file is memory-mapped and parsed once by
// protobuf (the lite runtime, from Debian's onnx.proto), all but the raw_data of the graph's
// initializers: a walk over the wire format notes where those bytes lie in the file and hands
// protobuf a copy without them, so the parse is quick and the weights are read from the file
// one tensor at a time when a layer asks (pread: none of its pages enter the resident set, so
// the process never holds a model's weights twice). Tensors whose data lies in external files
// (`data_location: EXTERNAL`) are read from those files, memory-mapped, the same way.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/src/core/file_io.h"
#include "onnx/onnx.pb.h"
#include "winfer/status.h"

namespace winfer::onnx_import {

// Limits (docs/ERRORS.md, "Limits"): protobuf parses at most 2 GiB - 1 bytes in one message;
// larger models keep their weights in external data files, which may be up to 256 GiB each.
constexpr uint64_t kMaxOnnxFileBytes = (uint64_t(1) << 31) - 1;
constexpr uint64_t kMaxExternalDataBytes = uint64_t(256) << 30;
constexpr int kMaxGraphNodes = 100000;
constexpr int64_t kOldestOpset = 7, kNewestOpset = 18;

class OnnxFile {
 public:
  // Parses `path`; refuses files that are not ONNX models (truncated, another format) with the
  // file's name and what protobuf or the checks found.
  // `confine_to` (LoadOptions::confine_to): when not empty, external data files must resolve
  // (symlinks followed) inside that folder, as a YAML model's weights and labels files must.
  static Result<std::unique_ptr<OnnxFile>> open(const std::string& path, const std::string& confine_to = "");

  const std::string& path() const { return path_; }
  const onnx::ModelProto& model() const { return model_; }
  const onnx::GraphProto& graph() const { return model_.graph(); }
  onnx::GraphProto* mutable_graph() { return model_.mutable_graph(); }
  // The version of the default operator set ("" or "ai.onnx") the model imports.
  int64_t opset() const { return opset_; }

  // The element count of a tensor's declared dims, checked (dims >= 0, product within
  // Shape::kMaxElements); `what` names the tensor in errors.
  Result<int64_t> element_count(const onnx::TensorProto& tensor, const std::string& what) const;
  // Copies a FLOAT tensor's `count` values into `out` from raw_data, float_data or its external
  // file; fails naming the tensor when the type is not float32 or the bytes disagree with dims.
  Status read_floats(const onnx::TensorProto& tensor, const std::string& what, float* out, int64_t count);
  // The checks of read_floats without the copy: callers run it before they allocate `count`
  // floats, so that a tiny file whose dims promise terabytes is refused, not allocated for.
  Status check_floats(const onnx::TensorProto& tensor, const std::string& what, int64_t count);
  // The values of an INT64, INT32 or FLOAT tensor as int64 / double (small constants: shapes,
  // axes, clip bounds).
  Result<std::vector<int64_t>> read_ints(const onnx::TensorProto& tensor, const std::string& what);
  Result<std::vector<double>> read_doubles(const onnx::TensorProto& tensor, const std::string& what);

 private:
  OnnxFile() = default;
  Status check_header();
  // The bytes of an external tensor: its file (relative to the model's folder, which it may not
  // leave), offset and length, checked against the file's size.
  Result<const unsigned char*> external_bytes(const onnx::TensorProto& tensor, const std::string& what,
                                              uint64_t expected_bytes);
  // The raw little-endian bytes of a tensor (raw_data or external), or null with *has_raw false
  // when its values are in the typed fields.
  Result<const unsigned char*> raw_bytes(const onnx::TensorProto& tensor, const std::string& what,
                                         uint64_t expected_bytes, bool* has_raw);
  // The mapping (the model file's or an external data file's) that holds `bytes`, with its path;
  // null if none.
  const detail::MappedFile* mapping_of(const unsigned char* bytes, std::string* path) const;

  std::string path_;
  std::string confine_to_;
  detail::MappedFile mapped_;  // the file itself, for the initializers' raw_data
  // Initializers whose raw_data was left in the file (not parsed): where it lies and its bytes.
  std::map<const onnx::TensorProto*, std::pair<const unsigned char*, uint64_t>> raw_in_file_;
  onnx::ModelProto model_;
  int64_t opset_ = 0;
  std::map<std::string, detail::MappedFile> external_files_;  // by resolved path
};

// ONNX's name of a TensorProto data type ("FLOAT", "INT64", ...), for messages.
std::string data_type_name(int32_t type);

}  // namespace winfer::onnx_import
