// The winfer command line: exit codes, stdout/stderr split, and files it writes.
#include <filesystem>

#include "engine/cli_test_util.h"
#include "engine/model_test_util.h"
#include "engine/src/device_backend.h"
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
  const CommandResult r =
      run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --input " +
              repo_path("models/examples/tiny_net.input.npy") + " --output " + out + " --no-fuse --repeat 0 --profile");
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
  r = run_cli("run " + model + " --batch 2 --seed 3 --repeat 0 --expect " +
              repo_path("models/examples/tiny_net.output.npy"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "FAILED"));
  r = run_cli("run " + model + input + " --repeat 0 --expect " + repo_path("models/examples/tiny_inline.output.npy"));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "the output is [2,10]"));
}

TEST_CASE("cli: run --device cuda without a CUDA device says so, --device auto falls back to the CPU") {
  if (winfer::cuda_backend().availability().count > 0) {
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

// ---- usage errors and option values (issue 20: hostile inputs) ----------------------------------

TEST_CASE("cli: usage errors exit 1 with CLI11's message, --help and --version exit 0") {
  const std::string model = repo_path("models/examples/tiny_net.yaml");
  // Each once gave CLI11's own exit code (105..114) instead of the documented 1.
  for (const std::string& args : {"run " + model + " --bogus", std::string("run"), "run " + model + " --threads 0",
                                  "run " + model + " --batch two", std::string("frobnicate"), std::string("")}) {
    const CommandResult r = run_cli(args);
    INFO(args << ": " << r.stderr_text);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, "error: "));
    CHECK(contains(r.stderr_text, "Run with --help"));
  }
  CommandResult r = run_cli("--help");
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "classify"));
  r = run_cli("run --help");
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "--random-weights"));
  r = run_cli("--version");
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "winfer "));
}

TEST_CASE("cli: an option's value is never the next option (--input --repeat 0)") {
  const std::string model = repo_path("models/examples/tiny_net.yaml");
  struct Case {
    std::string args, option, next;
  };
  // Text, integer and list options of several commands: CLI11 gave each the next argument.
  for (const Case& c : {Case{"run " + model + " --input --repeat 0", "--input", "'--repeat'"},
                        Case{"run " + model + " --batch --top 1", "--batch", "'--top'"},
                        Case{"plan " + model + " --svg --json", "--svg", "'--json'"},
                        Case{"classify " + model + " x.png --conv --json", "--conv", "'--json'"},
                        Case{"eval " + model + " --predictions -h", "--predictions", "'-h'"}}) {
    const CommandResult r = run_cli(c.args);
    INFO(c.args << ": " << r.stderr_text);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, c.option + ": the value is missing: " + c.next + " is the next option"));
  }
  const CommandResult r = run_cli("run " + model + " --input --repeat 0");
  CHECK(contains(r.stderr_text, "write ./--repeat"));  // how to name such a file
}

TEST_CASE("cli: NaN, negative and out-of-range numbers are refused (--tolerance, --min-time, seeds)") {
  const std::string model = repo_path("models/examples/tiny_net.yaml");
  const std::string expect = " --expect " + repo_path("models/examples/tiny_net.output.npy");
  struct Case {
    std::string args, message;
  };
  for (const Case& c :
       {Case{"run " + model + expect + " --tolerance nan", "--tolerance: 'nan' is not a finite number >= 0"},
        Case{"run " + model + expect + " --tolerance -1", "'-1' is not a finite number >= 0"},
        Case{"run " + model + expect + " --tolerance inf", "'inf' is not a finite number"},
        Case{"bench --layers tiny --min-time nan", "--min-time: 'nan' is not a finite number in [0, 3600]"},
        Case{"run " + model + " --seed -1", "--seed: '-1' is not a whole number from 0 to 18446744073709551615"},
        Case{"run " + model + " --seed 18446744073709551616", "'18446744073709551616' is not a whole number"},
        Case{"run " + model + " --seed 1e3", "'1e3' is not a whole number"},
        Case{"run " + model + " --random-weights -3", "--random-weights: '-3' is not a whole number"},
        Case{"plan " + model + " --random-weights 99999999999999999999999", "is not a whole number"},
        Case{"bench --layers tiny --seed -1", "--seed: '-1' is not a whole number"}}) {
    const CommandResult r = run_cli(c.args);
    INFO(c.args << ": " << r.stderr_text);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, c.message));
  }
  // The largest seed is a seed.
  const CommandResult r = run_cli("run " + model + " --seed 18446744073709551615 --repeat 0");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
}

TEST_CASE("cli: options that would be silently ignored are refused") {
  const std::string model = repo_path("models/examples/tiny_net.yaml");
  const std::string weights = repo_path("models/examples/tiny_net.safetensors");
  struct Case {
    std::string args, message;
  };
  for (const Case& c :
       {Case{"run " + model + " --weights " + weights + " --random-weights 1", "--weights excludes --random-weights"},
        Case{"plan " + model + " --weights " + weights + " --random-weights 1", "--weights excludes --random-weights"},
        Case{"run " + model + " --input " + repo_path("models/examples/tiny_net.input.npy") + " --seed 3",
             "--input excludes --seed"},
        Case{"run " + model + " --tolerance 1e-3", "--tolerance requires --expect"},
        Case{"run " + model + " --tf32", "--tf32 applies to CUDA sessions"}}) {
    const CommandResult r = run_cli(c.args);
    INFO(c.args << ": " << r.stderr_text);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, c.message));
  }
}

TEST_CASE("cli: --conv auto runs and benches the per-layer choice, --autotune-cache keeps its timings") {
  TempDir dir;
  const std::string model = repo_path("models/examples/tiny_net.yaml");
  const std::string cache = dir.file("tune.txt");
  // bench times auto beside im2win, measuring every layer into the cache.
  CommandResult r = run_cli("bench " + model + " --conv im2win,auto --runs 2 --min-time 0 --threads 1 --json " +
                            "--autotune-cache " + cache);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "\"conv\":\"auto\""));
  const std::string measured = read_bytes(cache);
  CHECK(contains(measured, "# winfer conv autotune cache"));
  CHECK(contains(measured, "threads=1"));
  // run (and classify, eval) take the same file: every layer found there, nothing is added.
  r = run_cli("run " + model + " --conv auto --threads 1 --top 1 --autotune-cache " + cache);
  CHECK(r.exit_code == 0);
  CHECK(read_bytes(cache) == measured);
  r = run_cli("plan " + model + " --conv im2win,auto --threads 1 --no-measure --autotune-cache " + cache);
  CHECK(r.exit_code == 0);
  CHECK(read_bytes(cache) == measured);
  // Without --conv auto the file would be ignored: refused, naming the flag, and not written.
  const std::string unused = dir.file("unused.txt");
  for (const std::string& args :
       {"run " + model + " --autotune-cache " + unused, "bench " + model + " --conv im2win --autotune-cache " + unused,
        "plan " + model + " --no-measure --autotune-cache " + unused,
        "classify " + model + " " + repo_path("models/fashion/examples/sneaker.png") + " --autotune-cache " + unused}) {
    r = run_cli(args);
    INFO(args << ": " << r.stderr_text);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, "--autotune-cache keeps the timings of --conv auto"));
  }
  CHECK_FALSE(std::filesystem::exists(unused));
}

TEST_CASE("cli: run --top 0 prints no classes, and says nothing false about the output") {
  const CommandResult r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --top 0 --repeat 0");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text.empty());  // was "output [1,10] (not [N, classes]: ...)" for a [N, classes] output
}

TEST_CASE("cli: run says how the batch ran: in runs side by side by default, at once with --images-per-run 0") {
  const std::string run = "run " + repo_path("models/zoo/resnet18.yaml") + " --random-weights 1 --size 32x32 --top 0";
  CommandResult r = run_cli(run + " --batch 4 --threads 2");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "threads 2, batch 4 (runs of 2, 2 side by side), gemm:"));
  r = run_cli(run + " --batch 4 --threads 2 --images-per-run 0");
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stderr_text, "threads 2, batch 4, gemm:"));
}

TEST_CASE("cli: a batch beyond the memory available is refused with the numbers, never std::bad_alloc") {
  // Once: the random input was allocated before the session's memory check, and std::bad_alloc
  // escaped main (exit 134). 2^20 images of ResNet-18 need terabytes on any machine.
  CommandResult r = run_cli("run " + repo_path("models/zoo/resnet18.yaml") +
                            " --random-weights 1 --batch 1048576 --images-per-run 0");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "a session with batch 1048576 needs"));
  CHECK(contains(r.stderr_text, "MiB this machine has available (MemAvailable)"));
  CHECK_FALSE(contains(r.stderr_text, "bad_alloc"));
  // In runs of a quarter of the batch on 2 threads, the message says so.
  r = run_cli("run " + repo_path("models/zoo/resnet18.yaml") +
              " --random-weights 1 --batch 1048576 --threads 2 --images-per-run 262144");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "batch 1048576 in runs of 262144 images, 2 side by side: "));
  CHECK(contains(r.stderr_text, "a session with batch 262144 needs"));
  CHECK_FALSE(contains(r.stderr_text, "bad_alloc"));
  // In the default runs of 2 images the session fits; the random input does not.
  r = run_cli("run " + repo_path("models/zoo/resnet18.yaml") + " --random-weights 1 --batch 1048576 --threads 2");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "the random input [1048576,3,224,224] needs 602112 MiB, more than the"));
  CHECK_FALSE(contains(r.stderr_text, "bad_alloc"));
  // bench --layers: refused before the first layer's data is made, naming the largest layer.
  r = run_cli("bench --layers paper12 --batch 1048576 --runs 1 --no-peak");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "at batch 1048576 (input, weights and two outputs) needs"));
  CHECK(contains(r.stderr_text, "this machine has available"));
}

TEST_CASE("cli: run --input of a zero batch names the file") {
  TempDir dir;
  const std::string empty = dir.file("empty.npy");
  REQUIRE(winfer::write_npy(empty, winfer::Tensor::allocate(winfer::Shape{0, 3, 32, 32})).ok());
  const CommandResult r = run_cli("run " + repo_path("models/examples/tiny_net.yaml") + " --input " + empty);
  INFO(r.stderr_text);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "empty.npy: the input has shape [0,3,32,32], a batch of 0 images"));
}
