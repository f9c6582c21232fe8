// winfer_parity_unfused: runs a model once with fusion switched off (LoadOptions::fuse = false),
// so every batchnorm2d and relu runs as its own layer instead of being folded into the
// convolution before it. The parity tests use it to compare the unfused engine with PyTorch;
// `winfer run` has no switch for this (a `--no-fuse` flag would make this program unnecessary).
//
//   winfer_parity_unfused MODEL.yaml WEIGHTS.safetensors INPUT.npy OUTPUT.npy ALGORITHM THREADS
//
// Prints "layers: A unfused (B when fused)" and "run: T ms" to stderr, like `winfer run`.
// Exit status 1 with the engine's message on any error, 2 on a usage error.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "winfer/model.h"
#include "winfer/npy.h"
#include "winfer/session.h"

namespace {

int fail(const winfer::Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s MODEL.yaml WEIGHTS.safetensors INPUT.npy OUTPUT.npy ALGORITHM THREADS\n", argv[0]);
    return 2;
  }
  const std::string model_path = argv[1], weights = argv[2], input_path = argv[3], output_path = argv[4];
  winfer::LoadOptions unfused;
  unfused.weights_path = weights;
  unfused.fuse = false;
  auto model = winfer::Model::load(model_path, unfused);
  if (!model.ok()) return fail(model.status());

  // Loaded a second time with fusion only to print how many layers fusion would have removed,
  // which shows in the test log that the unfused path really was taken.
  winfer::LoadOptions fused = unfused;
  fused.fuse = true;
  auto fused_model = winfer::Model::load(model_path, fused);
  if (!fused_model.ok()) return fail(fused_model.status());
  std::fprintf(stderr, "layers: %zu unfused (%zu when fused)\n", model.value()->layers().size(),
               fused_model.value()->layers().size());

  auto input = winfer::read_npy(input_path);
  if (!input.ok()) return fail(input.status());
  winfer::SessionOptions options;
  options.conv_algorithm = argv[5];
  options.threads = std::atoi(argv[6]);
  options.batch = input.value().shape().rank() == 4 ? input.value().shape()[0] : 0;
  auto session = winfer::Session::create(model.value(), options);
  if (!session.ok()) return fail(session.status());

  const auto start = std::chrono::steady_clock::now();
  auto output = session.value()->run(input.value());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!output.ok()) return fail(output.status());
  const winfer::Status written = winfer::write_npy(output_path, output.value());
  if (!written.ok()) return fail(written);
  std::fprintf(stderr, "run: %.2f ms\n", ms);
  return 0;
}
