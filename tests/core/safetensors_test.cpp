#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "core/test_files.h"
#include "winfer/safetensors.h"

using namespace winfer;
using winfer_test::contains;
using winfer_test::le_bytes;
using winfer_test::random_tensor;
using winfer_test::TempDir;
using winfer_test::write_bytes;

namespace {

// A safetensors file from a header text and data bytes; `length` overrides the header length.
std::string st_bytes(const std::string& header, const std::string& data = "", uint64_t length = UINT64_MAX) {
  return le_bytes(length == UINT64_MAX ? header.size() : length, 8) + header + data;
}

// Opens `bytes` written to a file named `name` and returns the failure; the test then checks the
// code and that the message names the file.
Status open_status(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.file(name);
  write_bytes(path, bytes);
  auto file = SafeTensorsFile::open(path);
  if (file.ok()) return Status::Ok();
  return file.status();
}

// Checks an open() failure: code, file name and a key fact in the message.
void check_error(const Status& s, ErrorCode code, const std::string& name, std::initializer_list<const char*> facts) {
  INFO(s.message());
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == code);
  CHECK(contains(s.message(), name));
  for (const char* fact : facts) CHECK(contains(s.message(), fact));
}

const std::string kEightBytes(8, '\x01');

}  // namespace

TEST_CASE("safetensors: write -> open round trip is bit-exact") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");

  Tensor special = Tensor::allocate(Shape{6});
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            -1.5f};
  std::memcpy(special.data(), specials, sizeof specials);
  Tensor scalar = Tensor::allocate(Shape{});
  scalar.data()[0] = 3.25f;

  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"conv1.weight", random_tensor(Shape{8, 3, 3, 3}, 1, Layout::kNCHW)},
      {"scalar", scalar},
      {"bn1.running_var", random_tensor(Shape{8}, 2)},
      {"fc.weight", random_tensor(Shape{5, 7}, 3)},
      {"special", special},
      {"empty", Tensor::allocate(Shape{0, 4})},
      {"odd", random_tensor(Shape{3, 5, 7}, 4)},
  };
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "h\xc3\xa9llo"}};
  REQUIRE(write_safetensors(path, tensors, metadata).ok());

  // The data starts 8-byte aligned, as the reference writer keeps it.
  const std::string raw = winfer_test::read_bytes(path);
  uint64_t header_length = 0;
  std::memcpy(&header_length, raw.data(), 8);
  CHECK((8 + header_length) % 8 == 0);

  auto opened = SafeTensorsFile::open(path);
  REQUIRE_MESSAGE(opened.ok(), opened.status().message());
  std::shared_ptr<const SafeTensorsFile> file = opened.value();
  CHECK(file->path() == path);
  CHECK(file->metadata() == metadata);
  REQUIRE(file->tensors().size() == tensors.size());
  // tensors() follows the data order, which is the order they were written in (zero-size
  // tensors sort before others that start at the same offset, so compare by name lookup too).
  for (const auto& entry : tensors) {
    // Not a structured binding: clang (the sanitizer builds) cannot capture one in doctest's lambdas.
    const std::string& name = entry.first;
    const Tensor& expected = entry.second;
    const SafeTensor* t = file->find(name);
    REQUIRE_MESSAGE(t != nullptr, name);
    CHECK(t->name == name);
    CHECK(t->dtype == "F32");
    CHECK(t->shape == expected.shape());
    REQUIRE(t->byte_size == expected.bytes());
    CHECK(std::memcmp(t->data, expected.data(), t->byte_size) == 0);
  }
  CHECK(file->tensors().front().name == "conv1.weight");
  CHECK(file->tensors().back().name == "odd");
  CHECK(file->find("absent") == nullptr);
  CHECK(file->find("__metadata__") == nullptr);
}

TEST_CASE("safetensors: an NHWC tensor is written in logical NCHW order") {
  TempDir dir;
  const std::string path = dir.file("nhwc.safetensors");
  Tensor nchw = random_tensor(Shape{1, 3, 2, 5}, 9, Layout::kNCHW);
  REQUIRE(write_safetensors(path, {{"x", nchw.to_layout(Layout::kNHWC)}}).ok());
  auto file = SafeTensorsFile::open(path);
  REQUIRE(file.ok());
  const SafeTensor* t = file.value()->find("x");
  REQUIRE(t != nullptr);
  CHECK(t->shape == nchw.shape());
  CHECK(std::memcmp(t->data, nchw.data(), nchw.bytes()) == 0);
}

TEST_CASE("safetensors: the writer refuses duplicate, reserved and data-less tensors") {
  TempDir dir;
  Tensor a = random_tensor(Shape{2}, 1);
  Status dup = write_safetensors(dir.file("d.safetensors"), {{"a", a}, {"a", a}});
  CHECK(dup.code() == ErrorCode::kInvalidArgument);
  CHECK(contains(dup.message(), "duplicate"));
  Status reserved = write_safetensors(dir.file("r.safetensors"), {{"__metadata__", a}});
  CHECK(reserved.code() == ErrorCode::kInvalidArgument);
  Status no_data = write_safetensors(dir.file("n.safetensors"), {{"a", Tensor()}});
  CHECK(no_data.code() == ErrorCode::kInvalidArgument);
  Status no_dir = write_safetensors(dir.file("missing/x.safetensors"), {{"a", a}});
  CHECK(no_dir.code() == ErrorCode::kNotFound);
  CHECK(contains(no_dir.message(), "x.safetensors"));
}

TEST_CASE("safetensors: accepts other dtypes, padding, gaps-free hand-written files") {
  TempDir dir;
  // torchvision's BatchNorm has an I64 num_batches_tracked; the JSON is padded with spaces,
  // as the reference writer does, and uses a different key order than the data.
  const int64_t tracked = 7;
  const float w[2] = {1.5f, -2.0f};
  std::string header = R"({"b.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
                       R"("a.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("__metadata__":{"format":"pt"}})";
  header.append(5, ' ');
  const std::string path = dir.file("bn.safetensors");
  write_bytes(path, st_bytes(header, winfer_test::raw_bytes(w, 2) + winfer_test::raw_bytes(&tracked, 1)));
  auto file = SafeTensorsFile::open(path);
  REQUIRE_MESSAGE(file.ok(), file.status().message());
  const auto& tensors = file.value()->tensors();
  REQUIRE(tensors.size() == 2);
  CHECK(tensors[0].name == "a.weight");  // data order, not JSON order
  CHECK(tensors[1].name == "b.num_batches_tracked");
  CHECK(tensors[1].dtype == "I64");
  CHECK(tensors[1].shape.rank() == 0);
  int64_t read = 0;
  std::memcpy(&read, tensors[1].data, 8);
  CHECK(read == 7);
  CHECK(file.value()->metadata().at("format") == "pt");
  CHECK(safetensors_dtype_size("BF16") == 2);
  CHECK(safetensors_dtype_size("F64") == 8);
  CHECK(safetensors_dtype_size("X") == 0);
}

TEST_CASE("safetensors: the mapping outlives every other handle") {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  Tensor a = random_tensor(Shape{100}, 5);
  REQUIRE(write_safetensors(path, {{"a", a}}).ok());
  const void* data = nullptr;
  std::shared_ptr<const SafeTensorsFile> keep;
  {
    auto file = SafeTensorsFile::open(path);
    REQUIRE(file.ok());
    keep = file.value();
    data = keep->find("a")->data;
  }
  std::filesystem::remove(path);  // a mapping stays readable after unlink
  CHECK(std::memcmp(data, a.data(), a.bytes()) == 0);
}

// ---- one test per error ---------------------------------------------------------------------

TEST_CASE("safetensors error: missing file") {
  TempDir dir;
  auto file = SafeTensorsFile::open(dir.file("nope.safetensors"));
  check_error(file.status(), ErrorCode::kNotFound, "nope.safetensors", {"weights file", "does not exist"});
}

TEST_CASE("safetensors error: a directory") {
  TempDir dir;
  auto file = SafeTensorsFile::open(dir.path());
  check_error(file.status(), ErrorCode::kInvalidArgument, dir.path(), {"is a directory, not a file"});
}

TEST_CASE("safetensors error: permission denied") {
  if (::geteuid() == 0) {
    MESSAGE("skipped: running as root, file permissions do not apply");
    return;
  }
  TempDir dir;
  const std::string path = dir.file("secret.safetensors");
  REQUIRE(write_safetensors(path, {{"a", random_tensor(Shape{2}, 1)}}).ok());
  REQUIRE(::chmod(path.c_str(), 0) == 0);
  auto file = SafeTensorsFile::open(path);
  check_error(file.status(), ErrorCode::kIoError, "secret.safetensors", {"cannot be read: permission denied"});
}

TEST_CASE("safetensors error: empty file") {
  TempDir dir;
  check_error(open_status(dir, "empty.safetensors", ""), ErrorCode::kParseError, "empty.safetensors",
              {"0 bytes", "too short"});
}

TEST_CASE("safetensors error: file of 5 bytes") {
  TempDir dir;
  check_error(open_status(dir, "five.safetensors", "abcde"), ErrorCode::kParseError, "five.safetensors",
              {"5 bytes", "too short"});
}

TEST_CASE("safetensors error: header length beyond the file") {
  TempDir dir;
  // 8 + 10 = 18 bytes in the file, but the header claims 1000.
  check_error(open_status(dir, "long.safetensors", st_bytes("{}        ", "", 1000)), ErrorCode::kParseError,
              "long.safetensors", {"1000", "18 bytes", "beyond"});
}

TEST_CASE("safetensors error: absurd header length") {
  TempDir dir;
  check_error(open_status(dir, "absurd.safetensors", st_bytes("{}", "", uint64_t(1) << 63)), ErrorCode::kParseError,
              "absurd.safetensors", {"9223372036854775808", "absurd"});
}

TEST_CASE("safetensors error: header is not JSON") {
  TempDir dir;
  check_error(open_status(dir, "text.safetensors", st_bytes("hello, world")), ErrorCode::kParseError,
              "text.safetensors", {"not valid JSON", "parse error"});
}

TEST_CASE("safetensors error: header is a JSON array") {
  TempDir dir;
  check_error(open_status(dir, "array.safetensors", st_bytes("[1, 2, 3]")), ErrorCode::kParseError, "array.safetensors",
              {"object", "array"});
}

TEST_CASE("safetensors error: entry without dtype") {
  TempDir dir;
  check_error(
      open_status(dir, "nodtype.safetensors", st_bytes(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", kEightBytes)),
      ErrorCode::kParseError, "nodtype.safetensors", {"'w'", "missing \"dtype\""});
}

TEST_CASE("safetensors error: shape of the wrong JSON type") {
  TempDir dir;
  check_error(open_status(dir, "shapetype.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", kEightBytes)),
              ErrorCode::kParseError, "shapetype.safetensors", {"'w'", "\"shape\" must be array", "string"});
  check_error(open_status(dir, "dimtype.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", kEightBytes)),
              ErrorCode::kParseError, "dimtype.safetensors", {"'w'", "integers"});
}

TEST_CASE("safetensors error: negative dim") {
  TempDir dir;
  check_error(open_status(dir, "negdim.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", kEightBytes)),
              ErrorCode::kParseError, "negdim.safetensors", {"'w'", "negative"});
}

TEST_CASE("safetensors error: shape whose element count overflows") {
  TempDir dir;
  check_error(open_status(dir, "huge.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],)"
                                   R"("data_offsets":[0,8]}})",
                                   kEightBytes)),
              ErrorCode::kParseError, "huge.safetensors", {"'w'", "2^40"});
  // A dim beyond int64 is rejected too, not wrapped around.
  check_error(open_status(dir, "huge2.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[18446744073709551615],)"
                                   R"("data_offsets":[0,8]}})",
                                   kEightBytes)),
              ErrorCode::kParseError, "huge2.safetensors", {"'w'", "2^40"});
}

TEST_CASE("safetensors error: data_offsets end beyond the data") {
  TempDir dir;
  check_error(open_status(dir, "beyond.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", kEightBytes)),
              ErrorCode::kParseError, "beyond.safetensors", {"'w'", "end 16", "beyond", "8 bytes"});
}

TEST_CASE("safetensors error: data_offsets begin > end") {
  TempDir dir;
  check_error(open_status(dir, "reversed.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", kEightBytes)),
              ErrorCode::kParseError, "reversed.safetensors", {"'w'", "begin 8 > end 4"});
  check_error(open_status(dir, "negoff.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", kEightBytes)),
              ErrorCode::kParseError, "negoff.safetensors", {"'w'", "non-negative"});
  check_error(open_status(dir, "threeoff.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", kEightBytes)),
              ErrorCode::kParseError, "threeoff.safetensors", {"'w'", "[begin, end]"});
}

TEST_CASE("safetensors error: overlapping data ranges") {
  TempDir dir;
  check_error(open_status(dir, "overlap.safetensors",
                          st_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                   std::string(12, '\0'))),
              ErrorCode::kParseError, "overlap.safetensors", {"'a'", "'b'", "overlap"});
  // A range nested inside a long earlier one overlaps it too.
  check_error(open_status(dir, "nested.safetensors",
                          st_bytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                                   R"("c":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                   std::string(16, '\0'))),
              ErrorCode::kParseError, "nested.safetensors", {"'a'", "'b'", "overlap"});
}

TEST_CASE("safetensors error: byte size does not match shape x dtype") {
  TempDir dir;
  check_error(open_status(dir, "size.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", kEightBytes)),
              ErrorCode::kParseError, "size.safetensors", {"'w'", "8 bytes", "needs 12"});
}

TEST_CASE("safetensors error: unknown dtype") {
  TempDir dir;
  check_error(open_status(dir, "dtype.safetensors",
                          st_bytes(R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,8]}})", kEightBytes)),
              ErrorCode::kUnsupported, "dtype.safetensors", {"'w'", "unknown dtype 'F128'"});
}

TEST_CASE("safetensors error: duplicate tensor name") {
  TempDir dir;
  check_error(open_status(dir, "dup.safetensors",
                          st_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                   kEightBytes)),
              ErrorCode::kParseError, "dup.safetensors", {"duplicate key 'w'"});
}

TEST_CASE("safetensors error: metadata that is not strings") {
  TempDir dir;
  check_error(open_status(dir, "meta.safetensors", st_bytes(R"({"__metadata__":{"epoch":3}})")), ErrorCode::kParseError,
              "meta.safetensors", {"__metadata__", "'epoch'", "string"});
}

TEST_CASE("safetensors: hostile bytes never crash open()") {
  // Every truncation and many random byte flips of a valid file must give ok or an error.
  TempDir dir;
  const std::string good_path = dir.file("good.safetensors");
  REQUIRE(write_safetensors(good_path, {{"a", random_tensor(Shape{2, 3}, 1)}, {"b", random_tensor(Shape{4}, 2)}},
                            {{"k", "v"}})
              .ok());
  const std::string good = winfer_test::read_bytes(good_path);
  const std::string path = dir.file("fuzz.safetensors");
  for (size_t n = 0; n < good.size(); ++n) {
    write_bytes(path, good.substr(0, n));
    auto file = SafeTensorsFile::open(path);
    REQUIRE_FALSE(file.ok());
    REQUIRE(contains(file.status().message(), "fuzz.safetensors"));
  }
  std::mt19937 gen(1234);
  for (int round = 0; round < 1500; ++round) {
    std::string bad = good;
    const int flips = 1 + int(gen() % 4);
    for (int i = 0; i < flips; ++i) bad[gen() % bad.size()] = static_cast<char>(gen());
    write_bytes(path, bad);
    auto file = SafeTensorsFile::open(path);
    if (file.ok()) {  // whatever survived must lie inside the file
      for (const SafeTensor& t : file.value()->tensors()) {
        volatile unsigned char sink = 0;
        const auto* p = static_cast<const unsigned char*>(t.data);
        for (size_t i = 0; i < t.byte_size; ++i) sink = sink + p[i];
        (void)sink;
      }
    } else {
      REQUIRE(contains(file.status().message(), "fuzz.safetensors"));
    }
  }
}

// ---- cross-check with an independent reader/writer ----------------------------------------------

TEST_CASE("safetensors: Python (json + numpy) reads winfer's file and winfer reads Python's") {
  if (!winfer_test::python_has_numpy()) {
    MESSAGE("skipped: /usr/bin/python3 with numpy not available");
    return;
  }
  TempDir dir;
  const std::string ours = dir.file("ours.safetensors");
  const std::string theirs = dir.file("theirs.safetensors");
  Tensor a = random_tensor(Shape{2, 3, 4}, 21);
  Tensor b = random_tensor(Shape{5}, 22);
  REQUIRE(write_safetensors(ours, {{"a", a}, {"b", b}}, {{"format", "pt"}}).ok());

  // The script checks our file against values it derives from the same bytes, and writes a
  // file the way the reference Python writer lays it out (json.dumps, padded to 8).
  const std::string script = dir.file("check.py");
  write_bytes(script, R"PY(
import json, struct, sys
import numpy as np
ours, theirs, out = sys.argv[1:4]
raw = open(ours, 'rb').read()
n, = struct.unpack('<Q', raw[:8])
header = json.loads(raw[8:8 + n].decode('utf-8'))
data = raw[8 + n:]
lines = [header['__metadata__']['format']]
for name in ('a', 'b'):
    e = header[name]
    begin, end = e['data_offsets']
    x = np.frombuffer(data[begin:end], dtype='<f4').reshape(e['shape'])
    w = np.arange(x.size, dtype=np.float64)
    lines.append('%s %s %s %.17g' % (name, e['dtype'], 'x'.join(map(str, x.shape)), (x.astype(np.float64).ravel() * w).sum()))
assert data[-1:] and end == len(data)
t = np.arange(12, dtype='<f4').reshape(3, 4) / 8 - 0.5
c = np.array([1, 2, 3], dtype='<i8')
hdr = {'t': {'dtype': 'F32', 'shape': [3, 4], 'data_offsets': [0, 48]},
       'count': {'dtype': 'I64', 'shape': [3], 'data_offsets': [48, 72]},
       '__metadata__': {'source': 'python'}}
text = json.dumps(hdr).encode('utf-8')
text += b' ' * ((8 - (8 + len(text)) % 8) % 8)
open(theirs, 'wb').write(struct.pack('<Q', len(text)) + text + t.tobytes() + c.tobytes())
open(out, 'w').write('\n'.join(lines) + '\n')
)PY");
  const std::string out = dir.file("out.txt");
  const std::string cmd =
      "/usr/bin/python3 " + script + " " + ours + " " + theirs + " " + out + " > " + dir.file("log.txt") + " 2>&1";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, winfer_test::read_bytes(dir.file("log.txt")));

  std::ifstream in(out);
  std::string format;
  in >> format;
  CHECK(format == "pt");
  for (const Tensor* t : {&a, &b}) {
    std::string name, dtype, dims;
    double checksum = 0;
    in >> name >> dtype >> dims >> checksum;
    double expected = 0;
    for (int64_t i = 0; i < t->numel(); ++i) expected += double(t->data()[i]) * double(i);
    CHECK(dtype == "F32");
    CHECK(checksum == doctest::Approx(expected).epsilon(1e-12));
  }

  auto file = SafeTensorsFile::open(theirs);
  REQUIRE_MESSAGE(file.ok(), file.status().message());
  const SafeTensor* t = file.value()->find("t");
  REQUIRE(t != nullptr);
  CHECK(t->shape == Shape{3, 4});
  float values[12];
  std::memcpy(values, t->data, sizeof values);
  for (int i = 0; i < 12; ++i) CHECK(values[i] == float(i) / 8 - 0.5f);
  const SafeTensor* count = file.value()->find("count");
  REQUIRE(count != nullptr);
  CHECK(count->dtype == "I64");
  CHECK(file.value()->metadata().at("source") == "python");
}
