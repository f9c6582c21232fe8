// `winfer classify/eval --preprocess imagenet|none|FILE.yaml --labels FILE`: the preprocessing and
// the class names a model file may not carry (an ONNX file carries neither), and what they
// replace for a model that does. The library side: imagenet_preprocess(), read_preprocess_file(),
// read_labels_file() (winfer/image.h).
#include <string>
#include <vector>

#include "engine/classify_test_util.h"
#include "winfer/image.h"

using namespace winfer_test;

namespace {

const char* const kFashionPreprocess = "resize: 28\ncrop: 28\nmean: [0.286]\nstd: [0.353]\nchannel_order: GRAY\n";

// models/fashion/fashion_resnet.yaml without its `labels:` line and its `preprocess:` block,
// with its weights named by an absolute path: a model that, like an ONNX file, carries neither.
std::string bare_fashion_model(const TempDir& dir) {
  std::string yaml = read_bytes(repo_path("models/fashion/fashion_resnet.yaml"));
  const auto cut = [&yaml](const std::string& from, const std::string& to) {
    const size_t begin = yaml.find(from);
    REQUIRE(begin != std::string::npos);
    const size_t end = yaml.find(to, begin);
    REQUIRE(end != std::string::npos);
    yaml.erase(begin, end - begin);
  };
  cut("labels: labels.txt\n", "preprocess:");
  cut("preprocess:", "outputs:");
  const std::string weights = "weights: fashion_resnet.safetensors";
  const size_t at = yaml.find(weights);
  REQUIRE(at != std::string::npos);
  yaml.replace(at, weights.size(), "weights: " + repo_path("models/fashion/fashion_resnet.safetensors"));
  const std::string path = dir.file("bare_fashion.yaml");
  write_bytes(path, yaml);
  return path;
}

void expect_error(const winfer::Status& status, const std::vector<std::string>& fragments) {
  REQUIRE_FALSE(status.ok());
  INFO("message: " << status.message());
  for (const std::string& f : fragments) CHECK(contains(status.message(), f));
}

std::string be32(uint32_t v) {
  return std::string{char(v >> 24), char((v >> 16) & 0xFF), char((v >> 8) & 0xFF), char(v & 0xFF)};
}

}  // namespace

TEST_CASE("classify flags: the imagenet preset is the zoo's preprocess block, read from a file") {
  // The zoo's block, unindented into a file of its own, is what --preprocess FILE.yaml reads.
  const std::string zoo = read_bytes(repo_path("models/zoo/resnet18.yaml"));
  size_t at = zoo.find("\npreprocess:\n");
  REQUIRE(at != std::string::npos);
  at += std::string("\npreprocess:\n").size();
  std::string block;
  while (zoo.compare(at, 2, "  ") == 0) {
    const size_t end = zoo.find('\n', at);
    block += zoo.substr(at + 2, end + 1 - (at + 2));
    at = end + 1;
  }
  TempDir dir;
  write_bytes(dir.file("imagenet.yaml"), block);
  auto read = winfer::read_preprocess_file(dir.file("imagenet.yaml"));
  REQUIRE_MESSAGE(read.ok(), read.status().message());
  const winfer::Preprocess preset = winfer::imagenet_preprocess();
  const winfer::Preprocess& p = read.value();
  CHECK(p.present);
  CHECK(p.resize == preset.resize);
  CHECK(p.crop == preset.crop);
  CHECK(p.mean == preset.mean);
  CHECK(p.std == preset.std);
  CHECK(p.channel_order == preset.channel_order);
  CHECK(preset.resize == 256);
  CHECK(preset.crop == 224);
}

TEST_CASE("classify flags: a bad preprocess file is refused naming the file and the line") {
  TempDir dir;
  const auto error_of = [&dir](const std::string& name, const std::string& text) {
    write_bytes(dir.file(name), text);
    return winfer::read_preprocess_file(dir.file(name)).status();
  };
  expect_error(winfer::read_preprocess_file(dir.file("missing.yaml")).status(),
               {"preprocess file '" + dir.file("missing.yaml") + "' does not exist"});
  expect_error(error_of("unknown.yaml", "resize: 256\nscale: 2\n"),
               {dir.file("unknown.yaml") + ":2: unknown key 'scale' (known: resize, crop, mean, std, channel_order)"});
  // The keys belong at the top level; a copy of a model's block with its key is refused clearly.
  expect_error(error_of("nested.yaml", "preprocess:\n  resize: 256\n"),
               {dir.file("nested.yaml") + ":1:", "at its top level", "not under 'preprocess:'"});
  expect_error(error_of("std.yaml", "mean: [0.5]\nstd: [0]\n"),
               {dir.file("std.yaml") + ":2: 'std' values must be > 0"});
  expect_error(error_of("order.yaml", "channel_order: YUV\n"),
               {dir.file("order.yaml") + ":1: 'channel_order' must be RGB, BGR or GRAY, got 'YUV'"});
  expect_error(error_of("crop.yaml", "crop: -3\n"), {dir.file("crop.yaml") + ":1: 'crop' must be a positive integer"});
  expect_error(error_of("mean.yaml", "mean: 0.5\n"), {dir.file("mean.yaml") + ":1: 'mean' must be a list of numbers"});
  expect_error(error_of("twice.yaml", "crop: 2\ncrop: 3\n"),
               {dir.file("twice.yaml") + ":2: duplicate key 'crop' in the preprocess file (first at line 1)"});
  expect_error(error_of("list.yaml", "- resize\n"), {dir.file("list.yaml"), "must be a mapping of resize, crop"});
  expect_error(error_of("empty.yaml", ""), {dir.file("empty.yaml"), "must be a mapping of resize, crop"});
  expect_error(error_of("syntax.yaml", "mean: [0.5\n"), {dir.file("syntax.yaml"), "YAML syntax error"});
  // docs/ERRORS.md, "Limits": 1 MiB, refused by its size before it is read.
  expect_error(error_of("huge.yaml", "mean: [" + std::string((1 << 20) - 8, '0') + "]\n"),
               {"preprocess file '" + dir.file("huge.yaml") + "' is 1048577 bytes, more than the limit of 1048576"});
  // A model's block keeps its own words.
  expect_load_error(model_header() + "preprocess: {scale: 2}\nlayers:\n  - {name: r, op: relu}\n",
                    {"unknown key 'preprocess.scale'"});
}

TEST_CASE("classify flags: read_labels_file reads one name per line, and refuses binary data naming the line") {
  TempDir dir;
  write_bytes(dir.file("labels.txt"), "cat\r\nsea lion\n\ttabby\n");
  auto labels = winfer::read_labels_file(dir.file("labels.txt"));
  REQUIRE(labels.ok());
  CHECK(labels.value() == std::vector<std::string>{"cat", "sea lion", "\ttabby"});
  write_bytes(dir.file("binary.txt"), std::string("cat\ndo\0g\n", 9));
  expect_error(winfer::read_labels_file(dir.file("binary.txt")).status(),
               {"labels file '" + dir.file("binary.txt") + "': line 2 holds the control byte 0x00"});
  expect_error(winfer::read_labels_file(dir.file("none.txt")).status(),
               {"labels file '" + dir.file("none.txt") + "' does not exist"});
}

TEST_CASE("classify flags: a model without labels and preprocessing classifies as the full model with the flags") {
  TempDir dir;
  const std::string bare = bare_fashion_model(dir);
  const std::string images = repo_path("models/fashion/examples");
  write_bytes(dir.file("fashion.yaml"), kFashionPreprocess);
  const CommandResult full = run_cli("classify " + repo_path("models/fashion/fashion_resnet.yaml") + " " + images);
  REQUIRE(full.exit_code == 0);
  const CommandResult flags = run_cli("classify " + bare + " " + images + " --preprocess " + dir.file("fashion.yaml") +
                                      " --labels " + repo_path("models/fashion/labels.txt"));
  INFO(flags.stderr_text);
  CHECK(flags.exit_code == 0);
  CHECK(flags.stdout_text == full.stdout_text);

  // Without the flags, the bare model gets no preprocessing (28x28 gray images fit its input)
  // and prints class indices.
  const CommandResult bare_run = run_cli("classify " + bare + " " + images + " --top 1");
  CHECK(bare_run.exit_code == 0);
  CHECK(contains(bare_run.stdout_text, "  class "));
  // --preprocess none is that same preprocessing.
  const CommandResult none = run_cli("classify " + bare + " " + images + " --top 1 --preprocess none");
  CHECK(none.exit_code == 0);
  CHECK(none.stdout_text == bare_run.stdout_text);
}

TEST_CASE("classify flags: --labels and --preprocess replace the model's own") {
  TempDir dir;
  const std::string model = repo_path("models/fashion/fashion_resnet.yaml");
  const std::string image = repo_path("models/fashion/examples/sneaker.png");
  std::string names;
  for (int i = 0; i < 10; ++i) names += "name" + std::to_string(i) + "\n";
  write_bytes(dir.file("names.txt"), names);
  CommandResult r = run_cli("classify " + model + " " + image + " --top 1 --labels " + dir.file("names.txt"));
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "  name7\n"));  // Sneaker is class 7
  CHECK_FALSE(contains(r.stdout_text, "Sneaker"));
  r = run_cli("classify " + model + " " + image + " --top 1 --json --labels " + dir.file("names.txt"));
  CHECK(contains(r.stdout_text, "\"label\": \"name7\""));

  // The model's own block given as a file gives the same numbers.
  write_bytes(dir.file("fashion.yaml"), kFashionPreprocess);
  const CommandResult own = run_cli("classify " + model + " " + image);
  r = run_cli("classify " + model + " " + image + " --preprocess " + dir.file("fashion.yaml"));
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text == own.stdout_text);
  // Another one changes them (no normalization: other probabilities).
  r = run_cli("classify " + model + " " + image + " --preprocess none");
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text != own.stdout_text);
}

TEST_CASE("classify flags: wrong values are refused with the choices, the file or the model's channels") {
  TempDir dir;
  const std::string model = repo_path("models/fashion/fashion_resnet.yaml");
  const std::string image = repo_path("models/fashion/examples/bag.png");
  CommandResult r = run_cli("classify " + model + " " + image + " --preprocess resnet");
  CHECK(r.exit_code == 1);
  CHECK(
      contains(r.stderr_text, "error: --preprocess resnet: unknown preprocessing (choose imagenet, none, or a .yaml"));
  CHECK(r.stdout_text.empty());

  r = run_cli("classify " + model + " " + image + " --preprocess imagenet");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, model + ": --preprocess imagenet: preprocess.channel_order RGB gives 3 channel(s), "
                                        "but the model's input [1,1,28,28] has 1"));

  write_bytes(dir.file("rgb.yaml"), "resize: 28\ncrop: 28\nmean: [0.5, 0.5, 0.5]\nstd: [0.5, 0.5, 0.5]\n");
  r = run_cli("classify " + model + " " + image + " --preprocess " + dir.file("rgb.yaml"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "--preprocess " + dir.file("rgb.yaml") + ": preprocess.channel_order RGB gives 3"));
  write_bytes(dir.file("crop.yaml"), "crop: 24\nchannel_order: GRAY\n");
  r = run_cli("classify " + model + " " + image + " --preprocess " + dir.file("crop.yaml"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "preprocess.crop 24 does not give the model's input size 28x28"));
  write_bytes(dir.file("bad.yaml"), "channel_order: GRAY\nsize: 28\n");
  r = run_cli("classify " + model + " " + image + " --preprocess " + dir.file("bad.yaml"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, dir.file("bad.yaml") + ":2: unknown key 'size'"));
  r = run_cli("classify " + model + " " + image + " --preprocess " + dir.file("missing.yaml"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "preprocess file '" + dir.file("missing.yaml") + "' does not exist"));

  // A labels file that cannot be read stops the command before any image is classified.
  r = run_cli("classify " + model + " " + image + " --labels " + dir.file("missing.txt"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "labels file '" + dir.file("missing.txt") + "' does not exist"));
  CHECK(r.stdout_text.empty());
  // A count that does not match the classes: as a model's own labels file, a warning and indices.
  write_bytes(dir.file("three.txt"), "a\nb\nc\n");
  r = run_cli("classify " + model + " " + image + " --top 1 --labels " + dir.file("three.txt"));
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "warning: --labels " + dir.file("three.txt") +
                                    " has 3 labels for 10 classes; printing class indices"));
  CHECK(contains(r.stdout_text, "  class 8\n"));  // Bag
}

TEST_CASE("classify flags: --help of classify and eval names the flags and the ONNX example") {
  for (const char* command : {"classify", "eval"}) {
    CAPTURE(command);
    const CommandResult r = run_cli(std::string(command) + " --help");
    CHECK(r.exit_code == 0);
    CHECK(contains(r.stdout_text, "--preprocess"));
    CHECK(contains(r.stdout_text, "--labels"));
    CHECK(contains(r.stdout_text, "imagenet"));
    CHECK(
        contains(r.stdout_text,
                 "winfer classify resnet50.onnx --preprocess imagenet --labels models/labels/imagenet.txt photo.jpg"));
  }
}

TEST_CASE("classify flags: eval takes --preprocess and --labels") {
  // Three 28x28 images and their labels; tiny_inline (1x6x6 gray, 3 classes) has no preprocess
  // block and no labels.
  TempDir dir;
  std::string pixels(3 * 28 * 28, '\0');
  for (size_t i = 0; i < 28 * 28; ++i) pixels[28 * 28 + i] = char(i % 251);
  for (size_t i = 0; i < 28 * 28; ++i) pixels[2 * 28 * 28 + i] = char(255);
  write_bytes(dir.file("t10k-images-idx3-ubyte"), be32(0x803) + be32(3) + be32(28) + be32(28) + pixels);
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), be32(0x801) + be32(3) + std::string("\x00\x01\x02", 3));
  const std::string model = repo_path("models/examples/tiny_inline.yaml");
  const std::string data = " --data " + dir.path();

  CommandResult r = run_cli("eval " + model + data);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "the model expects 6x6"));

  write_bytes(dir.file("six.yaml"), "resize: 6\ncrop: 6\nchannel_order: GRAY\n");
  r = run_cli("eval " + model + data + " --preprocess " + dir.file("six.yaml"));
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, ": 3 images"));
  CHECK(contains(r.stdout_text, "  class 0 "));
  write_bytes(dir.file("abc.txt"), "alpha\nbeta\ngamma\n");
  const CommandResult named =
      run_cli("eval " + model + data + " --preprocess " + dir.file("six.yaml") + " --labels " + dir.file("abc.txt"));
  CHECK(named.exit_code == 0);
  CHECK(contains(named.stdout_text, "  alpha "));
  CHECK_FALSE(contains(named.stdout_text, "class 0"));

  write_bytes(dir.file("two.txt"), "alpha\nbeta\n");
  r = run_cli("eval " + model + data + " --preprocess " + dir.file("six.yaml") + " --labels " + dir.file("two.txt"));
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "has 2 labels for 3 classes; printing class indices"));
  CHECK(contains(r.stdout_text, "  class 0 "));

  r = run_cli("eval " + model + data + " --preprocess imagenet");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "--preprocess imagenet: preprocess.channel_order RGB gives 3 channel(s)"));
  r = run_cli("eval " + model + data + " --preprocess vgg");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "unknown preprocessing (choose imagenet, none"));
  r = run_cli("eval " + model + data + " --labels " + dir.file("nothing.txt"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "labels file '" + dir.file("nothing.txt") + "' does not exist"));
}
