// The one GEMM entry point of the CUDA kernels (internal): row-major like winfer::sgemm on the CPU,
// implemented with cublasSgemm in native/libraries.cpp; the emulator has no cuBLAS and returns
// kUnsupported (emu/libraries_emulated.cpp).
#pragma once

#include <cstdint>

#include "kernels/cuda/context.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// C = alpha * op(A) * op(B) + beta * C on ctx.stream, all matrices row-major device memory:
// op(A) is m x k, op(B) is k x n, C is m x n. Sizes and leading dimensions must fit in int
// (cuBLAS' limit), else kUnsupported. beta == 0 means C is not read.
Status sgemm(const Context& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace cuda
}  // namespace winfer
