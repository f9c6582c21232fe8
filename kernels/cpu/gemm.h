// Single-precision GEMM through OpenBLAS, loaded at run time.
//
// Debian's OpenBLAS 0.3.21 does not recognise recent Xeons and silently falls back to an SSE3
// kernel ~5x slower than its AVX-512 one unless OPENBLAS_CORETYPE is set before the library
// loads. We therefore dlopen() it ourselves after setting OPENBLAS_CORETYPE from the CPU's
// features (SkylakeX with AVX-512F, Haswell with AVX2+FMA), unless the user already set it.
#pragma once

#include <cstdint>
#include <string>

namespace winfer {

// C[M][N] = alpha * op(A) * op(B) + beta * C, all row-major.
// op(A) is M x K (A is K x M when trans_a), op(B) is K x N (B is N x K when trans_b).
// Falls back to a portable (slower, correct) kernel if OpenBLAS cannot be loaded, and for a call
// that could make OpenBLAS map a new work buffer (128 MiB of address space per concurrent call)
// where none fits: OpenBLAS 0.3.21 retries that mapping without end (gemm.cpp). Never throws.
void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// Threads OpenBLAS may use for one sgemm call (process-wide). winfer's own kernels set 1 and
// parallelise with OpenMP around single-threaded calls: OpenBLAS' pthreads and OpenMP's
// threads busy-wait on the same cores and slow each other down (see conv_im2col.cpp).
void gemm_set_threads(int threads);

// "OpenBLAS 0.3.21 core=SkylakeX (OPENBLAS_CORETYPE=SkylakeX set by winfer)" or
// "portable fallback sgemm (libopenblas.so.0: cannot open shared object file: ...)". Loads
// the library if needed.
std::string gemm_backend_description();

// True when sgemm() calls OpenBLAS (it was loaded and the fallback is not forced).
bool gemm_uses_openblas();

// Calls sgemm() ran on the portable kernel because a new OpenBLAS buffer did not fit in the
// address space (RLIMIT_AS, overcommit), since the process started.
int64_t gemm_calls_kept_from_openblas();

// Test hook: route sgemm() to the portable fallback even when OpenBLAS is loaded, so both
// paths can be checked in one process. Not for production use.
void gemm_force_portable_for_testing(bool force);

}  // namespace winfer
