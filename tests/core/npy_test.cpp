#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "core/test_files.h"
#include "winfer/npy.h"

using namespace winfer;
using winfer_test::contains;
using winfer_test::le_bytes;
using winfer_test::random_tensor;
using winfer_test::raw_bytes;
using winfer_test::TempDir;
using winfer_test::write_bytes;

namespace {

// A .npy file as NumPy lays it out: magic, version, header length, the dict padded with spaces
// and a newline so that the data starts at a multiple of 64.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  return std::string("\x93NUMPY") + char(major) + '\0' + le_bytes(header.size(), major == 1 ? 2 : 4) + header + data;
}

std::string f4_header(const std::string& shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
}

Status read_status(const TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.file(name);
  write_bytes(path, bytes);
  Result<Tensor> t = read_npy(path);
  return t.ok() ? Status::Ok() : t.status();
}

void check_error(const Status& s, ErrorCode code, const std::string& name, std::initializer_list<const char*> facts) {
  INFO(s.message());
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == code);
  CHECK(contains(s.message(), name));
  for (const char* fact : facts) CHECK(contains(s.message(), fact));
}

const float kSix[6] = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 7.0f};

}  // namespace

TEST_CASE("npy: write -> read round trip of ranks 0 to 4") {
  TempDir dir;
  const std::vector<Shape> shapes = {Shape{}, Shape{5}, Shape{3, 7}, Shape{2, 3, 5}, Shape{2, 3, 5, 7}, Shape{0, 3}};
  uint32_t seed = 1;
  for (const Shape& shape : shapes) {
    INFO(shape.to_string());
    const std::string path = dir.file("x.npy");
    Tensor t = random_tensor(shape, seed++, shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain);
    REQUIRE(write_npy(path, t).ok());
    // NumPy's alignment rule: the data starts at a multiple of 64.
    const std::string raw = winfer_test::read_bytes(path);
    CHECK((raw.size() - t.bytes()) % 64 == 0);
    CHECK(raw[raw.size() - t.bytes() - 1] == '\n');
    Result<Tensor> back = read_npy(path);
    REQUIRE_MESSAGE(back.ok(), back.status().message());
    CHECK(back->layout() == (shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain));
    CHECK(winfer_test::same_bits(back.value(), t));
  }
}

TEST_CASE("npy: an NHWC tensor is written as logical NCHW data") {
  TempDir dir;
  const std::string path = dir.file("nhwc.npy");
  Tensor nchw = random_tensor(Shape{2, 3, 4, 5}, 7, Layout::kNCHW);
  REQUIRE(write_npy(path, nchw.to_layout(Layout::kNHWC)).ok());
  Result<Tensor> back = read_npy(path);
  REQUIRE(back.ok());
  CHECK(back->layout() == Layout::kNCHW);
  CHECK(winfer_test::same_bits(back.value(), nchw));
}

TEST_CASE("npy: reads a hand-built NumPy v1.0 file") {
  TempDir dir;
  const std::string path = dir.file("numpy.npy");
  write_bytes(path, npy_bytes(f4_header("(2, 3)"), raw_bytes(kSix, 6)));
  Result<Tensor> t = read_npy(path);
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  CHECK(t->shape() == Shape{2, 3});
  CHECK(t->layout() == Layout::kPlain);
  CHECK(std::memcmp(t->data(), kSix, sizeof kSix) == 0);
}

TEST_CASE("npy: header variants NumPy has written over the years") {
  TempDir dir;
  struct Case {
    std::string dict;
    int major;
    Shape shape;
  };
  const Case cases[] = {
      {f4_header("(6,)"), 1, Shape{6}},
      {f4_header("(1, 2, 3, 1)"), 2, Shape{1, 2, 3, 1}},                                // v2.0: u32 header length
      {f4_header("(6,)"), 3, Shape{6}},                                                 // v3.0: utf-8 header
      {"{'descr':'<f4','fortran_order':False,'shape':(2,3)}", 1, Shape{2, 3}},          // no spaces
      {"{'shape': (3L, 2L), 'fortran_order': False, 'descr': '<f4'}", 1, Shape{3, 2}},  // Py2
      {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (6,)}", 1, Shape{6}},
  };
  for (const Case& c : cases) {
    INFO(c.dict);
    const std::string path = dir.file("v.npy");
    write_bytes(path, npy_bytes(c.dict, raw_bytes(kSix, 6), c.major));
    Result<Tensor> t = read_npy(path);
    REQUIRE_MESSAGE(t.ok(), t.status().message());
    CHECK(t->shape() == c.shape);
    CHECK(std::memcmp(t->data(), kSix, sizeof kSix) == 0);
  }
  // A rank-0 array: shape () holds one element.
  const float one = 4.5f;
  const std::string path = dir.file("scalar.npy");
  write_bytes(path, npy_bytes(f4_header("()"), raw_bytes(&one, 1)));
  Result<Tensor> t = read_npy(path);
  REQUIRE(t.ok());
  CHECK(t->shape().rank() == 0);
  CHECK(t->data()[0] == 4.5f);
}

TEST_CASE("npy: '<f8' data is converted to float32") {
  TempDir dir;
  const double values[4] = {0.1, -1e10, 3.0, 1.0 / 3.0};
  const std::string path = dir.file("f8.npy");
  // An odd header length puts the doubles at an unaligned address in the mapping.
  write_bytes(path, std::string("\x93NUMPY\x01\x00", 8) + le_bytes(61, 2) +
                        "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }   \n" + raw_bytes(values, 4));
  Result<Tensor> t = read_npy(path);
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  CHECK(t->shape() == Shape{4});
  for (int i = 0; i < 4; ++i) CHECK(t->data()[i] == static_cast<float>(values[i]));
}

// ---- errors ---------------------------------------------------------------------------------

TEST_CASE("npy error: missing file") {
  TempDir dir;
  Result<Tensor> t = read_npy(dir.file("nope.npy"));
  check_error(t.status(), ErrorCode::kNotFound, "nope.npy", {".npy file", "does not exist"});
}

TEST_CASE("npy error: bad magic") {
  TempDir dir;
  std::string bytes = npy_bytes(f4_header("(6,)"), raw_bytes(kSix, 6));
  bytes[1] = 'M';
  check_error(read_status(dir, "magic.npy", bytes), ErrorCode::kParseError, "magic.npy", {"not a .npy file"});
  check_error(read_status(dir, "tiny.npy", "\x93NUM"), ErrorCode::kParseError, "tiny.npy", {"not a .npy file"});
  check_error(read_status(dir, "empty.npy", ""), ErrorCode::kParseError, "empty.npy", {"not a .npy file"});
}

TEST_CASE("npy error: unsupported version") {
  TempDir dir;
  std::string bytes = npy_bytes(f4_header("(6,)"), raw_bytes(kSix, 6));
  bytes[6] = 4;
  check_error(read_status(dir, "v4.npy", bytes), ErrorCode::kUnsupported, "v4.npy", {"version 4.0"});
}

TEST_CASE("npy error: truncated data and trailing bytes") {
  TempDir dir;
  const std::string bytes = npy_bytes(f4_header("(2, 3)"), raw_bytes(kSix, 6));
  check_error(read_status(dir, "short.npy", bytes.substr(0, bytes.size() - 1)), ErrorCode::kParseError, "short.npy",
              {"23 data bytes", "needs 24", "truncated"});
  check_error(read_status(dir, "long.npy", bytes + "xx"), ErrorCode::kParseError, "long.npy",
              {"26 data bytes", "needs 24"});
}

TEST_CASE("npy error: header length beyond the file") {
  TempDir dir;
  const std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + le_bytes(500, 2) + "{'descr': '<f4'";
  check_error(read_status(dir, "cut.npy", bytes), ErrorCode::kParseError, "cut.npy", {"500", "beyond"});
  check_error(read_status(dir, "cut2.npy", std::string("\x93NUMPY\x02\x00\x10\x00", 10)), ErrorCode::kParseError,
              "cut2.npy", {"header length"});
}

TEST_CASE("npy error: fortran order") {
  TempDir dir;
  check_error(read_status(dir, "fortran.npy",
                          npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", raw_bytes(kSix, 6))),
              ErrorCode::kUnsupported, "fortran.npy", {"fortran_order True", "C-order"});
}

TEST_CASE("npy error: unsupported dtype") {
  TempDir dir;
  const Status s = read_status(
      dir, "x.npy", npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", std::string(24, '\0')));
  check_error(s, ErrorCode::kUnsupported, "x.npy", {});
  CHECK(contains(s.message(), "x.npy: dtype '<i8' not supported; expected float32 '<f4' (or '<f8')"));
  check_error(read_status(dir, "be.npy",
                          npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", raw_bytes(kSix, 6))),
              ErrorCode::kUnsupported, "be.npy", {"'>f4'"});
  check_error(read_status(dir, "rec.npy",
                          npy_bytes("{'descr': [('a', '<f4'), ('b', '<f4')], 'fortran_order': False, "
                                    "'shape': (3,), }",
                                    raw_bytes(kSix, 6))),
              ErrorCode::kUnsupported, "rec.npy", {"structured dtype"});
  check_error(read_status(dir, "rank9.npy", npy_bytes(f4_header("(1, 1, 1, 1, 1, 1, 1, 1, 6)"), raw_bytes(kSix, 6))),
              ErrorCode::kUnsupported, "rank9.npy", {"9 dims", "at most 8"});
}

TEST_CASE("npy error: malformed header") {
  TempDir dir;
  const std::string data = raw_bytes(kSix, 6);
  struct Case {
    const char* dict;
    const char* fact;
  };
  const Case cases[] = {
      {"hello", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False}", "no 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}", "keys other than"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (6,)}", "expected ',' or '}'"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (6,)}", "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,", "expected a value"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (6,)}", "expected a string, number"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (6,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': 6}", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ('6',)}", "must hold integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", "negative"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2097152, 2097152, 2097152)}", "2^40"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (((((((((((6,),),),),),),),),),),)}", "too deeply"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} junk", "after the dict"},
  };
  for (const Case& c : cases) {
    const Status s = read_status(dir, "bad.npy", npy_bytes(c.dict, data));
    INFO(std::string(c.dict));
    check_error(s, s.code(), "bad.npy", {c.fact});
    CHECK(s.code() == ErrorCode::kParseError);
  }
}

TEST_CASE("npy: hostile bytes never crash read_npy()") {
  TempDir dir;
  const std::string good = npy_bytes(f4_header("(2, 3)"), raw_bytes(kSix, 6));
  const std::string path = dir.file("fuzz.npy");
  for (size_t n = 0; n < good.size(); ++n) {
    write_bytes(path, good.substr(0, n));
    Result<Tensor> t = read_npy(path);
    REQUIRE_FALSE(t.ok());
    REQUIRE(contains(t.status().message(), "fuzz.npy"));
  }
  std::mt19937 gen(99);
  for (int round = 0; round < 1500; ++round) {
    std::string bad = good;
    const int flips = 1 + int(gen() % 4);
    for (int i = 0; i < flips; ++i) bad[gen() % bad.size()] = static_cast<char>(gen());
    write_bytes(path, bad);
    Result<Tensor> t = read_npy(path);
    if (!t.ok()) REQUIRE(contains(t.status().message(), "fuzz.npy"));
  }
}

TEST_CASE("npy: the writer refuses a tensor without data and reports OS errors") {
  TempDir dir;
  Status s = write_npy(dir.file("a.npy"), Tensor());
  CHECK(s.code() == ErrorCode::kInvalidArgument);
  s = write_npy(dir.file("no/such/dir.npy"), random_tensor(Shape{2}, 1));
  CHECK(s.code() == ErrorCode::kNotFound);
  CHECK(contains(s.message(), "dir.npy"));
}

// ---- cross-check with NumPy itself --------------------------------------------------------------

TEST_CASE("npy: NumPy reads winfer's files and winfer reads NumPy's") {
  if (!winfer_test::python_has_numpy()) {
    MESSAGE("skipped: /usr/bin/python3 with numpy not available");
    return;
  }
  TempDir dir;
  Tensor nchw = random_tensor(Shape{2, 3, 5, 7}, 31, Layout::kNCHW);
  Tensor vec = random_tensor(Shape{9}, 32);
  REQUIRE(write_npy(dir.file("ours4.npy"), nchw.to_layout(Layout::kNHWC)).ok());
  REQUIRE(write_npy(dir.file("ours1.npy"), vec).ok());

  const std::string script = dir.file("check.py");
  write_bytes(script, R"PY(
import sys
import numpy as np
d = sys.argv[1]
with open(d + '/out.txt', 'w') as out:
    for name in ('ours4', 'ours1'):
        x = np.load(d + '/' + name + '.npy')
        w = np.arange(x.size, dtype=np.float64)
        out.write('%s %s %.17g\n' % (x.dtype.str, 'x'.join(map(str, x.shape)),
                                    (x.astype(np.float64).ravel() * w).sum()))
base = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5) / 16.0 - 3.0
np.save(d + '/theirs_f4.npy', base.astype('<f4'))
np.save(d + '/theirs_f8.npy', base)
np.save(d + '/theirs_scalar.npy', np.float32(2.5))
np.save(d + '/theirs_fortran.npy', np.asfortranarray(base[0, 0].astype('<f4')))
np.save(d + '/theirs_int.npy', np.arange(4, dtype='<i8'))
)PY");
  const std::string cmd = "/usr/bin/python3 " + script + " " + dir.path() + " > " + dir.file("log.txt") + " 2>&1";
  REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, winfer_test::read_bytes(dir.file("log.txt")));

  std::ifstream in(dir.file("out.txt"));
  const std::pair<const Tensor*, const char*> expected[] = {{&nchw, "2x3x5x7"}, {&vec, "9"}};
  for (const auto& [t, dims] : expected) {
    std::string dtype, shape;
    double checksum = 0;
    in >> dtype >> shape >> checksum;
    double sum = 0;
    for (int64_t i = 0; i < t->numel(); ++i) sum += double(t->data()[i]) * double(i);
    CHECK(dtype == "<f4");
    CHECK(shape == dims);
    CHECK(checksum == doctest::Approx(sum).epsilon(1e-12));
  }

  for (const char* name : {"theirs_f4.npy", "theirs_f8.npy"}) {
    INFO(name);
    Result<Tensor> t = read_npy(dir.file(name));
    REQUIRE_MESSAGE(t.ok(), t.status().message());
    CHECK(t->shape() == Shape{2, 3, 4, 5});
    CHECK(t->layout() == Layout::kNCHW);
    for (int64_t i = 0; i < t->numel(); ++i) REQUIRE(t->data()[i] == float(double(i) / 16.0 - 3.0));
  }
  Result<Tensor> scalar = read_npy(dir.file("theirs_scalar.npy"));
  REQUIRE(scalar.ok());
  CHECK(scalar->shape().rank() == 0);
  CHECK(scalar->data()[0] == 2.5f);
  CHECK(read_npy(dir.file("theirs_fortran.npy")).status().code() == ErrorCode::kUnsupported);
  CHECK(read_npy(dir.file("theirs_int.npy")).status().code() == ErrorCode::kUnsupported);
}
