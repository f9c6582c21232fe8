// "cudnn": cuDNN's convolution, the comparison for our kernels (native builds with cuDNN only).
//
// Channels-last like ours: tensors CUDNN_TENSOR_NHWC, filter in cuDNN's NHWC filter format KRSC
// ([Co][Kh][Kw][C/g], packed on the host), groups through cudnnSetConvolutionGroupCount. tune()
// asks cudnnFindConvolutionForwardAlgorithm for the fastest algorithm of these params on this
// device (it times them) and caches its choice and workspace size, so the workspace is planned
// like ours; cuDNN itself is opened by the first tune() (Libraries::cudnn, loader.h). TF32
// tensor-core math is used only when the Libraries allow it (CUDNN_FMA_MATH otherwise). Bias and
// activation run as our epilogue kernel after cudnnConvolutionForward.
//
// Limits: cuDNN's convolution descriptor has one padding per axis, so asymmetric padding is not
// supported; sizes must fit int. This is cuDNN's legacy convolution API (deprecated in cuDNN 9
// in favour of the graph API, still complete for forward convolution).
#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/conv_internal.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/native/libraries.h"

namespace winfer {
namespace cuda {
namespace {

// The algorithm cuDNN picked for one (device, params, TF32) and what it needs.
struct Choice {
  cudnnConvolutionFwdAlgo_t algo;
  cudnnMathType_t math;
  size_t workspace;
};

// The four descriptors of one convolution, destroyed with the object.
class Descriptors {
 public:
  explicit Descriptors(const CudnnApi& api) : api_(api) {}
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (x) (void)api_.cudnnDestroyTensorDescriptor(x);
    if (y) (void)api_.cudnnDestroyTensorDescriptor(y);
    if (w) (void)api_.cudnnDestroyFilterDescriptor(w);
    if (conv) (void)api_.cudnnDestroyConvolutionDescriptor(conv);
  }

  Status create(const ConvParams& p, cudnnMathType_t math) {
    auto i = [](int64_t v) { return static_cast<int>(v); };
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_, api_.cudnnCreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor"));
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_, api_.cudnnCreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor"));
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_, api_.cudnnCreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor"));
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_, api_.cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor"));
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_,
                     api_.cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(p.batch),
                                                     i(p.in_channels), i(p.in_h), i(p.in_w)),
                     "cudnnSetTensor4dDescriptor (input)"));
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_,
                     api_.cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, i(p.out_channels),
                                                     i(p.in_channels_per_group()), i(p.kernel_h), i(p.kernel_w)),
                     "cudnnSetFilter4dDescriptor"));
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_,
                     api_.cudnnSetConvolution2dDescriptor(conv, i(p.pad_top), i(p.pad_left), i(p.stride_h),
                                                          i(p.stride_w), i(p.dilation_h), i(p.dilation_w),
                                                          CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                     "cudnnSetConvolution2dDescriptor"));
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_, api_.cudnnSetConvolutionGroupCount(conv, i(p.groups)), "cudnnSetConvolutionGroupCount"));
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(api_, api_.cudnnSetConvolutionMathType(conv, math), "cudnnSetConvolutionMathType"));
    int n = 0, c = 0, h = 0, wo = 0;
    WINFER_CUDA_RETURN_IF_ERROR(cudnn_status(api_,
                                             api_.cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wo),
                                             "cudnnGetConvolution2dForwardOutputDim"));
    if (n != p.batch || c != p.out_channels || h != p.out_h() || wo != p.out_w())
      return Status(StatusCode::kLibraryError, "cudnn: output shape differs from winfer's for " + p.to_string());
    return cudnn_status(api_, api_.cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, wo),
                        "cudnnSetTensor4dDescriptor (output)");
  }

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

 private:
  const CudnnApi& api_;
};

int64_t max_dimension(const ConvParams& p) {
  int64_t m = 0;
  for (int64_t v :
       {p.batch, p.in_channels, p.in_h, p.in_w, p.out_channels, p.out_h(), p.out_w(), p.kernel_h, p.kernel_w,
        p.batch * p.in_h * p.in_w * p.in_channels, p.batch * p.out_h() * p.out_w() * p.out_channels})
    m = std::max(m, v);
  return m;
}

class CudnnConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "cudnn"; }
  bool supports(const ConvParams& p) const override {
    return fits_launch_limits(p) && p.pad_top == p.pad_bottom && p.pad_left == p.pad_right &&
           max_dimension(p) <= INT_MAX;
  }

  Status tune(const Context& ctx, const ConvParams& p) const override {
    if (!supports(p)) return invalid_argument("cudnn: unsupported convolution " + p.to_string());
    if (!ctx.libraries) return unsupported("cudnn: needs cuDNN (Context::libraries is null)");
    Key key;
    WINFER_CUDA_RETURN_IF_ERROR(make_key(p, ctx.libraries->allow_tf32, &key));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (choices_.count(key)) return Status();
    }
    Choice choice;
    WINFER_CUDA_RETURN_IF_ERROR(find_fastest(ctx, p, &choice));
    std::lock_guard<std::mutex> lock(mutex_);
    choices_.emplace(key, choice);
    return Status();
  }

  // The largest workspace among the choices tuned for p on the current device (with and without
  // TF32), 0 before tune().
  size_t workspace_bytes(const ConvParams& p) const override {
    size_t bytes = 0;
    for (bool tf32 : {false, true}) {
      Key key;
      if (!make_key(p, tf32, &key).ok()) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = choices_.find(key);
      if (it != choices_.end()) bytes = std::max(bytes, it->second.workspace);
    }
    return bytes;
  }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(packed_weight_floats(p)) * sizeof(float);
  }
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    cuda::pack_weights(p, weight_oihw, packed, WeightLayout::kOHWI);
  }

  Status run(const Context& ctx, const ConvParams& p, const float* input, const float* packed, const float* bias,
             float* output, void* workspace, Activation act) const override {
    if (!supports(p)) return invalid_argument("cudnn: unsupported convolution " + p.to_string());
    if (!ctx.libraries) return unsupported("cudnn: needs cuDNN (Context::libraries is null)");
    Key key;
    WINFER_CUDA_RETURN_IF_ERROR(make_key(p, ctx.libraries->allow_tf32, &key));
    Choice choice;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = choices_.find(key);
      if (it == choices_.end()) return invalid_argument("cudnn: tune() was not called for " + p.to_string());
      choice = it->second;
    }
    if (choice.workspace > 0 && !workspace) return invalid_argument("cudnn: null workspace");
    const CudnnApi* api = nullptr;
    cudnnHandle_t handle = nullptr;
    WINFER_CUDA_RETURN_IF_ERROR(ctx.libraries->cudnn(&api, &handle));
    Descriptors d(*api);
    WINFER_CUDA_RETURN_IF_ERROR(d.create(p, choice.math));
    WINFER_CUDA_RETURN_IF_ERROR(cudnn_status(*api, api->cudnnSetStream(handle, ctx.stream), "cudnnSetStream"));
    const float one = 1.f, zero = 0.f;
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(*api,
                     api->cudnnConvolutionForward(handle, &one, d.x, input, d.w, packed, d.conv, choice.algo, workspace,
                                                  choice.workspace, &zero, d.y, output),
                     "cudnnConvolutionForward"));
    return bias_activation_rows(output, p.batch * p.out_h() * p.out_w(), p.out_channels, bias, act, ctx.stream);
  }

 private:
  using Key = std::tuple<int, std::string, bool>;  // device, params, TF32

  static Status make_key(const ConvParams& p, bool tf32, Key* key) {
    int device = 0;
    WINFER_CUDA_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
    *key = Key(device, p.to_string(), tf32);
    return Status();
  }

  // Times every algorithm cuDNN has for p (it allocates its own scratch memory) and keeps the
  // fastest that ran successfully; results come sorted by time. Find also tries
  // CUDNN_DEFAULT_MATH, which permits TF32 on Ampere and later, so without TF32 only
  // CUDNN_FMA_MATH results qualify.
  static Status find_fastest(const Context& ctx, const ConvParams& p, Choice* choice) {
    const bool tf32 = ctx.libraries->allow_tf32;
    const CudnnApi* api = nullptr;
    cudnnHandle_t handle = nullptr;
    WINFER_CUDA_RETURN_IF_ERROR(ctx.libraries->cudnn(&api, &handle));  // cuDNN is loaded here, on first use
    Descriptors d(*api);
    WINFER_CUDA_RETURN_IF_ERROR(d.create(p, tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    WINFER_CUDA_RETURN_IF_ERROR(cudnn_status(*api, api->cudnnSetStream(handle, ctx.stream), "cudnnSetStream"));
    int max_count = 0;
    WINFER_CUDA_RETURN_IF_ERROR(cudnn_status(*api, api->cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count),
                                             "cudnnGetConvolutionForwardAlgorithmMaxCount"));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<size_t>(std::max(max_count, 1)));
    int returned = 0;
    WINFER_CUDA_RETURN_IF_ERROR(
        cudnn_status(*api,
                     api->cudnnFindConvolutionForwardAlgorithm(
                         handle, d.x, d.w, d.conv, d.y, static_cast<int>(results.size()), &returned, results.data()),
                     "cudnnFindConvolutionForwardAlgorithm"));
    for (int i = 0; i < returned; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& r = results[static_cast<size_t>(i)];
      if (r.status != CUDNN_STATUS_SUCCESS) continue;
      if (!tf32 && r.mathType != CUDNN_FMA_MATH) continue;
      *choice = Choice{r.algo, r.mathType, r.memory};
      return Status();
    }
    return unsupported("cudnn: no forward algorithm for " + p.to_string());
  }

  mutable std::mutex mutex_;
  mutable std::map<Key, Choice> choices_;
};

}  // namespace

const ConvAlgorithm* cudnn_conv_algorithm() {
  static const CudnnConv algorithm;
  return &algorithm;
}

}  // namespace cuda
}  // namespace winfer
