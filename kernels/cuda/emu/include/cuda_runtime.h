// The host emulator under the CUDA runtime's own header name. The emulated library
// (winfer_cuda_emu, CMakeLists.txt) puts this folder first on the include path of everything built
// against it, so `#include <cuda_runtime.h>` (kernels/cuda/runtime.h) is the real runtime in the
// nvcc build and the emulator here, and no source needs an #if to choose between them.
#pragma once

#include "kernels/cuda/emu/emu.h"
