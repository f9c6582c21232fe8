// docs/ERRORS.md, tested: the entries of the bad-input catalogue that other test files do not
// already cover, the sanity limits, and one regression test per bug the fuzzers found
// (tests/fuzz/; the crashing inputs themselves are kept in tests/fuzz/corpus/ and replayed by the
// fuzz build's ctest). Every case checks the message a user would read, not only that loading
// failed.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "engine/model_test_util.h"
#include "winfer/idx_dataset.h"
#include "winfer/image.h"

using namespace winfer;
using namespace winfer_test;

namespace {

std::string corpus_file(const std::string& target, const std::string& name) {
  return repo_path("tests/fuzz/corpus/" + target + "/" + name);
}

std::string idx_header(std::initializer_list<uint32_t> dims) {
  std::string h("\0\0\x08", 3);
  h.push_back(static_cast<char>(dims.size()));
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) h.push_back(static_cast<char>((d >> shift) & 0xFF));
  }
  return h;
}

void expect_message(const Status& status, const std::vector<std::string>& fragments) {
  REQUIRE_FALSE(status.ok());
  INFO("message: " << status.message());
  for (const std::string& f : fragments) CHECK(contains(status.message(), f));
}

const char* const kTinyInline = "models/examples/tiny_inline.yaml";

}  // namespace

// ---- regressions: bugs found by the fuzzers ---------------------------------------------------

TEST_CASE("fuzz regression: a JPEG Huffman table of more than 256 codes is refused before stb_image reads it") {
  // fuzz_image: stb_image (Debian 2022-09) wrote past a 257-byte table for these files (a DHT in
  // the frame, a DHT after junk bytes, a DHT read by stbi_info before decoding, a JPEG starting
  // with extra FF fill bytes before its SOI marker).
  for (const char* name : {"regress_jpeg_dht_over_256_codes.jpg", "regress_jpeg_dht_after_junk.jpg",
                           "regress_jpeg_dht_in_header.jpg", "regress_jpeg_dht_after_fill_bytes.jpg"}) {
    CAPTURE(name);
    const std::string path = corpus_file("image", name);
    auto image = read_image(path, ColorMode::kRgb);
    expect_message(image.status(), {path, "corrupt JPEG", "Huffman table", "more than 256"});
  }
  // The check must not refuse real JPEGs: the fixture photo still decodes.
  CHECK(read_image(repo_path("tests/fixtures/images/photo_64x48.jpg"), ColorMode::kRgb).ok());
}

TEST_CASE("fuzz regression: a PGM/PPM header number of more than 9 digits is refused before stb_image parses it") {
  // fuzz_image (CI, session 3): stb_image (Debian 2022-09) reads the header's numbers into an
  // int without an overflow check (UBSan: signed integer overflow in stbi__pnm_getinteger).
  const std::string path = corpus_file("image", "regress_pnm_header_int_overflow.pgm");
  auto image = read_image(path, ColorMode::kRgb);
  expect_message(image.status(), {path, "corrupt PGM/PPM", "a header number of 70 digits at byte 3", "at most 9"});
  // Nine digits still reach stb_image's own checks (here: over winfer's size limit).
  TempDir dir;
  write_bytes(dir.file("wide.pgm"), "P5\n999999999 1\n255\n");
  auto wide = read_image(dir.file("wide.pgm"), ColorMode::kGray);
  REQUIRE_FALSE(wide.ok());
  CHECK(wide.status().message().find("corrupt PGM/PPM") == std::string::npos);
  CHECK(read_image(repo_path("tests/fixtures/images/gray_17x19.pgm"), ColorMode::kGray).ok());
}

TEST_CASE("fuzz regression: a PNG chunk that declares more bytes than the file holds is refused before stb_image") {
  // fuzz_image (CI, session 27): stb_image (Debian 2022-09) grew its IDAT buffer to a chunk's
  // declared length (1.48 GB here, in a 1 KiB file) before reading it: libFuzzer stopped at a 2
  // GiB malloc.
  const std::string path = corpus_file("image", "regress_png_idat_beyond_end.png");
  auto image = read_image(path, ColorMode::kRgb);
  expect_message(image.status(), {path, "corrupt PNG", "chunk 'IDAT' at byte 57 declares 1482250851 bytes of data",
                                  "bytes follow (truncated or corrupt file)"});
  // Any chunk, not only IDAT, and a file cut inside a chunk: the same message.
  const std::string png = read_bytes(repo_path("tests/fixtures/images/rgba_33x45.png"));
  TempDir dir;
  write_bytes(dir.file("cut.png"), png.substr(0, png.size() - 20));
  auto cut = read_image(dir.file("cut.png"), ColorMode::kRgb);
  expect_message(cut.status(), {"cut.png", "corrupt PNG", "declares", "bytes follow"});
  // Whole PNGs still decode (the walk stops at IEND; bytes after it are ignored, as stb_image does).
  CHECK(read_image(repo_path("tests/fixtures/images/rgba_33x45.png"), ColorMode::kRgb).ok());
  write_bytes(dir.file("trailing.png"), png + "trailing bytes");
  CHECK(read_image(dir.file("trailing.png"), ColorMode::kRgb).ok());
}

TEST_CASE("fuzz regression: an empty input name is refused, not taken for a split's missing default") {
  // fuzz_model_yaml: `name: !nput` (a bare tag) is the empty string; the first layer's default
  // input then looked like "the previous layer has several outputs", and its message read the
  // name of the last of no layers (std::vector::back() on an empty vector).
  TempDir dir;
  auto model = load_text(dir, read_bytes(corpus_file("model_yaml", "regress_empty_input_name.yaml")));
  expect_message(model.status(), {"model.yaml:5", "input name '' must be non-empty and contain no ':'"});
  CHECK(load_text(dir, model_header() + "layers:\n  - {name: relu, op: relu}\n").ok());  // 'input' is fine
  auto colon = load_text(
      dir, "format: winfer/1\ninput: {name: 'in:0', shape: [1, 1, 2, 2]}\nlayers:\n  - {name: r, op: relu}\n");
  expect_message(colon.status(), {"input name 'in:0' must be non-empty"});
}

TEST_CASE("fuzz regression: an IDX split of images with zero rows is refused, not cut into empty images") {
  // fuzz_idx: load_mnist_split accepted [1, 0, 2] and ImageDataset::image() then copied from a null pointer.
  TempDir dir;
  write_bytes(dir.file("t10k-images-idx3-ubyte"), read_bytes(corpus_file("idx", "regress_zero_rows.idx")));
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), idx_header({1}) + std::string(1, '\x07'));
  auto split = load_mnist_split(dir.path(), "test");
  expect_message(split.status(), {"t10k-images-idx3-ubyte", "0x", "rows and columns must be at least 1"});
}

TEST_CASE("fuzz regression: a tiny IDX file promising 1 GiB is found truncated without allocating the gigabyte") {
  TempDir dir;
  const std::string path = dir.file("big.idx");
  write_bytes(path, idx_header({1024, 1024, 1024}) + "only a few bytes");
  // In a child process whose address space may grow by 512 MiB at most: the old reader resized
  // its buffer to the promised 1 GiB first and died there (bad_alloc escaping read_idx).
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::ifstream status("/proc/self/status");
    std::string line;
    uint64_t vm_kib = 0;
    while (std::getline(status, line)) {
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoull(line.substr(7));
    }
    const rlim_t limit = (vm_kib << 10) + (rlim_t(512) << 20);
    rlimit rl{limit, limit};
    if (vm_kib == 0 || setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    int code = 1;
    try {
      auto array = read_idx(path);
      code = !array.ok() && contains(array.status().message(), "truncated") ? 0 : 1;
    } catch (...) {
      code = 2;
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child status " << status << " (exit 2: the reader allocated the promised gigabyte)");
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// ---- limits -------------------------------------------------------------------------------------

TEST_CASE("limits: a model file over 16 MiB is refused with its size before parsing") {
  TempDir dir;
  const std::string path = dir.file("huge.yaml");
  write_bytes(path, model_header() + "layers:\n  - {name: r, op: relu}\n");
  std::filesystem::resize_file(path, (uintmax_t(16) << 20) + 1);  // sparse: costs no disk
  auto model = Model::load(path);
  expect_message(model.status(), {"model file '" + path + "'", "16777217 bytes", "limit of 16777216 bytes"});
}

TEST_CASE("limits: more than 10000 layers are refused") {
  std::string yaml = model_header() + "layers: [";
  for (int i = 0; i <= 10000; ++i) yaml += "{name: r" + std::to_string(i) + ", op: relu},";
  yaml.back() = ']';
  yaml += "\n";
  expect_load_error(yaml, {"model.yaml:3", "10001 layers", "limit of 10000"});
}

TEST_CASE("limits: an input dimension over 2^24 is refused, naming the shape") {
  expect_load_error("format: winfer/1\ninput: {shape: [1, 16777217]}\nlayers:\n  - {name: r, op: relu}\n",
                    {"model.yaml:2", "'input.shape'", "<= 2^24", "[1,16777217]"});
  // 2^24 itself is allowed.
  TempDir dir;
  auto ok = load_text(dir, "format: winfer/1\ninput: {shape: [1, 16777216]}\nlayers:\n  - {name: r, op: relu}\n");
  CHECK_MESSAGE(ok.ok(), ok.status().message());
}

TEST_CASE("limits: a safetensors header of more than 65536 tensors is refused") {
  TempDir dir;
  auto header_of = [](int count) {
    std::string json = "{";
    for (int i = 0; i < count; ++i) {
      json += "\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},";
    }
    json += "\"__metadata__\":{\"format\":\"pt\"}}";
    return le_bytes(json.size(), 8) + json;
  };
  write_bytes(dir.file("many.safetensors"), header_of(65537));
  auto many = SafeTensorsFile::open(dir.file("many.safetensors"));
  expect_message(many.status(), {"many.safetensors", "65538 entries", "limit of 65536 tensors"});
  write_bytes(dir.file("most.safetensors"), header_of(65536));  // exactly the limit, plus metadata
  auto most = SafeTensorsFile::open(dir.file("most.safetensors"));
  CHECK_MESSAGE(most.ok(), most.status().message());
}

TEST_CASE("limits: IDX data over the byte limit is refused from the header") {
  TempDir dir;
  write_bytes(dir.file("x.idx"), idx_header({65536, 65536}));
  auto array = read_idx(dir.file("x.idx"));  // 4 GiB promised, limit 1 GiB
  expect_message(array.status(), {"x.idx", "more than 1073741824 bytes", "refused"});
}

// ---- catalogue entries not covered elsewhere ------------------------------------------------------

TEST_CASE("catalogue: a zero dimension in input.shape is refused") {
  expect_load_error("format: winfer/1\ninput: {shape: [1, 3, 0, 8]}\nlayers:\n  - {name: r, op: relu}\n",
                    {"model.yaml:2", "'input.shape' dims must be >= 1", "[1,3,0,8]"});
}

TEST_CASE("catalogue: an empty model file and a YAML list instead of a mapping") {
  expect_load_error("", {"model.yaml", "expected a YAML mapping"});
  expect_load_error("- a\n- b\n", {"model.yaml", "expected a YAML mapping"});
}

TEST_CASE("catalogue: unbalanced YAML brackets give the line") {
  expect_load_error(model_header() + "layers:\n  - {name: r, op: relu\n", {"model.yaml:", "YAML syntax error"});
}

TEST_CASE("catalogue: a truncated safetensors file names the tensor whose data is cut off") {
  TempDir dir;
  const std::string path = dir.file("w.safetensors");
  REQUIRE(write_safetensors(path, {{"conv.weight", random_tensor(Shape{4, 3, 3, 3}, 1)}}).ok());
  std::string bytes = read_bytes(path);
  bytes.resize(bytes.size() - 10);
  write_bytes(path, bytes);
  auto file = SafeTensorsFile::open(path);
  expect_message(file.status(), {path, "tensor 'conv.weight'", "beyond the data region"});
  // Cut inside the header too: the header length then reaches beyond the file.
  bytes.resize(20);
  write_bytes(path, bytes);
  expect_message(SafeTensorsFile::open(path).status(), {path, "header length", "beyond the file"});
}

TEST_CASE("catalogue: NaN and Inf in the input propagate to the output (PyTorch's behaviour)") {
  auto model = Model::load(repo_path(kTinyInline));
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  Tensor input = Tensor::allocate(model.value()->input_shape(), Layout::kNCHW);
  for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] = 0.25f;
  Tensor clean = run_model(model.value(), input);
  for (int64_t i = 0; i < clean.numel(); ++i) REQUIRE(std::isfinite(clean.data()[i]));
  input.data()[0] = std::numeric_limits<float>::quiet_NaN();
  Tensor poisoned = run_model(model.value(), input);
  int nan_count = 0;
  for (int64_t i = 0; i < poisoned.numel(); ++i) nan_count += std::isnan(poisoned.data()[i]) ? 1 : 0;
  CHECK(nan_count > 0);  // the global pool spreads the NaN to every logit
}

TEST_CASE("catalogue: check_numerics names the input holding a NaN or Inf") {
  auto model = Model::load(repo_path(kTinyInline));
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  SessionOptions options;
  options.check_numerics = true;
  auto session = Session::create(model.value(), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  Tensor input = Tensor::allocate(model.value()->input_shape(), Layout::kNCHW);
  for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] = 0.5f;
  auto clean = session.value()->run(input);
  CHECK_MESSAGE(clean.ok(), clean.status().message());
  input.data()[3] = std::numeric_limits<float>::infinity();
  auto bad = session.value()->run(input);
  expect_message(bad.status(), {"check_numerics", "input", "+Inf", "index 3"});
  // A layer whose output overflows to Inf on a finite input is named.
  for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] = 3e38f;
  auto overflow = session.value()->run(input);
  expect_message(overflow.status(), {"tiny_inline.yaml", "layer '", "check_numerics: output '", "non-finite"});
  // The session stays usable after the failed runs.
  for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] = 0.5f;
  auto again = session.value()->run(input);
  CHECK_MESSAGE(again.ok(), again.status().message());
}

TEST_CASE("catalogue: a session over its memory_budget is refused with the numbers") {
  auto model = Model::load(repo_path(kTinyInline));
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  SessionOptions options;
  options.memory_budget = 16;
  auto session = Session::create(model.value(), options);
  expect_message(session.status(), {"memory_budget", "16"});
}
