// The rule conv_pointwise on CUDA (engine/src/cuda/ops/conv2d_cuda.cpp): a convolution that
// absorbed a sigmoid / hardsigmoid / hardswish / silu runs cuda::pointwise_activation over its
// output after the convolution; the fused model gives the unfused one's bits (the same kernels
// in the same order) for every CUDA algorithm, and the per-layer timings name the function.
// Under the emulator the algorithms built on cuBLAS/cuDNN are refused (checked elsewhere) and
// skipped here.
#include <doctest/doctest.h>

#include <cstring>

#include "engine/fusion_test_util.h"

using namespace winfer_test;

namespace {

#if defined(WINFER_CUDA_EMULATED)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

std::string conv(const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t groups = 1) {
  return "  - {name: " + name + ", op: conv2d, in_channels: " + std::to_string(in) +
         ", out_channels: " + std::to_string(out) + ", kernel_size: " + std::to_string(kernel) +
         ", groups: " + std::to_string(groups) + ", padding: " + std::to_string(kernel / 2) + ", bias: true}\n";
}

}  // namespace

TEST_CASE("conv_pointwise cuda: fused == unfused bit for bit, every algorithm and function") {
  for (const char* fn : {"sigmoid", "hardsigmoid", "hardswish", "silu"}) {
    INFO(fn);
    const std::string yaml = model_header(8, 6, 7) + "layers:\n" + conv("a", 8, 12, 3) + "  - {name: a.act, op: " + fn +
                             "}\n" + conv("dw", 12, 12, 3, 12) + "  - {name: dw.act, op: " + fn + "}\n";
    const auto fused = load_ok(yaml, true, 5), unfused = load_ok(yaml, false, 5);
    REQUIRE(count_type(*fused, fn) == 0);
    winfer::Tensor input = random_tensor(winfer::Shape{2, 8, 6, 7}, 9, winfer::Layout::kNCHW);
    for (int64_t i = 0; i < input.numel(); ++i) input.data()[i] *= 6.f;  // past the clamps and into the tails
    for (const std::string& algorithm : winfer::conv_algorithm_names("cuda")) {
      if (kEmulated && (algorithm == "im2col" || algorithm == "cudnn")) continue;
      INFO("conv=" << algorithm);
      winfer::SessionOptions options;
      options.device = "cuda";
      options.conv_algorithm = algorithm;
      options.poison_unused_memory = true;
      const winfer::Tensor a = run_model(fused, input, options), b = run_model(unfused, input, options);
      REQUIRE(a.shape() == b.shape());
      CHECK(std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0);
      // And the CPU's result, up to the devices' float differences.
      CHECK(relative_diff(a, run_model(fused, input, winfer::SessionOptions{})) <= 1e-5f);
    }
  }
}
