// The cuBLAS/cuDNN handles behind Context::libraries (native builds only; internal). Both
// libraries are opened on first use (loader.h): cuBLAS by create_libraries(), cuDNN by the first
// cudnn() call, so that a session without the cudnn algorithm never maps cuDNN.
#pragma once

#include <mutex>
#include <string>

#include "kernels/cuda/context.h"
#include "kernels/cuda/native/loader.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

class Libraries {
 public:
  Libraries(const CublasApi& cublas, cudaStream_t stream, bool allow_tf32)
      : cublas(cublas), stream(stream), allow_tf32(allow_tf32) {}
  ~Libraries();
  Libraries(const Libraries&) = delete;
  Libraries& operator=(const Libraries&) = delete;

  const CublasApi& cublas;
  cublasHandle_t blas = nullptr;
  const cudaStream_t stream;
  const bool allow_tf32;

#if WINFER_HAVE_CUDNN
  // cuDNN's functions and a handle on `stream`, loaded and created by the first call (the same
  // error on every call when cuDNN cannot be loaded). Thread-safe.
  Status cudnn(const CudnnApi** api, cudnnHandle_t* handle);

 private:
  std::mutex dnn_mutex_;
  const CudnnApi* dnn_api_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  Status dnn_status_;
  bool dnn_tried_ = false;
#endif
};

// Ok for CUBLAS_STATUS_SUCCESS, else kLibraryError "what: CUBLAS_STATUS_... (description)".
Status cublas_status(const CublasApi& api, cublasStatus_t status, const std::string& what);
#if WINFER_HAVE_CUDNN
Status cudnn_status(const CudnnApi& api, cudnnStatus_t status, const std::string& what);
#endif

}  // namespace cuda
}  // namespace winfer
