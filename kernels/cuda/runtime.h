// The CUDA runtime API, or the host emulator's version of it (kernels/cuda/emu/emu.h) when the
// kernels are built for the host (WINFER_CUDA_EMULATED, the winfer_cuda_emu library). Every file
// of kernels/cuda/ includes this instead of <cuda_runtime.h>, so one source builds both ways.
#pragma once

#if defined(WINFER_CUDA_EMULATED)
#include "kernels/cuda/emu/emu.h"
#else
#include <cuda_runtime.h>
#endif
