// The cuBLAS/cuDNN handles behind Context::libraries (native builds only; internal).
#pragma once

#include <cublas_v2.h>

#include <string>

#include "kernels/cuda/context.h"
#include "kernels/cuda/status.h"

#if WINFER_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace winfer {
namespace cuda {

class Libraries {
 public:
  Libraries() = default;
  ~Libraries();
  Libraries(const Libraries&) = delete;
  Libraries& operator=(const Libraries&) = delete;

  cublasHandle_t blas = nullptr;
#if WINFER_HAVE_CUDNN
  cudnnHandle_t dnn = nullptr;
#endif
  bool allow_tf32 = false;
};

// Ok for CUBLAS_STATUS_SUCCESS, else kLibraryError "what: CUBLAS_STATUS_... (description)".
Status cublas_status(cublasStatus_t status, const std::string& what);
#if WINFER_HAVE_CUDNN
Status cudnn_status(cudnnStatus_t status, const std::string& what);
#endif

}  // namespace cuda
}  // namespace winfer
