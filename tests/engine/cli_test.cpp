// The winfer command line: exit codes, stdout/stderr split, and files it writes.
#include "engine/cli_test_util.h"
#include "engine/model_test_util.h"
#include "engine/src/session_impl.h"

using namespace winfer_test;


TEST_CASE("cli: info prints layers, fusion, params and FLOPs") {
  const CommandResult r = run_cli("info " + repo_path("models/examples/tiny_net.yaml"));
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "stem"));
  CHECK(contains(r.stdout_text, "+stem_bn +stem_relu"));
  CHECK(contains(r.stdout_text, "params   4126"));
  CHECK(contains(r.stdout_text, "FLOPs"));
}

TEST_CASE("cli: info works on a zoo model without weights") {
  const CommandResult r = run_cli("info " + repo_path("models/zoo/resnet18.yaml"));
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "structure only"));
  CHECK(contains(r.stdout_text, "params   11689512"));  // torchvision's resnet18 parameter count
}

TEST_CASE("cli: run reproduces PyTorch's output file and prints labelled classes") {
  TempDir dir;
  const std::string out = dir.file("out.npy");
  const CommandResult r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --input " +
                                  repo_path("models/examples/tiny_net.input.npy") + " --output " + out +
                                  " --top 3 --repeat 2 --conv direct");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stdout_text, " 1  0."));
  CHECK(contains(r.stderr_text, "median"));
  CHECK(contains(r.stderr_text, "gemm:"));
  auto got = winfer::read_npy(out);
  auto expected = winfer::read_npy(repo_path("models/examples/tiny_net.output.npy"));
  REQUIRE(got.ok());
  REQUIRE(expected.ok());
  CHECK(max_abs_diff(got.value(), expected.value()) <= 1e-5f);
}

TEST_CASE("cli: run --no-fuse keeps batch norm as a layer and still equals PyTorch") {
  TempDir dir;
  const std::string out = dir.file("out.npy");
  const CommandResult r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --input " +
                                  repo_path("models/examples/tiny_net.input.npy") + " --output " + out +
                                  " --no-fuse --repeat 0 --profile");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "stem_bn"));  // in the per-layer profile: not folded away
  auto got = winfer::read_npy(out);
  auto expected = winfer::read_npy(repo_path("models/examples/tiny_net.output.npy"));
  REQUIRE(got.ok());
  REQUIRE(expected.ok());
  CHECK(max_abs_diff(got.value(), expected.value()) <= 1e-5f);
}

TEST_CASE("cli: run with random weights and input, batch 2, threads 2") {
  const CommandResult r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") +
                                  " --random-weights 3 --batch 2 --threads 2 --repeat 1 --profile");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "image 1"));
  CHECK(contains(r.stderr_text, "random(seed=3)"));
  CHECK(contains(r.stderr_text, "stem"));  // the per-layer profile
}

TEST_CASE("cli: errors exit non-zero with a message on stderr") {
  CommandResult r = run_cli("run /nonexistent.yaml");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "error: model file '/nonexistent.yaml' does not exist"));
  r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --input " +
              repo_path("models/examples/tiny_inline.input.npy"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "the model expects [1,3,32,32]"));
  r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --conv nope");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "unknown convolution algorithm 'nope'"));
  r = run_cli("frobnicate");
  CHECK(r.exit_code != 0);
}

TEST_CASE("cli: run --expect compares with a reference output and fails above the tolerance") {
  const std::string model = repo_path("models/examples/tiny_net.yaml");
  const std::string input = " --input " + repo_path("models/examples/tiny_net.input.npy");
  CommandResult r = run_cli("run " + model + input + " --repeat 0 --expect " +
                            repo_path("models/examples/tiny_net.output.npy") + " --tolerance 1e-5");
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "max relative error vs"));
  CHECK(contains(r.stderr_text, ": ok"));
  CHECK(contains(r.stderr_text, "memory (cpu): activation arena"));
  // Another input: the output differs from the golden one, so the check must fail.
  r = run_cli("run " + model + " --batch 2 --seed 3 --repeat 0 --expect " + repo_path("models/examples/tiny_net.output.npy"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "FAILED"));
  r = run_cli("run " + model + input + " --repeat 0 --expect " + repo_path("models/examples/tiny_inline.output.npy"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "the output is [2,10]"));
}

TEST_CASE("cli: run --device cuda without a CUDA device says so, --device auto falls back to the CPU") {
  if (winfer::cuda_availability().count > 0) {
    MESSAGE("a CUDA device is present: the no-device message is not checked here");
    return;
  }
  CommandResult r = run_cli("run " + repo_path("models/zoo/resnet50.yaml") + " --random-weights 1 --device cuda");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "no CUDA device"));
  CHECK(r.stdout_text.empty());
  r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --device auto --repeat 0");
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "device cpu"));
  r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --device tpu");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "unknown device 'tpu'"));
}
