// The fast im2win GEMM kernel (device code; included by conv_im2win.cu only, where the GEMM it
// computes is described). One template, instantiated per tile shape and load width:
//
//   block tile   BM output pixels x BN output channels, K in steps of kBK = 8
//   threads      (BM/TM) x (BN/TN) = 256, each owning a TM x TN register micro-tile
//   micro-tile   TM/4 x TN/4 fragments of 4x4: thread (tx, ty) owns rows ty*4 + [0,4) +
//                h*(BM*4/TM) and columns tx*4 + [0,4) + h*(BN*4/TN), so every shared-memory read
//                is one 16-byte LDS.128 that a warp serves without bank conflicts (A rows are
//                broadcast, B columns consecutive), and the stores of a warp are contiguous
//   shared       a_tile[2][kBK][BM + 4] (A transposed: a_tile[k][m]; the pad of 4 keeps the
//                transposing stores conflict-free and the rows 16-byte aligned), b_tile[2][kBK][BN];
//                double buffered, so one __syncthreads() per K step
//   A (window)   kVecA: one 16-byte load per thread and step (needs Cg % 4 == 0: then 4
//                consecutive k share a tap and are contiguous and aligned), else 4 (or 2) scalar
//                loads whose k is fixed per thread, so the window offset of k is computed once
//                per step: k itself when kContiguous (no groups, no dilation: the row is one
//                run), else a div/mod (a template flag: the runtime branch alone cost the
//                128x128 tile 16 registers and spills). Row offsets: one in a register for the
//                vector load, four in a shared table for the scalar ones. Staged through registers:
//                the next step's loads are issued before the current step's FMAs, and stored to
//                the other buffer after them
//   B (weights)  kVecB: cp.async 16-byte copies straight into the other shared buffer (needs
//                Co/g % 4 == 0), zero-filled outside K and N; else scalar loads staged like A
//   epilogue     bias + clamp, 16-byte stores when kVecB, every store bounds-checked
//
// Every load is bounds-checked (zeros outside M, N and K), so any shape works; the tile shape
// only changes speed.
#pragma once

#include <cstdint>

#include "kernels/cuda/conv_shape.cuh"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/runtime.h"

namespace winfer {
namespace cuda {
namespace im2win_detail {

constexpr int kBK = 8;
constexpr int kTileThreads = 256;

// Window offset of pixel m's first element (group 0).
__device__ __forceinline__ int64_t row_offset_of(const ConvShape& s, int64_t m) {
  const Pixel px = split_pixel(s, m);
  return ((px.n * s.out_h + px.oh) * s.window_w + px.ow * s.stride_w) * s.kernel_h * s.in_c;
}

// Window offset of k = (kw*Kh + kh)*Cg + c relative to a row; k itself when the K run is
// contiguous (no groups, no dilation). K fits in an int (fits_launch_limits).
template <bool kContiguous>
__device__ __forceinline__ int64_t k_offset_of(const ConvShape& s, int k) {
  if constexpr (kContiguous) return k;
  const int cg = static_cast<int>(s.cg), kh_count = static_cast<int>(s.kernel_h);
  const int c = k % cg, tap = k / cg;
  const int kh = tap % kh_count, kw = tap / kh_count;
  return (static_cast<int64_t>(kw) * s.dilation_w * s.kernel_h + kh) * s.in_c + c;
}

template <int BM, int BN, int TM, int TN, bool kVecA, bool kVecB, bool kContiguous>
__global__ void __launch_bounds__(kTileThreads, 2)
    im2win_gemm_kernel(ConvShape s, const float* __restrict__ win, const float* __restrict__ w,
                       const float* __restrict__ bias, float* __restrict__ out, Clamp clip) {
  constexpr int kThreadsX = BN / TN, kThreadsY = BM / TM;
  static_assert(kThreadsX * kThreadsY == kTileThreads, "256 threads per block");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "4x4 fragments");
  constexpr int kMFrags = TM / 4, kNFrags = TN / 4;
  constexpr int kMFragStride = kThreadsY * 4, kNFragStride = kThreadsX * 4;
  constexpr int kAStride = BM + 4;
  // A loads: kVecA: BM*kBK/4 float4 (row e/2, k quad e%2); scalar: BM*kBK floats (row e/kBK, k e%kBK).
  constexpr int kAVecTotal = BM * kBK / 4, kAVecs = (kAVecTotal + kTileThreads - 1) / kTileThreads;
  constexpr int kAScalars = BM * kBK / kTileThreads;
  static_assert(BM * kBK % kTileThreads == 0, "whole scalar A loads per thread");
  // B: kVecB: kBK*BN/4 16-byte copies (k e/(BN/4), column quad e%(BN/4)); scalar: kBK*BN floats.
  constexpr int kBVecTotal = kBK * BN / 4, kBVecs = (kBVecTotal + kTileThreads - 1) / kTileThreads;
  constexpr int kBScalars = kBK * BN / kTileThreads;
  static_assert(kBK * BN % kTileThreads == 0, "whole scalar B loads per thread");

  alignas(16) __shared__ float a_tile[2][kBK][kAStride];
  alignas(16) __shared__ float b_tile[2][kBK][BN];
  WINFER_EMU_SHARED(a_tile);
  WINFER_EMU_SHARED(b_tile);

  const int64_t m_size = s.batch * s.out_h * s.out_w;
  const int k_size = static_cast<int>(s.kernel_w * s.kernel_h * s.cg);
  const int n_size = static_cast<int>(s.cog);
  const int64_t g = blockIdx.z, m0 = static_cast<int64_t>(blockIdx.x) * BM;
  const int n0 = static_cast<int>(blockIdx.y) * BN;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % kThreadsX, ty = tid / kThreadsX;
  const float* w_group = w + g * static_cast<int64_t>(k_size) * n_size;

  // The window rows this thread loads, fixed for the whole K loop (-1 past M): in registers for
  // the one row of a 16-byte load, in shared memory for the four rows of scalar loads.
  int64_t a_row[kVecA ? kAVecs : 1];
  __shared__ int64_t a_rows_shared[kVecA ? 1 : BM];
  WINFER_EMU_SHARED(a_rows_shared);
  if constexpr (kVecA) {
#pragma unroll
    for (int i = 0; i < kAVecs; ++i) {
      const int e = tid + i * kTileThreads, r = e / 2;
      a_row[i] = e < kAVecTotal && m0 + r < m_size ? row_offset_of(s, m0 + r) + g * s.cg : -1;
    }
  } else {
    for (int r = tid; r < BM; r += kTileThreads)
      a_rows_shared[r] = m0 + r < m_size ? row_offset_of(s, m0 + r) + g * s.cg : -1;
    __syncthreads();
  }
  // The k (within a step) this thread loads: fixed too.
  const int a_kk = kVecA ? (tid % 2) * 4 : tid % kBK;
  // Contiguous 16-byte A loads and the B copies walk running pointers (one 64-bit add per step,
  // instead of rebuilding the address from k).
  const float* a_src[kVecA && kContiguous ? kAVecs : 1];
  if constexpr (kVecA && kContiguous) {
#pragma unroll
    for (int i = 0; i < kAVecs; ++i) a_src[i] = win + (a_row[i] >= 0 ? a_row[i] : 0) + a_kk;
  }
  const float* b_src[kVecB ? kBVecs : 1];
  bool b_n_ok[kVecB ? kBVecs : 1];
  if constexpr (kVecB) {
#pragma unroll
    for (int i = 0; i < kBVecs; ++i) {
      const int e = tid + i * kTileThreads;
      const int kk = e / (BN / 4), j = (e % (BN / 4)) * 4;
      // n_size % 4 == 0: a quad of columns is all in or all out.
      b_n_ok[i] = e < kBVecTotal && n0 + j < n_size;
      b_src[i] = w_group + (b_n_ok[i] ? static_cast<int64_t>(kk) * n_size + n0 + j : 0);
    }
  }

  float4 a_vec[kVecA ? kAVecs : 1];
  float a_scalar[kVecA ? 1 : kAScalars];
  float b_scalar[kVecB ? 1 : kBScalars];

  auto load_a = [&](int k0) {
    const int k = k0 + a_kk;
    const bool k_ok = k < k_size;
    const int64_t koff = (kVecA && kContiguous) || !k_ok ? 0 : k_offset_of<kContiguous>(s, k);
    if constexpr (kVecA && kContiguous) {
#pragma unroll
      for (int i = 0; i < kAVecs; ++i) {
        a_vec[i] =
            (k_ok && a_row[i] >= 0) ? *reinterpret_cast<const float4*>(a_src[i]) : make_float4(0.f, 0.f, 0.f, 0.f);
        a_src[i] += kBK;
      }
    } else if constexpr (kVecA) {
#pragma unroll
      for (int i = 0; i < kAVecs; ++i)
        a_vec[i] = (k_ok && a_row[i] >= 0) ? *reinterpret_cast<const float4*>(win + a_row[i] + koff)
                                           : make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
#pragma unroll
      for (int i = 0; i < kAScalars; ++i) {
        const int64_t row = a_rows_shared[(tid + i * kTileThreads) / kBK];
        a_scalar[i] = (k_ok && row >= 0) ? win[row + koff] : 0.f;
      }
    }
  };
  auto store_a = [&](int buf) {
    if constexpr (kVecA) {
#pragma unroll
      for (int i = 0; i < kAVecs; ++i) {
        const int e = tid + i * kTileThreads;
        if constexpr (kAVecTotal % kTileThreads != 0) {
          if (e >= kAVecTotal) break;
        }
        const int r = e / 2;
        a_tile[buf][a_kk + 0][r] = a_vec[i].x;
        a_tile[buf][a_kk + 1][r] = a_vec[i].y;
        a_tile[buf][a_kk + 2][r] = a_vec[i].z;
        a_tile[buf][a_kk + 3][r] = a_vec[i].w;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kAScalars; ++i) a_tile[buf][a_kk][(tid + i * kTileThreads) / kBK] = a_scalar[i];
    }
  };
  // kVecB: issues the asynchronous copies of step k0 into `buf`; scalar: loads into registers.
  // Called with k0 = 0, kBK, 2*kBK, ... in turn (the running pointers assume it).
  auto load_b = [&](int k0, int buf) {
    if constexpr (kVecB) {
#pragma unroll
      for (int i = 0; i < kBVecs; ++i) {
        const int e = tid + i * kTileThreads;
        if constexpr (kBVecTotal % kTileThreads != 0) {
          if (e >= kBVecTotal) break;
        }
        const int kk = e / (BN / 4), j = (e % (BN / 4)) * 4;
        const bool ok = b_n_ok[i] && k0 + kk < k_size;
        copy_async_16(&b_tile[buf][kk][j], ok ? b_src[i] : w_group, ok);
        b_src[i] += kBK * n_size;
      }
      copy_async_commit();
    } else {
#pragma unroll
      for (int i = 0; i < kBScalars; ++i) {
        const int e = tid + i * kTileThreads;
        const int k = k0 + e / BN, n = n0 + e % BN;
        b_scalar[i] = (k < k_size && n < n_size) ? w_group[static_cast<int64_t>(k) * n_size + n] : 0.f;
      }
    }
  };
  auto store_b = [&](int buf) {
    if constexpr (kVecB) {
      copy_async_wait_all();
    } else {
#pragma unroll
      for (int i = 0; i < kBScalars; ++i) {
        const int e = tid + i * kTileThreads;
        b_tile[buf][e / BN][e % BN] = b_scalar[i];
      }
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  load_a(0);
  load_b(0, 0);
  store_a(0);
  store_b(0);
  __syncthreads();

  int buf = 0;
  for (int k0 = 0;;) {
    const int next = k0 + kBK;
    const bool has_next = next < k_size;
    if (has_next) {  // in flight during the FMAs below
      load_a(next);
      load_b(next, buf ^ 1);
    }
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      float a[TM], b[TN];
#pragma unroll
      for (int h = 0; h < kMFrags; ++h) {
        const float4 v = *reinterpret_cast<const float4*>(&a_tile[buf][kk][h * kMFragStride + ty * 4]);
        a[h * 4 + 0] = v.x;
        a[h * 4 + 1] = v.y;
        a[h * 4 + 2] = v.z;
        a[h * 4 + 3] = v.w;
      }
#pragma unroll
      for (int h = 0; h < kNFrags; ++h) {
        const float4 v = *reinterpret_cast<const float4*>(&b_tile[buf][kk][h * kNFragStride + tx * 4]);
        b[h * 4 + 0] = v.x;
        b[h * 4 + 1] = v.y;
        b[h * 4 + 2] = v.z;
        b[h * 4 + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (has_next) {
      store_a(buf ^ 1);
      store_b(buf ^ 1);
    }
    // One barrier per step: the other buffer is complete before anyone reads it, and everyone
    // has finished reading `buf` before the next step's loads overwrite it.
    __syncthreads();
    if (!has_next) break;
    buf ^= 1;
    k0 = next;
  }

  // Bias of this thread's TN columns, loaded once (not once per row).
  float bias_col[TN];
#pragma unroll
  for (int j = 0; j < TN; ++j) {
    const int n = n0 + (j / 4) * kNFragStride + tx * 4 + j % 4;
    bias_col[j] = (bias && n < n_size) ? bias[g * n_size + n] : 0.f;
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t m = m0 + (i / 4) * kMFragStride + ty * 4 + i % 4;
    if (m >= m_size) continue;
    float* out_row = out + m * s.out_c + g * n_size;
#pragma unroll
    for (int h = 0; h < kNFrags; ++h) {
      const int n = n0 + h * kNFragStride + tx * 4;
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = apply_clamp(acc[i][h * 4 + j] + bias_col[h * 4 + j], clip);
      if constexpr (kVecB) {  // n_size % 4 == 0 and a 16-byte aligned output
        if (n < n_size) *reinterpret_cast<float4*>(out_row + n) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (n + j < n_size) out_row[n + j] = v[j];
      }
    }
  }
}

}  // namespace im2win_detail
}  // namespace cuda
}  // namespace winfer
