// The one symbol the bench's CUDA module (libwinfer_bench_cuda.so: cuda_bench.cpp, the CUDA
// kernels and cudart) exports for module/cuda_bench_loader.cpp. Everything else it uses (the
// bench, the engine, the CPU kernels) it takes from the CLI that loads it.
#include "bench/cuda/cuda_bench.h"

extern "C" __attribute__((visibility("default"))) void* winfer_bench_cuda_module_v1() {
  return reinterpret_cast<void*>(&winfer::bench::run_cuda_bench_on_device);
}
