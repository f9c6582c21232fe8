// The emulator has no cuBLAS or cuDNN: the paths that need them (im2col's GEMM, linear, cudnn)
// report kUnsupported, and their tests run only on a real GPU.
#include "kernels/cuda/blas.h"
#include "kernels/cuda/context.h"

namespace winfer {
namespace cuda {

class Libraries {};

void LibrariesDeleter::operator()(Libraries* libraries) const { delete libraries; }

Status create_libraries(cudaStream_t, bool, LibrariesPtr* out) {
  out->reset();
  return unsupported("cuBLAS and cuDNN are not available in the host emulator");
}

Status sgemm(const Context&, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
             float, float*, int64_t) {
  return unsupported("sgemm: cuBLAS is not available in the host emulator");
}

}  // namespace cuda
}  // namespace winfer
