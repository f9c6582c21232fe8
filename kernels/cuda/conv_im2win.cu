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
// The GEMM is im2win_gemm.cuh's tiled kernel (128x128, 128x64 or 64x64 block tiles, 8x8 / 8x4 /
// 4x4 register micro-tiles, double-buffered shared memory, 16-byte window loads and cp.async
// weight copies where the channel counts allow, every load and store bounds-checked); the tile
// shape, load widths and batch chunks are chosen by im2win_plan() (im2win_tiles.cuh). The batch
// is processed in chunks of images when the whole window tensor would exceed a budget: window
// transform then GEMM per chunk, so the workspace is one chunk's window.
#include <atomic>
#include <cstdint>

#include "kernels/cuda/conv_internal.h"
#include "kernels/cuda/conv_shape.cuh"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/im2win_gemm.cuh"
#include "kernels/cuda/im2win_tiles.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace cuda {
namespace {

// ---- window transform --------------------------------------------------------------------------

// One thread per V consecutive channels of the window tensor, c fastest (coalesced reads and
// writes); V = 4 (16-byte loads and stores) when C % 4 == 0 and both pointers are aligned.
template <int V>
__global__ void window_kernel(ConvShape s, const float* __restrict__ in, float* __restrict__ win) {
  const int64_t c_vecs = s.in_c / V;
  const int64_t count = s.batch * s.out_h * s.window_w * s.kernel_h * c_vecs;
  for (int64_t i = grid_thread_index(); i < count; i += grid_thread_count()) {
    const int64_t c = (i % c_vecs) * V;
    int64_t rest = i / c_vecs;
    const int64_t kh = rest % s.kernel_h;
    rest /= s.kernel_h;
    const int64_t x = rest % s.window_w;
    rest /= s.window_w;
    const int64_t oh = rest % s.out_h, n = rest / s.out_h;
    const int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h, iw = x - s.pad_left;
    const bool inside = ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w;
    const int64_t src = ((n * s.in_h + ih) * s.in_w + iw) * s.in_c + c;
    if constexpr (V == 4) {
      reinterpret_cast<float4*>(win)[i] =
          inside ? *reinterpret_cast<const float4*>(in + src) : make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
      win[i] = inside ? in[src] : 0.f;
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

Status window_transform(const ConvParams& p, const float* input_nhwc, float* window, cudaStream_t stream) {
  const ConvShape s = make_conv_shape(p);
  if (s.in_c % 4 == 0 && aligned16(input_nhwc) && aligned16(window))
    return launch("im2win window", grid_stride_config(im2win_window_floats(p) / 4), stream, window_kernel<4>, s,
                  input_nhwc, window);
  return launch("im2win window", grid_stride_config(im2win_window_floats(p)), stream, window_kernel<1>, s, input_nhwc,
                window);
}

// Each window row is one contiguous run of K floats: no groups, no horizontal dilation.
bool k_is_contiguous(const ConvParams& p) { return p.groups == 1 && p.dilation_w == 1; }

bool window_is_input(const ConvParams& p) {
  const ConvShape s = make_conv_shape(p);
  return p.kernel_h == 1 && p.stride_h == 1 && p.pad_top == 0 && p.pad_bottom == 0 && p.pad_left == 0 &&
         s.window_w == p.in_w;
}

// ---- plan: tile shape, load widths, batch chunks ---------------------------------------------------

std::atomic<int> forced_tile{-1};
std::atomic<bool> forced_scalar{false};
std::atomic<int64_t> window_budget{-1};
constexpr int64_t kDefaultWindowBudget = int64_t{256} << 20;

struct TileShape {
  int bm, bn;
};
TileShape tile_shape(Im2winTile t) {
  switch (t) {
    case Im2winTile::k128x128: return {128, 128};
    case Im2winTile::k128x64: return {128, 64};
    case Im2winTile::k64x64: break;
  }
  return {64, 64};
}

int64_t grid_blocks(Im2winTile t, int64_t m, const ConvParams& p) {
  const TileShape ts = tile_shape(t);
  return ceil_div(m, ts.bm) * ceil_div(p.out_channels_per_group(), ts.bn) * p.groups;
}

// Cost model of a tile shape (smaller is faster): waves of the grid, each as long as its blocks'
// padded tile area over the tile's relative efficiency, times the blocks resident per SM. Resident
// blocks per SM from the register counts (128x128: 126-128 registers -> 2 blocks, 128x64: 84-113
// -> 2, 64x64: 71-85 -> 3, of 64K registers); efficiency from the FFMA share of each inner loop
// in the SASS (86%, 75%, 63%: 1, 0.88, 0.73). Both are estimates to be tuned on a GPU
// (docs/PERFORMANCE_CUDA.md). Padded columns (Co/g = 64 or 96 on a 128-wide tile) and partial
// last waves count as work.
struct TileModel {
  Im2winTile tile;
  int resident_per_sm;
  double efficiency;
};
constexpr TileModel kTileModels[] = {
    {Im2winTile::k128x128, 2, 1.0}, {Im2winTile::k128x64, 2, 0.88}, {Im2winTile::k64x64, 3, 0.73}};

double tile_cost(const TileModel& t, int64_t m, const ConvParams& p, int sms) {
  const TileShape ts = tile_shape(t.tile);
  const int64_t slots = int64_t{t.resident_per_sm} * sms;
  return static_cast<double>(ceil_div(grid_blocks(t.tile, m, p), slots)) * t.resident_per_sm * ts.bm * ts.bn /
         t.efficiency;
}

// The cheapest tile by tile_cost(); a larger tile is kept unless a smaller one is over 5% cheaper
// (it also reuses each loaded value more). 128x128 only where it will run (full_vector).
Im2winTile pick_tile(const ConvParams& p, int64_t m, int sms, bool full_vector) {
  if (forced_tile.load() >= 0) return static_cast<Im2winTile>(forced_tile.load());
  Im2winTile best = Im2winTile::k128x64;
  double best_cost = 0;
  bool have = false;
  for (const TileModel& t : kTileModels) {
    if (t.tile == Im2winTile::k128x128 && !full_vector) continue;
    const double cost = tile_cost(t, m, p, sms);
    if (!have || cost < 0.95 * best_cost) {
      best = t.tile;
      best_cost = cost;
      have = true;
    }
  }
  return best;
}

int64_t window_floats_per_image(const ConvParams& p) {
  const ConvShape s = make_conv_shape(p);
  return s.out_h * s.window_w * s.kernel_h * s.in_c;
}

// ---- GEMM over the window tensor ----------------------------------------------------------------

template <int BM, int BN, int TM, int TN, bool kVecA, bool kVecB>
Status launch_contiguity(const LaunchConfig& config, const ConvShape& s, const float* window, const float* packed,
                         const float* bias, float* output, Clamp clip, cudaStream_t stream) {
  using im2win_detail::im2win_gemm_kernel;
  if (s.groups == 1 && s.dilation_w == 1)  // k_is_contiguous()
    return launch("im2win gemm", config, stream, im2win_gemm_kernel<BM, BN, TM, TN, kVecA, kVecB, true>, s, window,
                  packed, bias, output, clip);
  return launch("im2win gemm", config, stream, im2win_gemm_kernel<BM, BN, TM, TN, kVecA, kVecB, false>, s, window,
                packed, bias, output, clip);
}

template <int BM, int BN, int TM, int TN>
Status launch_tile(const ConvParams& p, bool vec_a, bool vec_b, const float* window, const float* packed,
                   const float* bias, float* output, Activation act, cudaStream_t stream) {
  const int64_t m_size = p.batch * p.out_h() * p.out_w();
  LaunchConfig config;
  config.grid = dim3(static_cast<unsigned>(ceil_div(m_size, BM)),
                     static_cast<unsigned>(ceil_div(p.out_channels_per_group(), BN)), static_cast<unsigned>(p.groups));
  config.block = dim3(im2win_detail::kTileThreads);
  const ConvShape s = make_conv_shape(p);
  const Clamp clip = activation_clamp(act);
  if (vec_a && vec_b)
    return launch_contiguity<BM, BN, TM, TN, true, true>(config, s, window, packed, bias, output, clip, stream);
  if (vec_a)
    return launch_contiguity<BM, BN, TM, TN, true, false>(config, s, window, packed, bias, output, clip, stream);
  if (vec_b)
    return launch_contiguity<BM, BN, TM, TN, false, true>(config, s, window, packed, bias, output, clip, stream);
  return launch_contiguity<BM, BN, TM, TN, false, false>(config, s, window, packed, bias, output, clip, stream);
}

Status window_gemm(const ConvParams& p, const Im2winPlan& plan, const float* window, const float* packed,
                   const float* bias, float* output, Activation act, cudaStream_t stream) {
  // The vector paths also need 16-byte aligned pointers (cudaMalloc's are; an arena's may not be).
  const bool vec_a = plan.vector_a && aligned16(window);
  const bool vec_b = plan.vector_b && aligned16(packed) && aligned16(output);
  Im2winTile tile = plan.tile;
  if (tile == Im2winTile::k128x128 && !(vec_a && vec_b && k_is_contiguous(p))) tile = Im2winTile::k128x64;
  switch (tile) {
    case Im2winTile::k128x128: {  // only in its fastest form: other forms spill at 128 registers
      const int64_t m_size = p.batch * p.out_h() * p.out_w();
      LaunchConfig config;
      config.grid = dim3(static_cast<unsigned>(ceil_div(m_size, 128)),
                         static_cast<unsigned>(ceil_div(p.out_channels_per_group(), 128)), 1);
      config.block = dim3(im2win_detail::kTileThreads);
      return launch("im2win gemm", config, stream, im2win_detail::im2win_gemm_kernel<128, 128, 8, 8, true, true, true>,
                    make_conv_shape(p), window, packed, bias, output, activation_clamp(act));
    }
    case Im2winTile::k128x64:
      return launch_tile<128, 64, 8, 4>(p, vec_a, vec_b, window, packed, bias, output, act, stream);
    case Im2winTile::k64x64: break;
  }
  return launch_tile<64, 64, 4, 4>(p, vec_a, vec_b, window, packed, bias, output, act, stream);
}

// ---- the algorithm -------------------------------------------------------------------------------

class Im2winConv final : public ConvAlgorithm {
 public:
  const char* name() const override { return "im2win"; }
  // Grid y counts tiles of output channels per group (<= 65535 tiles of 64).
  bool supports(const ConvParams& p) const override {
    return fits_launch_limits(p) && ceil_div(p.out_channels_per_group(), 64) <= 65535;
  }
  // One chunk's window tensor.
  size_t workspace_bytes(const ConvParams& p) const override {
    if (!p.is_valid() || window_is_input(p)) return 0;
    return static_cast<size_t>(im2win_plan(p).chunk_images * window_floats_per_image(p)) * sizeof(float);
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
    const bool copy = !window_is_input(p);
    if (copy && !workspace) return invalid_argument("im2win: null workspace");
    const Im2winPlan plan = im2win_plan(p);
    const int64_t in_image = p.in_h * p.in_w * p.in_channels, out_image = p.out_h() * p.out_w() * p.out_channels;
    for (int64_t n0 = 0; n0 < p.batch; n0 += plan.chunk_images) {
      ConvParams chunk = p;
      chunk.batch = min64(plan.chunk_images, p.batch - n0);
      const float* chunk_in = input + n0 * in_image;
      const float* window = chunk_in;
      if (copy) {
        WINFER_CUDA_RETURN_IF_ERROR(window_transform(chunk, chunk_in, static_cast<float*>(workspace), ctx.stream));
        window = static_cast<const float*>(workspace);
      }
      WINFER_CUDA_RETURN_IF_ERROR(
          window_gemm(chunk, plan, window, packed, bias, output + n0 * out_image, act, ctx.stream));
    }
    return Status();
  }
};

}  // namespace

const char* im2win_tile_name(Im2winTile tile) {
  switch (tile) {
    case Im2winTile::k128x128: return "128x128";
    case Im2winTile::k128x64: return "128x64";
    case Im2winTile::k64x64: return "64x64";
  }
  return "?";
}

std::atomic<int> forced_sm_count{0};

int im2win_sm_count() {
  if (forced_sm_count.load() > 0) return forced_sm_count.load();
  static std::atomic<int> cached{0};
  int sms = cached.load();
  if (sms > 0) return sms;
  int device = 0;
  cudaDeviceProp prop;
  if (cudaGetDevice(&device) == cudaSuccess && cudaGetDeviceProperties(&prop, device) == cudaSuccess &&
      prop.multiProcessorCount > 0) {
    sms = prop.multiProcessorCount;
  } else {
    (void)cudaGetLastError();
    sms = 132;
  }
  cached.store(sms);
  return sms;
}

Im2winPlan im2win_plan(const ConvParams& p) {
  Im2winPlan plan;
  const int sms = im2win_sm_count();
  plan.vector_a = !forced_scalar.load() && p.in_channels_per_group() % 4 == 0;
  plan.vector_b = !forced_scalar.load() && p.out_channels_per_group() % 4 == 0;
  const bool full_vector = plan.vector_a && plan.vector_b && k_is_contiguous(p);
  const int64_t m_image = p.out_h() * p.out_w();
  // Chunks: the whole batch within the budget; else enough chunks to stay within it, but no
  // chunk with fewer than 8 waves of blocks (16 per SM).
  const int64_t budget = window_budget.load() >= 0 ? window_budget.load() : kDefaultWindowBudget;
  const int64_t image_bytes = window_is_input(p) ? 0 : window_floats_per_image(p) * int64_t{sizeof(float)};
  int64_t chunk = p.batch;
  if (image_bytes > 0 && image_bytes * p.batch > budget) {
    const int64_t by_budget = max64(1, budget / image_bytes);
    const int64_t image_blocks = max64(1, grid_blocks(pick_tile(p, m_image, sms, full_vector), m_image, p));
    const int64_t by_waves = window_budget.load() >= 0 ? 1 : ceil_div(16 * int64_t{sms}, image_blocks);
    chunk = min64(p.batch, max64(by_budget, by_waves));
    chunk = ceil_div(p.batch, ceil_div(p.batch, chunk));  // balanced chunks
  }
  plan.chunk_images = max64(1, chunk);
  plan.tile = pick_tile(p, plan.chunk_images * m_image, sms, full_vector);
  plan.blocks = grid_blocks(plan.tile, plan.chunk_images * m_image, p);
  // 128x128 exists only with vector loads over contiguous rows (other forms spill at 128
  // registers): a forced 128x128 runs 128x64 there.
  if (plan.tile == Im2winTile::k128x128 && !full_vector) {
    plan.tile = Im2winTile::k128x64;
    plan.blocks = grid_blocks(plan.tile, plan.chunk_images * m_image, p);
  }
  return plan;
}

void im2win_force_tile(int tile) { forced_tile.store(tile >= 0 && tile < kIm2winTileCount ? tile : -1); }
void im2win_force_scalar(bool scalar) { forced_scalar.store(scalar); }
void im2win_set_window_budget(int64_t bytes) { window_budget.store(bytes); }
void im2win_force_sm_count(int sms) { forced_sm_count.store(sms > 0 ? sms : 0); }

int64_t im2win_window_floats(const ConvParams& p) {
  const ConvShape s = make_conv_shape(p);
  return s.batch * s.out_h * s.window_w * s.kernel_h * s.in_c;
}

Status im2win_window(const ConvParams& p, const float* input_nhwc, float* window, cudaStream_t stream) {
  if (!fits_launch_limits(p)) return invalid_argument("im2win window: unsupported convolution " + p.to_string());
  return window_transform(p, input_nhwc, window, stream);
}

const ConvAlgorithm& im2win_conv_algorithm() {
  static const Im2winConv algorithm;
  return algorithm;
}

}  // namespace cuda
}  // namespace winfer
