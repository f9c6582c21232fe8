// The CUDA runtime API, or the host emulator's version of it (kernels/cuda/emu/emu.h) when the
// kernels are built for the host (the winfer_cuda_emu library, whose include path puts
// kernels/cuda/emu/include/cuda_runtime.h in front of the real one). Every file of kernels/cuda/
// includes this instead of <cuda_runtime.h> directly, so one source builds both ways.
#pragma once

#include <cuda_runtime.h>
