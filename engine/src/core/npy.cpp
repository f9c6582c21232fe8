#include "winfer/npy.h"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <vector>

#include "file_io.h"

namespace winfer {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
constexpr size_t kAlignment = 64;  // NumPy pads the header so the data starts at a multiple of 64
constexpr int kMaxRank = 8;
constexpr int kMaxNesting = 8;  // tuples inside the header; NumPy's own headers nest one level

// ---- the header: a Python dict literal ------------------------------------------------------

// The subset of Python literals a .npy header uses: strings, True/False/None, integers and
// tuples/lists of those (a structured dtype's descr is a list of tuples).
struct PyValue {
  enum class Kind { kString, kBool, kNone, kInt, kSequence };
  Kind kind = Kind::kNone;
  std::string text;  // kString
  bool boolean = false;
  int64_t integer = 0;
  std::vector<PyValue> items;  // kSequence
};

class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : text_(text) {}

  // Parses "{'key': value, ...}" followed only by whitespace; duplicate keys are an error.
  Result<std::map<std::string, PyValue>> parse_dict() {
    std::map<std::string, PyValue> dict;
    skip_space();
    if (!consume('{')) return fail("expected '{'");
    while (true) {
      skip_space();
      if (consume('}')) break;
      PyValue key;
      WINFER_RETURN_IF_ERROR(parse_string(key));
      skip_space();
      if (!consume(':')) return fail("expected ':' after key '" + key.text + "'");
      PyValue value;
      WINFER_RETURN_IF_ERROR(parse_value(value, 0));
      if (!dict.emplace(key.text, std::move(value)).second) {
        return fail("duplicate key '" + key.text + "'");
      }
      skip_space();
      if (consume(',')) continue;
      if (consume('}')) break;
      return fail("expected ',' or '}'");
    }
    skip_space();
    if (pos_ != text_.size()) return fail("unexpected text after the dict");
    return dict;
  }

 private:
  Status fail(const std::string& what) const { return parse_error("at offset " + std::to_string(pos_) + ": " + what); }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consume_word(const char* word) {
    const size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  Status parse_value(PyValue& out, int depth) {
    skip_space();
    if (pos_ >= text_.size()) return fail("expected a value");
    const char c = text_[pos_];
    if (c == '\'' || c == '"') return parse_string(out);
    if (c == '(' || c == '[') return parse_sequence(out, depth);
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return parse_int(out);
    out = PyValue();
    if (consume_word("True")) {
      out.kind = PyValue::Kind::kBool;
      out.boolean = true;
    } else if (consume_word("False")) {
      out.kind = PyValue::Kind::kBool;
    } else if (!consume_word("None")) {
      return fail("expected a string, number, True, False, None or tuple");
    }
    return Status::Ok();
  }

  Status parse_string(PyValue& out) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return fail("expected a quoted string");
    }
    const char quote = text_[pos_++];
    out = PyValue();
    out.kind = PyValue::Kind::kString;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;  // keep the escaped char
      out.text.push_back(text_[pos_++]);
    }
    if (!consume(quote)) return fail("unterminated string");
    return Status::Ok();
  }

  Status parse_int(PyValue& out) {
    const bool negative = consume('-');
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      return fail("expected digits");
    }
    uint64_t magnitude = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      magnitude = magnitude * 10 + uint64_t(text_[pos_++] - '0');
      if (magnitude > uint64_t(std::numeric_limits<int64_t>::max())) return fail("integer too large");
    }
    consume('L');  // Python 2 era files write long integers as "3L"
    out = PyValue();
    out.kind = PyValue::Kind::kInt;
    out.integer = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
    return Status::Ok();
  }

  // "(a, b)", "(a,)", "()" and lists; the depth limit keeps hostile input off the C++ stack.
  Status parse_sequence(PyValue& out, int depth) {
    if (depth >= kMaxNesting) return fail("tuples nested too deeply");
    const char close = text_[pos_++] == '(' ? ')' : ']';
    out = PyValue();
    out.kind = PyValue::Kind::kSequence;
    while (true) {
      skip_space();
      if (consume(close)) return Status::Ok();
      PyValue item;
      WINFER_RETURN_IF_ERROR(parse_value(item, depth + 1));
      out.items.push_back(std::move(item));
      skip_space();
      if (consume(',')) continue;
      if (consume(close)) return Status::Ok();
      return fail(std::string("expected ',' or '") + close + "'");
    }
  }

  const std::string& text_;
  size_t pos_ = 0;
};

// What the header says about the array, once checked.
struct ArrayInfo {
  size_t element_bytes = 0;  // 4 for '<f4', 8 for '<f8'
  Shape shape;
};

// Printable form of a header for error messages (bounded, control characters escaped).
std::string printable(const std::string& header) {
  size_t end = header.size();  // the padding says nothing
  while (end > 0 && std::isspace(static_cast<unsigned char>(header[end - 1]))) --end;
  std::string out;
  for (size_t i = 0; i < end && out.size() < 200; ++i) {
    const unsigned char c = static_cast<unsigned char>(header[i]);
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c >= 0x7f)
      out += "?";
    else
      out.push_back(static_cast<char>(c));
  }
  return out;
}

Result<ArrayInfo> interpret_header(const std::string& path, const std::string& header) {
  Result<std::map<std::string, PyValue>> parsed = HeaderParser(header).parse_dict();
  if (!parsed.ok()) {
    return parse_error(path + ": malformed header " + parsed.status().message() + " in \"" + printable(header) + "\"");
  }
  const std::map<std::string, PyValue>& dict = parsed.value();
  for (const char* key : {"descr", "fortran_order", "shape"}) {
    if (dict.count(key) == 0) {
      return parse_error(path + ": malformed header: no '" + std::string(key) + "' in \"" + printable(header) + "\"");
    }
  }
  if (dict.size() != 3) {  // NumPy itself refuses headers with other keys
    return parse_error(path +
                       ": malformed header: keys other than 'descr', 'fortran_order' and "
                       "'shape' in \"" +
                       printable(header) + "\"");
  }

  ArrayInfo info;
  const PyValue& descr = dict.at("descr");
  const std::string expected = "; expected float32 '<f4' (or '<f8')";
  if (descr.kind != PyValue::Kind::kString) {
    return unsupported(path + ": structured dtype not supported" + expected);
  }
  if (descr.text == "<f4") {
    info.element_bytes = 4;
  } else if (descr.text == "<f8") {
    info.element_bytes = 8;
  } else {
    return unsupported(path + ": dtype '" + descr.text + "' not supported" + expected);
  }

  const PyValue& fortran = dict.at("fortran_order");
  if (fortran.kind != PyValue::Kind::kBool) {
    return parse_error(path + ": malformed header: 'fortran_order' must be True or False");
  }
  if (fortran.boolean) {
    return unsupported(path +
                       ": fortran_order True not supported; save a C-order array "
                       "(np.ascontiguousarray)");
  }

  const PyValue& shape = dict.at("shape");
  if (shape.kind != PyValue::Kind::kSequence) {
    return parse_error(path + ": malformed header: 'shape' must be a tuple");
  }
  std::vector<int64_t> dims;
  for (const PyValue& d : shape.items) {
    if (d.kind != PyValue::Kind::kInt) {
      return parse_error(path + ": malformed header: 'shape' must hold integers");
    }
    dims.push_back(d.integer);
  }
  if (dims.size() > size_t(kMaxRank)) {
    return unsupported(path + ": " + std::to_string(dims.size()) + " dims not supported; at most " +
                       std::to_string(kMaxRank));
  }
  Result<Shape> checked = Shape::make(dims);
  if (!checked.ok()) return parse_error(path + ": " + checked.status().message());
  info.shape = checked.value();
  return info;
}

// ---- the file around the header ---------------------------------------------------------------

// Where the header lies: checks the magic, the version and that the header fits in the file.
struct HeaderSpan {
  size_t begin;
  size_t length;
};

Result<HeaderSpan> locate_header(const std::string& path, const unsigned char* bytes, size_t size) {
  if (size < kMagicBytes + 4 || std::memcmp(bytes, kMagic, kMagicBytes) != 0) {
    return parse_error(path + ": not a .npy file (it does not start with \"\\x93NUMPY\")");
  }
  const int major = bytes[6];
  const int minor = bytes[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return unsupported(path + ": .npy version " + std::to_string(major) + "." + std::to_string(minor) +
                       " not supported; expected 1.0, 2.0 or 3.0");
  }
  HeaderSpan span{};
  if (major == 1) {
    span.begin = 10;
    span.length = detail::load_le_u16(bytes + 8);
  } else {
    span.begin = 12;
    if (size < span.begin) return parse_error(path + ": file ends inside the .npy header length");
    span.length = detail::load_le_u32(bytes + 8);
  }
  if (span.length > size - span.begin) {
    return parse_error(path + ": header length " + std::to_string(span.length) + " reaches beyond the file of " +
                       std::to_string(size) + " bytes");
  }
  return span;
}

void copy_elements(const unsigned char* src, size_t element_bytes, int64_t count, float* dst) {
  if (element_bytes == 4) {
    std::memcpy(dst, src, size_t(count) * 4);
    return;
  }
  for (int64_t i = 0; i < count; ++i) {  // '<f8': byte copies because src may be unaligned
    double d;
    std::memcpy(&d, src + size_t(i) * 8, 8);
    dst[i] = static_cast<float>(d);
  }
}

// "()", "(5,)", "(1, 3, 224, 224)": Python's repr of the shape tuple.
std::string shape_repr(const Shape& shape) {
  std::string s = "(";
  for (int i = 0; i < shape.rank(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.rank() == 1 ? ",)" : ")");
}

// Inputs and expected outputs: copied into a tensor of at most Shape::kMaxElements floats.
constexpr detail::InputKind kNpyInput{".npy file", uint64_t(16) << 30};  // 16 GiB

// An existing file is replaced only by a .npy file (its magic string) or when empty.
bool looks_like_npy(const std::string& head, uint64_t /*size*/) {
  return head.compare(0, kMagicBytes, kMagic, kMagicBytes) == 0;
}
const detail::OutputKind kNpyOutput{".npy file", "a .npy file", looks_like_npy};

}  // namespace

Result<Tensor> read_npy(const std::string& path) {
  WINFER_ASSIGN_OR_RETURN(detail::MappedFile file, detail::MappedFile::map(path, kNpyInput));
  WINFER_ASSIGN_OR_RETURN(HeaderSpan span, locate_header(path, file.data(), file.size()));
  const std::string header(reinterpret_cast<const char*>(file.data()) + span.begin, span.length);
  WINFER_ASSIGN_OR_RETURN(ArrayInfo info, interpret_header(path, header));

  // numel <= 2^40 and element_bytes <= 8: no overflow.
  const uint64_t expected = uint64_t(info.shape.numel()) * info.element_bytes;
  const uint64_t actual = file.size() - span.begin - span.length;
  if (actual != expected) {
    return parse_error(path + ": " + std::to_string(actual) + " data bytes after the header, but " + "shape " +
                       info.shape.to_string() + " of " + std::to_string(info.element_bytes) + "-byte floats needs " +
                       std::to_string(expected) + (actual < expected ? " (truncated file?)" : ""));
  }

  const Layout layout = info.shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain;
  Tensor t;
  try {
    t = Tensor::allocate(info.shape, layout);
  } catch (const std::bad_alloc&) {
    return io_error(path + ": out of memory for a tensor of " + info.shape.to_string());
  }
  copy_elements(file.data() + span.begin + span.length, info.element_bytes, t.numel(), t.data());
  return t;
}

Status check_npy_output(const std::string& path) { return detail::check_output_path(path, kNpyOutput); }

Status write_npy(const std::string& path, const Tensor& t) {
  if (t.empty()) return invalid_argument(path + ": tensor has no data");
  const Tensor logical = t.layout() == Layout::kNHWC ? t.to_layout(Layout::kNCHW) : t;

  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_repr(logical.shape()) + ", }";
  // Version 1.0 has a 16-bit header length; only absurdly many dims need 2.0's 32 bits.
  const bool v1 = header.size() + kAlignment < 65535;
  const size_t prefix = v1 ? 10 : 12;
  const size_t padded = (prefix + header.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
  header.append(padded - prefix - header.size() - 1, ' ');
  header.push_back('\n');

  unsigned char start[12];
  std::memcpy(start, kMagic, kMagicBytes);
  start[6] = v1 ? 1 : 2;
  start[7] = 0;
  detail::store_le(start + 8, header.size(), v1 ? 2 : 4);

  detail::FileWriter out(path, kNpyOutput);
  WINFER_RETURN_IF_ERROR(out.open());
  WINFER_RETURN_IF_ERROR(out.write(start, prefix));
  WINFER_RETURN_IF_ERROR(out.write(header.data(), header.size()));
  if (logical.bytes() != 0) WINFER_RETURN_IF_ERROR(out.write(logical.data(), logical.bytes()));
  return out.close();
}

}  // namespace winfer
