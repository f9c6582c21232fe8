// The CLI at any batch and image size (issue 22): `winfer run --input X.npy` takes the whole shape
// from the file, and `--size HxW` (with --batch) chooses it for run, plan and bench.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "engine/cli_test_util.h"
#include "winfer/npy.h"

using namespace winfer;
using namespace winfer_test;

namespace {

Tensor random_input(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::allocate(shape);
  uint32_t state = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data()[i] = float(state >> 8) / float(1u << 24) * 2.0f - 1.0f;
  }
  return t;
}

const std::string kResnet34 = repo_path("models/zoo/resnet34.yaml");
const std::string kTiny = repo_path("models/examples/tiny_net.yaml");

}  // namespace

TEST_CASE("cli run: resnet34 runs a 2x3x160x224 --input, and its output equals the library's") {
  TempDir dir;
  const std::string input_path = dir.file("x.npy"), output_path = dir.file("y.npy");
  const Tensor input = random_input(Shape{2, 3, 160, 224}, 9);
  REQUIRE(write_npy(input_path, input).ok());
  const CommandResult r = run_cli("run " + kResnet34 + " --random-weights 5 --input " + input_path +
                                  " --repeat 0 --top 1 --output " + output_path);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "input [2,3,160,224]"));
  CHECK(contains(r.stdout_text, "image 1"));

  auto written = read_npy(output_path);
  REQUIRE(written.ok());
  REQUIRE(written.value().shape() == Shape{2, 1000});
  LoadOptions load;
  load.random_weights_seed = 5;
  auto model = Model::load(kResnet34, load);
  REQUIRE(model.ok());
  SessionOptions options;
  options.input_shape = {2, 3, 160, 224};
  const Tensor want = run_model(model.value(), input, options);
  CHECK(std::memcmp(want.data(), written.value().data(), sizeof(float) * 2000) == 0);
}

TEST_CASE("cli run: an --input the model cannot take names the file and the fixed dim") {
  TempDir dir;
  const std::string channels = dir.file("channels.npy"), rank = dir.file("rank.npy");
  REQUIRE(write_npy(channels, Tensor::allocate(Shape{2, 4, 16, 16})).ok());
  REQUIRE(write_npy(rank, Tensor::allocate(Shape{3, 16, 16})).ok());
  CommandResult r = run_cli("run " + kTiny + " --input " + channels + " --repeat 0");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, channels + ": input has shape [2,4,16,16], the model expects [1,3,32,32] (any batch, "
                                           "height and width)"));
  CHECK(contains(r.stderr_text, "dim 1 (channels) is fixed at 3 by the model"));
  r = run_cli("run " + kTiny + " --input " + rank + " --repeat 0");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "rank 3, but the model's input 'input' has rank 4"));

  // A size the layers do not admit: the layer is named, with the shape.
  const std::string small = dir.file("small.npy");
  REQUIRE(write_npy(small, Tensor::allocate(Shape{1, 3, 8, 8})).ok());
  r = run_cli("run " + kTiny + " --input " + small + " --repeat 0");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "layer 'head' (conv2d)"));
  CHECK(contains(r.stderr_text, "at input shape [1,3,8,8]; the model declares [1,3,32,32]"));

  // --size and --batch must agree with the file.
  const std::string ok = dir.file("ok.npy");
  REQUIRE(write_npy(ok, Tensor::allocate(Shape{2, 3, 24, 40})).ok());
  r = run_cli("run " + kTiny + " --input " + ok + " --size 24x48 --repeat 0");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "--size 24x48 disagrees with the input's shape [2,3,24,40]"));
  r = run_cli("run " + kTiny + " --input " + ok + " --size 24x40 --batch 2 --repeat 0 --top 1");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
}

TEST_CASE("cli run: --size HxW with --batch sizes the session's random input") {
  CommandResult r = run_cli("run " + kTiny + " --size 24x40 --batch 3 --repeat 0 --top 1");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "input [3,3,24,40] (random)"));
  CHECK(contains(r.stdout_text, "image 2"));
  for (const char* bad : {"24", "24x", "x40", "24x40x2", "0x40", "24x-1", "24by40", "16777217x1"}) {
    CAPTURE(bad);
    r = run_cli("run " + kTiny + " --size " + bad + " --repeat 0");
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, "--size '" + std::string(bad) + "': expected HEIGHTxWIDTH, e.g. 160x224"));
  }
  // --size is for image models.
  TempDir dir;
  const std::string features = dir.file("features.yaml");
  write_bytes(features,
              "format: winfer/1\ninput: {name: input, shape: [1, 6]}\nlayers:\n"
              "  - {name: fc, op: linear, in_features: 6, out_features: 2}\n");
  r = run_cli("run " + features + " --random-weights 1 --size 4x4 --repeat 0");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "takes an input of shape [1,6], not an image [N,C,H,W]"));
}

TEST_CASE("cli plan and bench: --size plans and times the session at that size") {
  CommandResult r = run_cli("plan " + kResnet34 + " --size 160x224 --batch 2 --no-measure --json --conv im2win");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json at_size = nlohmann::json::parse(r.stdout_text);
  CHECK(at_size["batch"] == 2);
  CHECK(at_size["input_shape"] == nlohmann::json::array({2, 3, 160, 224}));
  r = run_cli("plan " + kResnet34 + " --no-measure --json --conv im2win");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json declared = nlohmann::json::parse(r.stdout_text);
  CHECK(declared["input_shape"] == nlohmann::json::array({1, 3, 224, 224}));
  CHECK(at_size["algorithms"][0]["arena_bytes"] != declared["algorithms"][0]["arena_bytes"]);
  r = run_cli("plan " + kResnet34 + " --size 160x224 --no-measure --conv im2win");
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "batch 1, input [1,3,160,224]"));

  r = run_cli("bench " + kTiny + " --size 24x40 --batch 2 --runs 2 --min-time 0 --json");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json bench = nlohmann::json::parse(r.stdout_text);
  CHECK(bench["batch"] == 2);
  CHECK(bench["input_shape"] == nlohmann::json::array({2, 3, 24, 40}));
  r = run_cli("bench --layers tiny --size 24x40 --runs 1");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "--size applies to whole networks"));
  r = run_cli("bench " + kTiny + " --size 8x8 --runs 1 --min-time 0");
  CHECK(r.exit_code != 0);
  CHECK(contains(r.stderr_text + r.stdout_text, "layer 'head' (conv2d)"));
}

TEST_CASE("cli: --size is in the --help of run, plan and bench") {
  for (const char* command : {"run", "plan", "bench"}) {
    CAPTURE(command);
    const CommandResult r = run_cli(std::string(command) + " --help");
    CHECK(r.exit_code == 0);
    CHECK(contains(r.stdout_text, "--size"));
    CHECK(contains(r.stdout_text, "160x224"));
  }
}
