// cuBLAS (and cuDNN) handles, and the row-major sgemm over cublasSgemm.
#include "kernels/cuda/native/libraries.h"

#include <climits>

#include "kernels/cuda/blas.h"

namespace winfer {
namespace cuda {

Libraries::~Libraries() {
  // Destroy errors cannot be acted upon here (and only follow an earlier, reported error).
  if (blas) (void)cublas.cublasDestroy_v2(blas);
#if WINFER_HAVE_CUDNN
  if (dnn_) (void)dnn_api_->cudnnDestroy(dnn_);
#endif
}

void LibrariesDeleter::operator()(Libraries* libraries) const { delete libraries; }

Status cublas_status(const CublasApi& api, cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status();
  return Status(StatusCode::kLibraryError,
                what + ": " + api.cublasGetStatusName(status) + " (" + api.cublasGetStatusString(status) + ")");
}

#if WINFER_HAVE_CUDNN
Status cudnn_status(const CudnnApi& api, cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status();
  return Status(StatusCode::kLibraryError, what + ": " + api.cudnnGetErrorString(status));
}

Status Libraries::cudnn(const CudnnApi** api, cudnnHandle_t* handle) {
  std::lock_guard<std::mutex> lock(dnn_mutex_);
  if (!dnn_tried_) {
    dnn_tried_ = true;
    const CudnnApi* loaded = nullptr;
    dnn_status_ = load_cudnn(&loaded);
    if (dnn_status_.ok()) {
      dnn_api_ = loaded;
      dnn_status_ = cudnn_status(*loaded, loaded->cudnnCreate(&dnn_), "cudnnCreate");
    }
    if (dnn_status_.ok()) dnn_status_ = cudnn_status(*loaded, loaded->cudnnSetStream(dnn_, stream), "cudnnSetStream");
  }
  *api = dnn_api_;
  *handle = dnn_;
  return dnn_status_;
}
#endif

Status create_libraries(cudaStream_t stream, bool allow_tf32, LibrariesPtr* out) {
  out->reset();
  const CublasApi* cublas = nullptr;
  WINFER_CUDA_RETURN_IF_ERROR(load_cublas(&cublas));
  LibrariesPtr libs(new Libraries(*cublas, stream, allow_tf32));
  WINFER_CUDA_RETURN_IF_ERROR(cublas_status(*cublas, cublas->cublasCreate_v2(&libs->blas), "cublasCreate"));
  WINFER_CUDA_RETURN_IF_ERROR(
      cublas_status(*cublas, cublas->cublasSetStream_v2(libs->blas, stream), "cublasSetStream"));
  // CUBLAS_DEFAULT_MATH keeps FP32 GEMMs in FP32 (no TF32 tensor cores) since CUDA 11.
  const cublasMath_t math = allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
  WINFER_CUDA_RETURN_IF_ERROR(cublas_status(*cublas, cublas->cublasSetMathMode(libs->blas, math), "cublasSetMathMode"));
  *out = std::move(libs);
  return Status();
}

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the same call with the operands
// swapped, since a row-major matrix read column-major is its transpose.
Status sgemm(const Context& ctx, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (!ctx.libraries) return unsupported("sgemm: needs cuBLAS (Context::libraries is null)");
  if (m < 0 || n < 0 || k < 0) return invalid_argument("sgemm: negative size");
  for (int64_t v : {m, n, k, lda, ldb, ldc})
    if (v > INT_MAX) return unsupported("sgemm: size beyond cuBLAS' int range");
  if (m == 0 || n == 0) return Status();
  const CublasApi& api = ctx.libraries->cublas;
  cublasHandle_t handle = ctx.libraries->blas;
  WINFER_CUDA_RETURN_IF_ERROR(cublas_status(api, api.cublasSetStream_v2(handle, ctx.stream), "cublasSetStream"));
  return cublas_status(
      api,
      api.cublasSgemm_v2(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                         static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                         static_cast<int>(ldb), a, static_cast<int>(lda), &beta, c, static_cast<int>(ldc)),
      "cublasSgemm");
}

}  // namespace cuda
}  // namespace winfer
