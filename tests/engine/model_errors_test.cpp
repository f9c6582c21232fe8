// Bad model files get a clear error naming the file, line, layer or tensor — never a crash.
#include "engine/model_test_util.h"
#include "engine/src/session_impl.h"

using namespace winfer_test;

namespace {

const std::string kConvLayer =
    "  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, padding: 1}\n";

}  // namespace

TEST_CASE("model error: missing file names the path") {
  auto model = winfer::Model::load("/nonexistent/dir/model.yaml");
  REQUIRE_FALSE(model.ok());
  CHECK(model.status().code() == winfer::ErrorCode::kNotFound);
  CHECK(contains(model.status().message(), "/nonexistent/dir/model.yaml"));
}

TEST_CASE("model error: YAML syntax error reports the line") {
  expect_load_error(model_header() + "layers:\n  - {name: conv, op: conv2d\n  - [unclosed\n",
                    {"model.yaml:", "YAML syntax error"});
  TempDir dir;
  auto model = load_text(dir, "format: winfer/1\nlayers: [a, b\n  c: d\n");
  REQUIRE_FALSE(model.ok());
  CHECK(model.status().code() == winfer::ErrorCode::kParseError);
}

TEST_CASE("model error: not a mapping, missing format, wrong format, unknown top-level key") {
  expect_load_error("- 1\n- 2\n", {"expected a YAML mapping"});
  expect_load_error("input: {shape: [1,3,8,8]}\nlayers:\n" + kConvLayer, {"missing 'format"});
  expect_load_error("format: winfer/9\ninput: {shape: [1,3,8,8]}\nlayers:\n" + kConvLayer, {"winfer/9", "winfer/1"});
  expect_load_error(model_header() + "layerz:\n" + kConvLayer, {"unknown top-level key 'layerz'", "layers"});
}

TEST_CASE("model error: input shape missing, wrong rank, negative, absurd") {
  expect_load_error("format: winfer/1\nlayers:\n" + kConvLayer, {"missing 'input"});
  expect_load_error("format: winfer/1\ninput: {shape: [1, 3, 8]}\nlayers:\n" + kConvLayer, {"input.shape", "4 dims"});
  expect_load_error("format: winfer/1\ninput: {shape: [1, -3, 8, 8]}\nlayers:\n" + kConvLayer, {"input.shape", ">= 1"});
  expect_load_error("format: winfer/1\ninput: {shape: [100000, 100000, 100000, 100000]}\nlayers:\n" + kConvLayer,
                    {"input.shape", "2^40"});
  expect_load_error("format: winfer/1\ninput: {shape: [1, x, 8, 8]}\nlayers:\n" + kConvLayer,
                    {"model.yaml:2", "list of integers"});
}

TEST_CASE("model error: unknown op names it and lists the known ones") {
  expect_load_error(model_header() + "layers:\n  - {name: c1, op: convolution}\n",
                    {"model.yaml:4", "layer 'c1'", "unknown op 'convolution'", "conv2d", "maxpool2d"});
}

TEST_CASE("model error: missing and unknown attributes") {
  expect_load_error(model_header() + "layers:\n  - {name: conv, op: conv2d, in_channels: 3, kernel_size: 3}\n",
                    {"layer 'conv' (conv2d)", "missing attribute 'out_channels'"});
  expect_load_error(
      model_header() +
          "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, strid: 2}\n",
      {"layer 'conv' (conv2d)", "unknown attribute 'strid'"});
  expect_load_error(
      model_header() + "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: three}\n",
      {"attribute 'kernel_size'", "three"});
  expect_load_error(
      model_header() + "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 0}\n",
      {"kernel_size", ">= 1"});
  expect_load_error(
      model_header() + "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: {a: 1}}\n",
      {"attribute 'kernel_size'", "value or a list"});
}

TEST_CASE("model error: absurd dimensions are rejected before anything overflows") {
  expect_load_error(
      model_header() +
          "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4000000000000, kernel_size: 3}\n",
      {"layer 'conv'", "2^40"});
  expect_load_error(model_header() +
                        "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 99999999999999999999999, "
                        "kernel_size: 3}\n",
                    {"layer 'conv'", "out_channels"});
}

TEST_CASE("model error: layer structure (name, duplicate, inputs)") {
  expect_load_error(model_header() + "layers:\n  - {op: relu}\n", {"has no 'name'"});
  expect_load_error(model_header() + "layers:\n  - {name: a, op: relu}\n  - {name: a, op: relu}\n",
                    {"'a'", "defined twice"});
  expect_load_error(model_header() + "layers:\n  - {name: 'a:1', op: relu}\n", {"no ':'"});
  expect_load_error(model_header() + "layers:\n  - {name: r, op: relu, input: nowhere}\n",
                    {"layer 'r' (relu)", "input 'nowhere'", "not the graph input"});
  expect_load_error(model_header() + "layers:\n  - {name: s, op: add, inputs: [input]}\n",
                    {"layer 's' (add)", "takes 2 input(s), got 1"});
  expect_load_error(model_header() + "layers:\n  - {name: s, op: relu, input: input, inputs: [input]}\n", {"not both"});
  expect_load_error(model_header() + "layers: []\n", {"non-empty list"});
  expect_load_error(model_header() + "layers:\n  - {name: r, op: relu}\noutputs: [nothing]\n", {"output 'nothing'"});
  expect_load_error(model_header() + "layers:\n  - {name: s, op: split, chunks: 3}\n  - {name: r, op: relu}\n",
                    {"layer 'r' (relu)", "several outputs", "'s:0'"});
  expect_load_error(model_header() + "layers:\n  - {name: s, op: split, chunks: 3}\n",
                    {"last layer has several outputs"});
}

TEST_CASE("model error: a cycle names the layers on it") {
  expect_load_error(model_header() +
                        "layers:\n  - {name: a, op: add, inputs: [input, c]}\n  - {name: b, op: relu, input: a}\n"
                        "  - {name: c, op: relu, input: b}\n",
                    {"cycle", "'a'", "'b'", "'c'"});
}

TEST_CASE("model error: shape mismatches name both shapes") {
  expect_load_error(
      model_header() + "layers:\n  - {name: conv, op: conv2d, in_channels: 4, out_channels: 4, kernel_size: 3}\n",
      {"model.yaml:4", "layer 'conv' (conv2d)", "[1,3,8,8]", "in_channels = 4"});
  expect_load_error(model_header() + "layers:\n" + kConvLayer + "  - {name: sum, op: add, inputs: [conv, input]}\n",
                    {"layer 'sum' (add)", "[1,4,8,8]", "[1,3,8,8]"});
  expect_load_error(
      model_header() + "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 11}\n",
      {"layer 'conv'", "smaller than the dilated kernel"});
}

TEST_CASE("model error: weights missing, wrong shape, wrong dtype") {
  const std::string yaml = model_header() + "layers:\n" + kConvLayer;
  expect_load_error(yaml, {"layer 'conv' (conv2d)", "conv.weight", "--weights", "--random-weights"});

  TempDir dir;
  const std::string weights = dir.file("w.safetensors");
  {  // the right name with the wrong shape
    REQUIRE(winfer::write_safetensors(weights, {{"conv.weight", random_tensor(winfer::Shape{4, 3, 5, 5}, 1)},
                                                {"conv.bias", random_tensor(winfer::Shape{4}, 2)}})
                .ok());
    auto model = load_text(dir, yaml + "weights: w.safetensors\n");
    REQUIRE_FALSE(model.ok());
    CHECK(contains(model.status().message(), "conv.weight"));
    CHECK(contains(model.status().message(), "[4,3,5,5]"));
    CHECK(contains(model.status().message(), "expected [4,3,3,3]"));
  }
  {  // a missing tensor
    REQUIRE(winfer::write_safetensors(weights, {{"conv.weight", random_tensor(winfer::Shape{4, 3, 3, 3}, 1)}}).ok());
    auto model = load_text(dir, yaml + "weights: w.safetensors\n");
    REQUIRE_FALSE(model.ok());
    CHECK(contains(model.status().message(), "has no tensor 'conv.bias'"));
  }
  {  // a wrong dtype: F64 data, written byte by byte
    const std::string header =
        R"({"conv.weight":{"dtype":"F64","shape":[4,3,3,3],"data_offsets":[0,864]},"conv.bias":{"dtype":"F32","shape":[4],"data_offsets":[864,880]}})";
    write_bytes(weights, le_bytes(header.size(), 8) + header + std::string(880, '\0'));
    auto model = load_text(dir, yaml + "weights: w.safetensors\n");
    REQUIRE_FALSE(model.ok());
    CHECK(contains(model.status().message(), "dtype F64, expected F32"));
  }
  {  // a corrupt file: the header length runs past the end
    write_bytes(weights, le_bytes(1000, 8) + "{}");
    auto model = load_text(dir, yaml + "weights: w.safetensors\n");
    REQUIRE_FALSE(model.ok());
    CHECK(contains(model.status().message(), "model.yaml: weights"));
    CHECK(contains(model.status().message(), "w.safetensors"));
  }
  {  // a weights file that does not exist
    auto model = load_text(dir, yaml + "weights: missing.safetensors\n");
    REQUIRE_FALSE(model.ok());
    CHECK(contains(model.status().message(), "missing.safetensors"));
  }
}

TEST_CASE("model error: inline tensors with the wrong count or shape") {
  const std::string yaml = model_header(1, 4, 4) +
                           "layers:\n  - {name: conv, op: conv2d, in_channels: 1, out_channels: 1, kernel_size: 1}\n";
  expect_load_error(
      yaml + "tensors:\n  conv.weight: {shape: [1, 1, 1, 1], data: [1, 2]}\n  conv.bias: {shape: [1], data: [0]}\n",
      {"tensors.conv.weight", "2 numbers"});
  expect_load_error(
      yaml + "tensors:\n  conv.weight: {shape: [1, 1, 2, 1], data: [1, 2]}\n  conv.bias: {shape: [1], data: [0]}\n",
      {"inline tensor 'conv.weight'", "[1,1,2,1]", "expected [1,1,1,1]"});
  expect_load_error(yaml + "tensors:\n  conv.weight: {shape: [1, 1, 1, 1], data: [1]}\n",
                    {"no inline tensor 'conv.bias'"});
}

TEST_CASE("model error: bad preprocess block") {
  expect_load_error(model_header() + "preprocess: {resize: -1}\nlayers:\n" + kConvLayer, {"preprocess.resize"});
  expect_load_error(model_header() + "preprocess: {channel_order: XYZ}\nlayers:\n" + kConvLayer, {"RGB, BGR or GRAY"});
  expect_load_error(model_header() + "preprocess: {std: [0, 1, 1]}\nlayers:\n" + kConvLayer, {"preprocess.std"});
  expect_load_error(model_header() + "preprocess: {flip: true}\nlayers:\n" + kConvLayer,
                    {"unknown key 'preprocess.flip'"});
}

TEST_CASE("session error: wrong input shape, unknown algorithm, bad threads") {
  TempDir dir;
  winfer::LoadOptions options;
  options.random_weights_seed = 1;
  auto model = load_text(dir, model_header() + "layers:\n" + kConvLayer, options);
  REQUIRE(model.ok());
  winfer::SessionOptions so;
  so.conv_algorithm = "fft";
  auto bad = winfer::Session::create(model.value(), so);
  REQUIRE_FALSE(bad.ok());
  CHECK(contains(bad.status().message(), "unknown convolution algorithm 'fft'"));
  CHECK(contains(bad.status().message(), "im2col"));
  so = {};
  so.threads = 0;
  CHECK_FALSE(winfer::Session::create(model.value(), so).ok());

  auto session = winfer::Session::create(model.value());
  REQUIRE(session.ok());
  auto out = session.value()->run(random_tensor(winfer::Shape{1, 3, 9, 8}, 3, winfer::Layout::kNCHW));
  REQUIRE_FALSE(out.ok());
  CHECK(contains(out.status().message(), "[1,3,9,8]"));
  CHECK(contains(out.status().message(), "expected [1,3,8,8]"));
}

TEST_CASE("model error: a tensor both inline and in the weights file") {
  TempDir dir;
  REQUIRE(winfer::write_safetensors(dir.file("w.safetensors"),
                                    {{"conv.weight", random_tensor(winfer::Shape{1, 1, 1, 1}, 1)},
                                     {"conv.bias", random_tensor(winfer::Shape{1}, 2)}})
              .ok());
  auto model = load_text(dir, model_header(1, 4, 4) +
                                  "weights: w.safetensors\nlayers:\n"
                                  "  - {name: conv, op: conv2d, in_channels: 1, out_channels: 1, kernel_size: 1}\n"
                                  "tensors:\n  conv.bias: {shape: [1], data: [0.5]}\n");
  REQUIRE_FALSE(model.ok());
  CHECK(contains(model.status().message(), "'conv.bias' is defined both inline and in"));
}

TEST_CASE("model error: absurd padding or stride") {
  expect_load_error(model_header() +
                        "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, "
                        "padding: 9223372036854775807}\n",
                    {"layer 'conv' (conv2d)", "<= 2^24"});
  expect_load_error(model_header() +
                        "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, "
                        "stride: [1, 99999999999]}\n",
                    {"layer 'conv' (conv2d)", "<= 2^24"});
}

TEST_CASE("model error: a key given twice in any mapping is refused with both lines") {
  // yaml-cpp keeps both entries and node["key"] finds one of them: the other value was lost.
  expect_load_error(model_header() + "input: {name: x, shape: [1, 3, 8, 8]}\nlayers:\n" + kConvLayer,
                    {"model.yaml:3: duplicate key 'input' in the model's top level (first at line 2)"});
  expect_load_error("format: winfer/1\ninput: {name: input, shape: [1, 3, 8, 8], name: other}\nlayers:\n" + kConvLayer,
                    {"model.yaml:2: duplicate key 'name' in 'input'"});
  expect_load_error(model_header() + "preprocess:\n  resize: 8\n  resize: 9\nlayers:\n" + kConvLayer,
                    {"model.yaml:5: duplicate key 'resize' in 'preprocess' (first at line 4)"});
  expect_load_error(model_header() + "layers:\n  - name: r\n    op: relu\n    name: s\n",
                    {"model.yaml:6: duplicate key 'name' in layer 0 (first at line 4)"});
  expect_load_error(model_header() +
                        "layers:\n  - {name: conv, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, "
                        "kernel_size: 1}\n",
                    {"duplicate key 'kernel_size' in layer 0"});
  const std::string conv1x1 =
      model_header(1, 4, 4) +
      "layers:\n  - {name: conv, op: conv2d, in_channels: 1, out_channels: 1, kernel_size: 1}\n";
  expect_load_error(conv1x1 + "tensors:\n  conv.bias: {shape: [1], data: [0]}\n  conv.bias: {shape: [1], data: [1]}\n",
                    {"duplicate key 'conv.bias' in 'tensors'"});
  expect_load_error(conv1x1 + "tensors:\n  conv.bias: {shape: [1], data: [0], data: [1]}\n",
                    {"duplicate key 'data' in 'tensors.conv.bias'"});
  // A key that is not a name (a list) is refused rather than read as "".
  expect_load_error(model_header() + "? [a, b]\n: 1\nlayers:\n" + kConvLayer,
                    {"must be a name, not a list or a mapping"});
}

TEST_CASE("model error: NUL and other control characters are refused in every name, key and value") {
  // A NUL would end the name wherever it becomes a C string: "3\0junk" read as 3 by strtoll,
  // a weights path cut short, a layer name printed as half of itself.
  const std::string relu = "layers:\n  - {name: r, op: relu}\n";
  expect_load_error(model_header() + "layers:\n  - {name: \"r\\0evil\", op: relu}\n",
                    {"model.yaml:4: 'name' is 'r\\x00evil', with a control character at byte 1"});
  expect_load_error("format: winfer/1\ninput: {name: \"in\\x01\", shape: [1, 3, 8, 8]}\n" + relu,
                    {"'input.name' is 'in\\x01'"});
  expect_load_error(model_header() + "layers:\n  - {name: r, op: relu, input: \"input\\0\"}\n",
                    {"'input' is 'input\\x00'"});
  expect_load_error(model_header() + "layers:\n  - {name: r, op: relu, inputs: [\"in\\tput\"]}\n",
                    {"'inputs' is 'in\\x09put'"});
  expect_load_error(model_header() +
                        "layers:\n  - {name: c, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: 3, "
                        "params: \"c\\0x\"}\n",
                    {"'params' is 'c\\x00x'"});
  expect_load_error(model_header() + relu + "outputs: \"r\\0\"\n", {"'outputs' is 'r\\x00'"});
  expect_load_error(model_header() + "weights: \"w.safetensors\\0.txt\"\n" + relu,
                    {"'weights' is 'w.safetensors\\x00.txt'"});
  expect_load_error(model_header() + "labels: \"l\\nx\"\n" + relu, {"'labels' is 'l\\x0ax'"});
  expect_load_error("format: winfer/1\nname: \"m\\0\"\ninput: {shape: [1, 3, 8, 8]}\n" + relu, {"'name' is 'm\\x00'"});
  // Attribute values and keys, and inline tensor names.
  expect_load_error(
      model_header() +
          "layers:\n  - {name: c, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: \"3\\0junk\"}\n",
      {"attribute 'kernel_size' is '3\\x00junk'"});
  expect_load_error(
      model_header() +
          "layers:\n  - {name: c, op: conv2d, in_channels: 3, out_channels: 4, kernel_size: [3, \"3\\0\"]}\n",
      {"attribute 'kernel_size' is '3\\x00'"});
  expect_load_error(model_header() + "layers:\n  - {name: r, op: relu, \"x\\0\": 1}\n", {"key of layer 0 is 'x\\x00'"});
  expect_load_error(model_header(1, 4, 4) +
                        "layers:\n  - {name: conv, op: conv2d, in_channels: 1, out_channels: 1, kernel_size: 1}\n"
                        "tensors:\n  \"conv.bias\\0\": {shape: [1], data: [0]}\n",
                    {"key of 'tensors' is 'conv.bias\\x00'"});
}

TEST_CASE("model error: YAML nested past yaml-cpp's depth limit says so, with the line") {
  // yaml-cpp's own message for this is "bad file".
  for (const std::string& nesting : {std::string(3000, '[') + std::string(3000, ']'), [] {
                                       std::string s;
                                       for (int i = 0; i < 3000; ++i) s += "{a: ";
                                       return s + std::string(3000, '}');
                                     }()}) {
    TempDir dir;
    auto model = load_text(dir, "format: winfer/1\nx: " + nesting + "\n");
    REQUIRE_FALSE(model.ok());
    const std::string& message = model.status().message();
    INFO("message: " << message);
    CHECK(model.status().code() == winfer::ErrorCode::kParseError);
    CHECK(contains(message, "model.yaml:2: YAML nesting deeper than"));
    CHECK(contains(message, "levels (yaml-cpp's limit; a model file nests 4)"));
    CHECK_FALSE(contains(message, "bad file"));
  }
}

TEST_CASE("session error: check_host_memory_for refuses more than the machine has, with the numbers") {
  CHECK(winfer::check_host_memory_for("a small buffer", 4096).ok());
  const winfer::Status s = winfer::check_host_memory_for("the random input [1048576,3,224,224]", size_t(1) << 60);
  if (winfer::available_host_memory() == 0) {
    MESSAGE("no MemAvailable here: nothing to check against");
    CHECK(s.ok());
    return;
  }
  REQUIRE_FALSE(s.ok());
  CHECK(s.code() == winfer::ErrorCode::kOutOfMemory);
  CHECK(contains(s.message(), "the random input [1048576,3,224,224] needs 1099511627776 MiB, more than the"));
  CHECK(contains(s.message(), "MiB this machine has available (MemAvailable); use a smaller batch"));
}
