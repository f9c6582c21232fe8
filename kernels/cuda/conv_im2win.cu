// "im2win": the window transform on the device, then a tiled GEMM over the window tensor
// (Lu et al., "Im2win: An Efficient Convolution Paradigm on GPU", 2023), channels-last.
//
// Window tensor [N][Ho][Ww][Kh][C], Ww = (Wo-1)*sw + (Kw-1)*dw + 1:
//
//   win[n][oh][x][kh][c] = in[n][oh*sh - pad_top + kh*dh][x - pad_left][c]   (0 in the padding)
//
// Output row oh gets a strip of the Kh input rows its windows cover, kh inside each column x, so
// the Kh*C values of a column are contiguous. The window of output pixel (n, oh, ow) starts at
// column x = ow*sw; its tap (kh, kw), channel c of group g is at
//
//   row_offset(n, oh, ow) + k_offset(kw, kh, c)   with
//   row_offset = ((n*Ho + oh)*Ww + ow*sw)*Kh*C + g*Cg,  k_offset = (kw*dw*Kh + kh)*C + c.
//
// So the convolution is, per group, the GEMM
//
//   out[m][g*Cog + j] = act(bias + sum_k A[m][k] * B[k][j]),  A[m][k] = win[row_offset(m) + k_offset(k)]
//
// with M = N*Ho*Wo output pixels, N = Cog, K = Kw*Kh*Cg ordered (kw, kh, c), B the weights packed
// GWHIO [g][Kw][Kh][Cg][Cog]. Without groups and dilation k_offset(k) == k: each row of A is one
// contiguous run of the window tensor (rows overlap: the row stride sw*Kh*C is below K), which is
// what makes the layout fast. The paper's NCHW variant is the same GEMM transposed (M = Co).
//
// Workspace: N*Ho*Ww*Kh*C floats, about Kh/sh times the input, against im2col's
// N*Ho*Wo*Kh*Kw*Cg. When the window tensor would equal the input (Kh == 1, sh == 1, no vertical
// or left padding, Ww == W: 1x1 convolutions among others) the GEMM reads the input directly and
// the workspace is 0.
//
// This GEMM is the correct, general version: 64x64 output tiles, K in steps of 8 through shared
// memory, 4x4 outputs per thread, every load and store bounds-checked so any M, N, K works. The
// fast kernel (128x128x8 tiles, double buffering, vector loads) is a later issue; it replaces
// window_gemm() below and keeps the window tensor, weight layout and workspace unchanged.
#include "kernels/cuda/conv_internal.h"
#include "kernels/cuda/conv_shape.cuh"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

// ---- window transform --------------------------------------------------------------------------

// One thread per element of the window tensor, c fastest (coalesced reads and writes).
__global__ void window_kernel(ConvShape s, const float* in, float* win) {
  const int64_t count = s.batch * s.out_h * s.window_w * s.kernel_h * s.in_c;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t c = i % s.in_c;
    int64_t rest = i / s.in_c;
    const int64_t kh = rest % s.kernel_h;
    rest /= s.kernel_h;
    const int64_t x = rest % s.window_w;
    rest /= s.window_w;
    const int64_t oh = rest % s.out_h, n = rest / s.out_h;
    const int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h, iw = x - s.pad_left;
    const bool inside = ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w;
    win[i] = inside ? in[((n * s.in_h + ih) * s.in_w + iw) * s.in_c + c] : 0.f;
  }
}

bool window_is_input(const ConvParams& p) {
  const ConvShape s = make_conv_shape(p);
  return p.kernel_h == 1 && p.stride_h == 1 && p.pad_top == 0 && p.pad_bottom == 0 && p.pad_left == 0 &&
         s.window_w == p.in_w;
}

// ---- GEMM over the window tensor ----------------------------------------------------------------

__device__ __forceinline__ int64_t window_row_offset(const ConvShape& s, int64_t m) {
  const Pixel px = split_pixel(s, m);
  return ((px.n * s.out_h + px.oh) * s.window_w + px.ow * s.stride_w) * s.kernel_h * s.in_c;
}

__device__ __forceinline__ int64_t window_k_offset(const ConvShape& s, int64_t k) {
  const int64_t c = k % s.cg, tap = k / s.cg;  // tap = kw*Kh + kh
  const int64_t kh = tap % s.kernel_h, kw = tap / s.kernel_h;
  return (kw * s.dilation_w * s.kernel_h + kh) * s.in_c + c;
}

// Tile shape: BM output pixels x BN output channels per block, K in steps of BK, TM x TN outputs
// per thread. Thread (tx, ty) owns rows ty + i*(BM/TM) and columns tx + j*(BN/TN): the threads of
// a warp read consecutive shared-memory words (no bank conflicts) and store consecutive channels.
constexpr int kBM = 64, kBN = 64, kBK = 8, kTM = 4, kTN = 4;
constexpr int kGemmThreadsX = kBN / kTN, kGemmThreadsY = kBM / kTM;
constexpr int kGemmThreads = kGemmThreadsX * kGemmThreadsY;  // 256

// Block (bx, by, g) computes pixels [bx*BM, +BM) x channels [by*BN, +BN) of group g.
__global__ void __launch_bounds__(kGemmThreads)
    window_gemm_kernel(ConvShape s, const float* win, const float* w, const float* bias, float* out, Clamp clip) {
  __shared__ float a_tile[kBK][kBM];  // A^T: a_tile[k][m]
  __shared__ float b_tile[kBK][kBN];
  __shared__ int64_t row_offset[kBM];  // window offset of each pixel of the tile, -1 past M

  const int64_t m_size = s.batch * s.out_h * s.out_w, k_size = s.kernel_w * s.kernel_h * s.cg;
  const int64_t g = blockIdx.z, m0 = static_cast<int64_t>(blockIdx.x) * kBM, n0 = static_cast<int64_t>(blockIdx.y) * kBN;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % kGemmThreadsX, ty = tid / kGemmThreadsX;
  const float* w_group = w + g * k_size * s.cog;

  for (int r = tid; r < kBM; r += kGemmThreads)
    row_offset[r] = m0 + r < m_size ? window_row_offset(s, m0 + r) + g * s.cg : -1;
  __syncthreads();

  float acc[kTM][kTN] = {};
  for (int64_t k0 = 0; k0 < k_size; k0 += kBK) {
    // Stage A (BM x BK: consecutive threads read consecutive k of a row) and B (BK x BN:
    // consecutive threads read consecutive channels), zeros outside the matrices.
    for (int e = tid; e < kBM * kBK; e += kGemmThreads) {
      const int r = e / kBK, kk = e % kBK;
      const int64_t k = k0 + kk;
      a_tile[kk][r] = (row_offset[r] >= 0 && k < k_size) ? win[row_offset[r] + window_k_offset(s, k)] : 0.f;
    }
    for (int e = tid; e < kBK * kBN; e += kGemmThreads) {
      const int kk = e / kBN, j = e % kBN;
      const int64_t k = k0 + kk, n = n0 + j;
      b_tile[kk][j] = (k < k_size && n < s.cog) ? w_group[k * s.cog + n] : 0.f;
    }
    __syncthreads();
    for (int kk = 0; kk < kBK; ++kk) {
      float a[kTM], b[kTN];
      for (int i = 0; i < kTM; ++i) a[i] = a_tile[kk][ty + i * kGemmThreadsY];
      for (int j = 0; j < kTN; ++j) b[j] = b_tile[kk][tx + j * kGemmThreadsX];
      for (int i = 0; i < kTM; ++i)
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // the tiles are overwritten by the next step
  }

  for (int i = 0; i < kTM; ++i) {
    const int64_t m = m0 + ty + i * kGemmThreadsY;
    if (m >= m_size) continue;
    for (int j = 0; j < kTN; ++j) {
      const int64_t n = n0 + tx + j * kGemmThreadsX;
      if (n >= s.cog) continue;
      const int64_t o = g * s.cog + n;
      out[m * s.out_c + o] = apply_clamp(acc[i][j] + (bias ? bias[o] : 0.f), clip);
    }
  }
}

Status window_gemm(const ConvParams& p, const float* window, const float* packed, const float* bias, float* output,
                   Activation act, cudaStream_t stream) {
  const int64_t m_size = p.batch * p.out_h() * p.out_w();
  LaunchConfig config;
  config.grid = dim3(static_cast<unsigned>(ceil_div(m_size, kBM)),
                     static_cast<unsigned>(ceil_div(p.out_channels_per_group(), kBN)), static_cast<unsigned>(p.groups));
  config.block = dim3(kGemmThreads);
  return launch("im2win gemm", config, stream, window_gemm_kernel, make_conv_shape(p), window, packed, bias, output,
                activation_clamp(act));
}

// ---- the algorithm -------------------------------------------------------------------------------

class Im2winConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "im2win"; }
  // Grid y counts tiles of output channels per group (<= 65535 tiles of 64).
  bool supports(const ConvParams& p) const override {
    return fits_launch_limits(p) && ceil_div(p.out_channels_per_group(), kBN) <= 65535;
  }
  size_t workspace_bytes(const ConvParams& p) const override {
    return window_is_input(p) ? 0 : static_cast<size_t>(im2win_window_floats(p)) * sizeof(float);
  }
  size_t packed_weight_bytes(const ConvParams& p) const override {
    return static_cast<size_t>(packed_weight_floats(p)) * sizeof(float);
  }
  void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed) const override {
    cuda::pack_weights(p, weight_oihw, packed, WeightLayout::kGWHIO);
  }
  Status run(const Context& ctx, const ConvParams& p, const float* input, const float* packed, const float* bias,
             float* output, void* workspace, Activation act) const override {
    if (!supports(p)) return invalid_argument("im2win: unsupported convolution " + p.to_string());
    const float* window = input;
    if (!window_is_input(p)) {
      if (!workspace) return invalid_argument("im2win: null workspace");
      WINFER_CUDA_RETURN_IF_ERROR(im2win_window(p, input, static_cast<float*>(workspace), ctx.stream));
      window = static_cast<const float*>(workspace);
    }
    return window_gemm(p, window, packed, bias, output, act, ctx.stream);
  }
};

}  // namespace

int64_t im2win_window_floats(const ConvParams& p) {
  const ConvShape s = make_conv_shape(p);
  return s.batch * s.out_h * s.window_w * s.kernel_h * s.in_c;
}

Status im2win_window(const ConvParams& p, const float* input_nhwc, float* window, cudaStream_t stream) {
  if (!fits_launch_limits(p)) return invalid_argument("im2win window: unsupported convolution " + p.to_string());
  return launch("im2win window", grid_stride_config(im2win_window_floats(p)), stream, window_kernel,
                make_conv_shape(p), input_nhwc, window);
}

const ConvAlgorithm& im2win_conv_algorithm() {
  static const Im2winConv algorithm;
  return algorithm;
}

}  // namespace cuda
}  // namespace winfer
