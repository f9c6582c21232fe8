// winfer bench --device cuda in a build without the CUDA backend (WINFER_CUDA=OFF, or no nvcc).
#include "bench/cuda/cuda_bench.h"

namespace winfer::bench {

Result<CudaBenchReport> run_cuda_bench(const LayerSet& /*set*/, const CudaBenchOptions& /*options*/) {
  return device_error(
      "no CUDA device: this build has no CUDA backend (configured with WINFER_CUDA=OFF, or nvcc was not found)");
}

}  // namespace winfer::bench
