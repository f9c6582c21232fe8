// cuBLAS and cuDNN, opened with dlopen() on first use instead of being linked (native builds
// only; internal).
//
// Why: a linked libcublas pulls in libcublasLt, and with libcudnn that is ~220 MB resident and
// more than 400 MB of address space in every process, `winfer --help` and every --device cpu
// command included. Loaded here, they are mapped only by a process that creates a CUDA session
// (cuBLAS) or runs the cudnn algorithm (cuDNN); docs/CUDA.md "Loading cuBLAS and cuDNN".
//
// Each table holds the few functions winfer calls, typed by the headers' own declarations
// (decltype), so a signature that changes in a new toolkit is a compile error, not a crash.
// Field names are the exported symbol names (cublas_v2.h maps cublasCreate to cublasCreate_v2).
#pragma once

#include <cublas_v2.h>

#include <string>

#include "kernels/cuda/status.h"

#if WINFER_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace winfer {
namespace cuda {

// X-macro lists, one function per entry: clang-format would stagger them.
// clang-format off
#define WINFER_CUBLAS_FUNCTIONS(X)                                                                         \
  X(cublasCreate_v2) X(cublasDestroy_v2) X(cublasSetStream_v2) X(cublasSetMathMode) X(cublasSgemm_v2) \
  X(cublasGetStatusName) X(cublasGetStatusString)

#define WINFER_CUDNN_FUNCTIONS(X)                                                                            \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnCreateTensorDescriptor)     \
  X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor) X(cudnnCreateFilterDescriptor)               \
  X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor) X(cudnnCreateConvolutionDescriptor)          \
  X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor) X(cudnnSetConvolutionGroupCount)   \
  X(cudnnSetConvolutionMathType) X(cudnnGetConvolution2dForwardOutputDim)                                    \
  X(cudnnGetConvolutionForwardAlgorithmMaxCount) X(cudnnFindConvolutionForwardAlgorithm)                     \
  X(cudnnConvolutionForward)
// clang-format on

#define WINFER_DECLARE_FUNCTION(name) decltype(&::name) name = nullptr;

struct CublasApi {
  WINFER_CUBLAS_FUNCTIONS(WINFER_DECLARE_FUNCTION)
};

// The process's cuBLAS, loaded by the first call (thread-safe; later calls return the same table,
// or the same error). Fails with kLibraryError
//   "cuBLAS (libcublas.so.13) could not be loaded: <dlerror>; install ... or use --device cpu".
Status load_cublas(const CublasApi** api);

#if WINFER_HAVE_CUDNN
struct CudnnApi {
  WINFER_CUDNN_FUNCTIONS(WINFER_DECLARE_FUNCTION)
};
// The same for cuDNN (libcudnn.so.9, which opens its own sub-libraries as it needs them).
Status load_cudnn(const CudnnApi** api);
#endif

#undef WINFER_DECLARE_FUNCTION

// The sonames dlopen() is asked for, "libcublas.so.<major>" and "libcudnn.so.<major>" of the
// headers built against (messages and tests).
const char* cublas_soname();
#if WINFER_HAVE_CUDNN
const char* cudnn_soname();
#endif

}  // namespace cuda
}  // namespace winfer
