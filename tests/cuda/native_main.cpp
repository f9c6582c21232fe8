// Main of the native CUDA test binary (winfer_cuda_tests): the same tests as the emulated binary,
// run on the GPU. Without a usable device (no driver, no GPU) it says why and exits 77, which
// ctest reports as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "kernels/cuda/context.h"

int main(int argc, char** argv) {
  const winfer::cuda::DeviceProbe probe = winfer::cuda::probe_devices();
  if (probe.count == 0) {
    std::printf("winfer_cuda_tests: skipped, no usable CUDA device (%s)\n", probe.reason.c_str());
    return 77;
  }
  std::printf("winfer_cuda_tests: running on %s (%d device%s)\n", probe.name.c_str(), probe.count,
              probe.count > 1 ? "s" : "");
  doctest::Context context(argc, argv);
  return context.run();
}
