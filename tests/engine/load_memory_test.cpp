// Loading without holding the weights twice (issue 25, target 3; docs/MEMORY.md, "Loading"):
// weights are read from a mapped file with pread (detail::read_at), so none of its pages enter
// the resident set (measured on the mapping itself in /proc/self/smaps, which other threads'
// allocations cannot disturb), and an ONNX file's initializers are not parsed into
// protobuf strings but read from the file: the parsed model holds no raw_data, and the values
// read are the file's, bit for bit. Model::load takes an imported model as the importer's
// description (no YAML text, no YAML tree): it loads the same model as that text does. A
// safetensors file's header is read with pread as well.
#include <algorithm>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "core/test_files.h"
#include "engine/model_test_util.h"
#include "engine/onnx_test_builder.h"
#include "engine/src/core/file_io.h"
#include "engine/src/onnx/onnx_file.h"
#include "engine/src/onnx/onnx_import.h"
#include "winfer/safetensors.h"

using namespace winfer_test;

namespace {

// The resident bytes of the mappings (VMAs in /proc/self/smaps) that `is_wanted(begin, end,
// header line)` picks, summed; -1 when there is no /proc/self/smaps or it picks none.
template <typename Pick>
int64_t mappings_rss_bytes(Pick is_wanted) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false, found = false;
  int64_t total = 0;
  while (std::getline(smaps, line)) {
    unsigned long long begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find(':') > line.find(' ') && (head >> std::hex >> begin >> dash >> end) && dash == '-') {
      inside = is_wanted(begin, end, line);
      found = found || inside;
      continue;
    }
    if (inside && line.rfind("Rss:", 0) == 0) total += std::stoll(line.substr(4)) * 1024;
  }
  return found ? total : -1;
}

// The resident bytes of the mapping that holds `address`, or -1.
int64_t mapping_rss_bytes(const void* address) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  return mappings_rss_bytes(
      [a](unsigned long long begin, unsigned long long end, const std::string&) { return begin <= a && a < end; });
}

// The resident bytes of the mappings of the file `path`, or -1 when none maps it.
int64_t file_mapping_rss_bytes(const std::string& path) {
  const std::string wanted = std::filesystem::canonical(path).string();
  return mappings_rss_bytes([&wanted](unsigned long long, unsigned long long, const std::string& line) {
    const size_t slash = line.find('/');
    return slash != std::string::npos && line.substr(slash) == wanted;
  });
}

std::string pattern_bytes(size_t size) {
  std::string bytes(size, '\0');
  uint32_t state = 12345;
  for (size_t i = 0; i < size; ++i) {
    state = state * 1664525u + 1013904223u;
    bytes[i] = static_cast<char>(state >> 24);
  }
  return bytes;
}

}  // namespace

TEST_CASE("load memory: weights read from a mapped file leave none of its pages resident, and equal the file") {
  TempDir dir;
  const size_t size = (size_t(6) << 20) + 1000;
  const std::string bytes = pattern_bytes(size);
  write_bytes(dir.file("weights.bin"), bytes);  // just written: every page in the page cache
  constexpr winfer::detail::InputKind kKind{"test file", uint64_t(1) << 30};
  auto mapped = winfer::detail::MappedFile::map(dir.file("weights.bin"), kKind);
  REQUIRE(mapped.ok());
  const winfer::detail::MappedFile& file = mapped.value();
  REQUIRE(file.fd() >= 0);
  // Tensors of odd sizes at odd offsets, read out of their order in the file: through the
  // mapping each would fault in its neighbours' pages too.
  std::vector<std::pair<size_t, size_t>> tensors;
  for (size_t at = 123; at < size;) {
    const size_t n = std::min(size - at, size_t(5000) + (at % 7) * 100000);
    tensors.push_back({at, n});
    at += n;
  }
  std::shuffle(tensors.begin(), tensors.end(), std::mt19937(3));
  std::vector<unsigned char> out(size);
  for (const std::pair<size_t, size_t>& tensor : tensors) {
    const size_t at = tensor.first;
    REQUIRE(winfer::detail::read_at(file.fd(), "weights.bin", "a tensor", at, tensor.second, out.data() + at).ok());
  }
  CHECK(std::memcmp(out.data() + 123, bytes.data() + 123, size - 123) == 0);
  const int64_t resident = mapping_rss_bytes(file.data());
  if (resident < 0) return;  // no /proc/self/smaps (not Linux): nothing to measure
  CHECK(resident == 0);
  // A file that ends before the bytes asked (changed since it was checked): an error, not a
  // short read.
  std::vector<unsigned char> past(100);
  const winfer::Status beyond =
      winfer::detail::read_at(file.fd(), "weights.bin", "tensor 'w'", size - 10, 100, past.data());
  CHECK(!beyond.ok());
  CHECK(beyond.message().find("weights.bin: ends at byte " + std::to_string(size) + " while reading tensor 'w'") !=
        std::string::npos);
}

TEST_CASE("load memory: a safetensors file's header and tensors are read with pread, none of its pages resident") {
  TempDir dir;
  std::vector<winfer::RawTensor> tensors;
  for (int i = 0; i < 6; ++i) {
    const size_t floats = size_t(1000) + size_t(i) * 70001;  // odd sizes, the largest ~1.4 MB
    const std::string bytes = pattern_bytes(floats * 4 + size_t(i));
    tensors.push_back({"layer" + std::to_string(i) + ".weight", "F32", winfer::Shape{int64_t(floats)},
                       std::vector<unsigned char>(bytes.begin(), bytes.begin() + floats * 4)});
  }
  const std::string path = dir.file("weights.safetensors");
  REQUIRE(winfer::write_safetensors_raw(path, tensors).ok());  // just written: cached

  auto opened = winfer::SafeTensorsFile::open(path);
  REQUIRE(opened.ok());
  const winfer::SafeTensorsFile& file = *opened.value();
  for (const winfer::RawTensor& want : tensors) {
    CAPTURE(want.name);
    const winfer::SafeTensor* t = file.find(want.name);
    REQUIRE(t != nullptr);
    std::vector<unsigned char> got(t->byte_size);
    REQUIRE(file.copy_data(*t, got.data()).ok());
    CHECK(got == want.bytes);
  }
  // The 8-byte length and the JSON header lie beside the first tensor's bytes: read through the
  // mapping, their fault would have mapped that neighbourhood too.
  const int64_t resident = file_mapping_rss_bytes(path);
  if (resident >= 0) CHECK(resident == 0);
}

TEST_CASE("load memory: an ONNX file's initializers are read from the file, not parsed into the model") {
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8});
  const std::vector<float> w = onnx_random_values(4 * 3 * 3 * 3, 5);
  const std::vector<float> big = onnx_random_values(300000, 6);  // 1.2 MB: spans many pages
  b.initializer("w", {4, 3, 3, 3}, w);
  b.initializer("big", {300000}, big);
  b.int_initializer("shape", {2}, {1, -1});
  b.float_data_initializer("typed", {3}, {1.5f, -2.0f, 0.25f});
  b.node("Conv", {"x", "w"}, {"y"});
  b.output("y");
  const std::string path = b.write(dir.file("net.onnx"));

  auto opened = winfer::onnx_import::OnnxFile::open(path);
  REQUIRE(opened.ok());
  winfer::onnx_import::OnnxFile& file = *opened.value();
  REQUIRE(file.graph().initializer_size() == 4);
  for (const onnx::TensorProto& t : file.graph().initializer()) {
    CAPTURE(t.name());
    CHECK(t.raw_data().empty());  // left in the file
  }
  std::vector<float> got_w(w.size()), got_big(big.size()), got_typed(3);
  CHECK(file.read_floats(file.graph().initializer(0), "w", got_w.data(), int64_t(w.size())).ok());
  CHECK(file.read_floats(file.graph().initializer(1), "big", got_big.data(), int64_t(big.size())).ok());
  CHECK(std::memcmp(got_w.data(), w.data(), w.size() * 4) == 0);
  CHECK(std::memcmp(got_big.data(), big.data(), big.size() * 4) == 0);
  // Read twice (an initializer with two users): the same values again from the given-back pages.
  std::vector<float> again(big.size());
  CHECK(file.read_floats(file.graph().initializer(1), "big", again.data(), int64_t(big.size())).ok());
  CHECK(std::memcmp(again.data(), big.data(), big.size() * 4) == 0);
  // Nothing read through the file's mapping, the walk over the tensors' headers included: the
  // file was just written, every page of it cached, and a fault would have mapped its
  // neighbours (a large folio whole) beside each header.
  const int64_t resident = file_mapping_rss_bytes(path);
  if (resident >= 0) CHECK(resident == 0);
  auto shape = file.read_ints(file.graph().initializer(2), "shape");
  REQUIRE(shape.ok());
  CHECK(shape.value() == std::vector<int64_t>{1, -1});
  CHECK(file.read_floats(file.graph().initializer(3), "typed", got_typed.data(), 3).ok());
  CHECK(got_typed == std::vector<float>{1.5f, -2.0f, 0.25f});
  // A size that disagrees is still refused with the words of a parsed raw_data.
  std::vector<float> wrong(10);
  const winfer::Status short_read = file.read_floats(file.graph().initializer(0), "w", wrong.data(), 10);
  CHECK(!short_read.ok());
  CHECK(short_read.message().find("432 bytes of raw_data") != std::string::npos);
}

TEST_CASE("load start-up: an imported model's description loads what its YAML text loads (every ONNX seed model)") {
  // Model::load of an .onnx file reads the importer's description (no YAML); `winfer convert`
  // writes the text. Both must give the same model: layers (after fusion), shapes, outputs, and
  // bit for bit the same output on the same random weights and input.
  int models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(repo_path("tests/fuzz/corpus/onnx"))) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".onnx") continue;
    CAPTURE(path);
    auto text = winfer::onnx_import::import_onnx(path, "", /*as_description=*/false);
    auto described = winfer::onnx_import::import_onnx(path, "", /*as_description=*/true);
    REQUIRE(text.ok() == described.ok());
    if (!text.ok()) continue;  // a seed the importer refuses: refused the same way both times
    CHECK(text.value().description == nullptr);
    REQUIRE(described.value().description != nullptr);
    CHECK(described.value().yaml.empty());

    winfer::LoadOptions options;
    options.random_weights_seed = 5;
    auto direct = winfer::Model::load(path, options);
    auto from_text = winfer::Model::load_from_memory(text.value().yaml, nullptr, 0, options, path);
    REQUIRE_MESSAGE(direct.ok(), direct.status().message());
    REQUIRE_MESSAGE(from_text.ok(), from_text.status().message());
    const winfer::Model& a = *direct.value();
    const winfer::Model& b = *from_text.value();
    CHECK(a.name() == b.name());
    CHECK(a.input_name() == b.input_name());
    CHECK(a.input_shape() == b.input_shape());
    CHECK(a.output_names() == b.output_names());
    CHECK(a.output_shapes() == b.output_shapes());
    const std::vector<winfer::LayerInfo> la = a.layers(), lb = b.layers();
    REQUIRE(la.size() == lb.size());
    for (size_t i = 0; i < la.size(); ++i) {
      CAPTURE(la[i].name);
      CHECK(la[i].name == lb[i].name);
      CHECK(la[i].type == lb[i].type);
      CHECK(la[i].inputs == lb[i].inputs);
      CHECK(la[i].outputs == lb[i].outputs);
      CHECK(la[i].output_shapes == lb[i].output_shapes);
      CHECK(la[i].fused == lb[i].fused);
      CHECK(la[i].flops == lb[i].flops);
      CHECK(la[i].params == lb[i].params);
    }
    const winfer::Tensor input = random_tensor(a.input_shape(), 17, winfer::Layout::kNCHW);
    const winfer::Tensor ya = run_model(direct.value(), input);
    const winfer::Tensor yb = run_model(from_text.value(), input);
    REQUIRE(ya.shape() == yb.shape());
    CHECK(std::memcmp(ya.data(), yb.data(), size_t(ya.numel()) * sizeof(float)) == 0);
    ++models;
  }
  CHECK(models >= 4);
}

TEST_CASE("load memory: damaged ONNX files read the same raw_data as protobuf's own parse, or are refused") {
  // A differential check of the wire-format walk: a valid model's bytes truncated and flipped
  // (seeded). Whenever OnnxFile::open accepts a file, each float initializer reads what
  // protobuf's parse of the whole file holds in raw_data; a file protobuf cannot parse is refused.
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.initializer("w", {4, 3, 3, 3}, onnx_random_values(4 * 3 * 3 * 3, 7));
  b.initializer("bias", {4}, onnx_random_values(4, 8));
  b.node("Conv", {"x", "w", "bias"}, {"y"});
  b.output("y");
  const std::string valid = read_bytes(b.write(dir.file("valid.onnx")));
  std::mt19937 gen(11);
  int accepted = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = valid;
    if (trial % 3 != 1) bytes.resize(gen() % (bytes.size() + 1));
    if (trial % 3 != 0 && !bytes.empty()) {
      for (int flips = 1 + int(gen() % 3); flips > 0; --flips) bytes[gen() % bytes.size()] ^= char(1 << (gen() % 8));
    }
    CAPTURE(trial);
    const std::string path = dir.file("damaged.onnx");
    write_bytes(path, bytes);
    onnx::ModelProto reference;
    const bool protobuf_parses = !bytes.empty() && reference.ParseFromString(bytes);
    auto opened = winfer::onnx_import::OnnxFile::open(path);
    if (!protobuf_parses) {
      CHECK(!opened.ok());
      continue;
    }
    if (!opened.ok()) continue;  // parsed, but not a model winfer reads (header checks)
    ++accepted;
    winfer::onnx_import::OnnxFile& file = *opened.value();
    REQUIRE(file.graph().initializer_size() == reference.graph().initializer_size());
    for (int i = 0; i < reference.graph().initializer_size(); ++i) {
      const onnx::TensorProto& want = reference.graph().initializer(i);
      if (want.data_type() != onnx::TensorProto::FLOAT || !want.has_raw_data() || want.raw_data().size() % 4 != 0 ||
          want.data_location() == onnx::TensorProto::EXTERNAL)
        continue;
      const int64_t count = int64_t(want.raw_data().size() / 4);
      std::vector<float> got(static_cast<size_t>(count) + 1);
      const winfer::Status read = file.read_floats(file.graph().initializer(i), "t", got.data(), count);
      CHECK(read.ok());
      if (read.ok() && count > 0) CHECK(std::memcmp(got.data(), want.raw_data().data(), size_t(count) * 4) == 0);
    }
  }
  CHECK(accepted > 10);
}

// What the loader frees last (its YAML tree, the ONNX import's graph, the weights file's header)
// lies in holes between the weights the model keeps; unless handed back, those pages stay
// resident under the session's arena (a converted RegNet-Y-400MF: 1.2 MiB, more than its peak's
// margin over half of ncnn's). Measured as what a trim of the heap still gives back right after
// the load. glibc only (malloc_trim); the sanitizers' allocators keep their own heap.
#if defined(__GLIBC__) && !defined(WINFER_TEST_SANITIZED)
TEST_CASE("load memory: the loader's freed memory is handed back when the load returns") {
  // A long model text: 600 layers with long names make a yaml-cpp tree of several MiB.
  std::ostringstream yaml;
  yaml << "format: winfer/1\nname: long_names\ninput: {name: input, shape: [1, 8, 4, 4]}\nlayers:\n";
  const std::string stem(160, 'n');
  for (int i = 0; i < 600; ++i) {
    yaml << "  - {name: " << stem << i << ", op: conv2d, in_channels: 8, out_channels: 8, kernel_size: 1}\n";
    yaml << "  - {name: " << stem << "_relu" << i << ", op: relu}\n";
  }
  yaml << "outputs: [" << stem << "_relu599]\n";
  const auto heap_rss = [] {
    return mappings_rss_bytes([](unsigned long long, unsigned long long, const std::string& line) {
      return line.find("[heap]") != std::string::npos;
    });
  };
  if (heap_rss() < 0) return;  // no /proc/self/smaps or no brk heap: nothing to measure
  winfer::LoadOptions options;
  options.random_weights_seed = 1;
  const std::string text = yaml.str();  // kept: a temporary freed after the load would count
  auto model = winfer::Model::load_from_memory(text, nullptr, 0, options, "long_names.yaml");
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  const int64_t after_load = heap_rss();
  ::malloc_trim(0);
  const int64_t after_trim = heap_rss();
  CAPTURE(after_load);
  CAPTURE(after_trim);
  CHECK(after_load - after_trim <= int64_t(64) << 10);
}
#endif
