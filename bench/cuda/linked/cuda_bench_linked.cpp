// run_cuda_bench() of programs that link the CUDA layer bench in (the tests).
#include "bench/cuda/cuda_bench.h"

namespace winfer::bench {

Result<CudaBenchReport> run_cuda_bench(const LayerSet& set, const CudaBenchOptions& options) {
  return run_cuda_bench_on_device(set, options);
}

}  // namespace winfer::bench
