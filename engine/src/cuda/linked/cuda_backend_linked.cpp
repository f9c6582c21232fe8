// cuda_backend() of programs that link the CUDA backend in (the tests, libwinfer.a): the
// backend object itself.
#include "engine/src/cuda/cuda_backend.h"

namespace winfer {

const DeviceBackend& cuda_backend() { return cuda_backend_implementation(); }

}  // namespace winfer
