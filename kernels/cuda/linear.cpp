#include "kernels/cuda/linear.h"

#include "kernels/cuda/blas.h"
#include "kernels/cuda/elementwise.h"

namespace winfer {
namespace cuda {

// Few rows: one warp per output (bandwidth-bound; no library). Otherwise out = in * weight^T
// (cuBLAS), then the bias and activation in one pass over out.
Status linear(const float* in, const float* weight, const float* bias, float* out, int64_t rows, int64_t in_features,
              int64_t out_features, Activation act, const Context& ctx) {
  if (rows < 0 || in_features < 0 || out_features < 0) return invalid_argument("linear: negative size");
  if (rows * out_features == 0) return Status();
  if (rows <= kLinearRowsWithoutBlas || ctx.libraries == nullptr) {
    return linear_rows(in, weight, bias, out, rows, in_features, out_features, act, ctx.stream);
  }
  WINFER_CUDA_RETURN_IF_ERROR(sgemm(ctx, false, true, rows, out_features, in_features, 1.f, in, in_features, weight,
                                    in_features, 0.f, out, out_features));
  return bias_activation_rows(out, rows, out_features, bias, act, ctx.stream);
}

}  // namespace cuda
}  // namespace winfer
