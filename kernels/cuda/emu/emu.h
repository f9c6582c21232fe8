// Host emulation of the part of CUDA that winfer's kernels use, so that the same kernel sources
// (kernels/cuda/*.cu) compile as plain C++ and run on a machine without a GPU.
//
// Included as <cuda_runtime.h> (kernels/cuda/emu/include/cuda_runtime.h, first on the include
// path of the emulated targets), so it replaces the real runtime header, never joins it. What it
// provides:
//
//   * the CUDA keywords as macros: __global__, __device__, __host__ and __forceinline__ become
//     ordinary (inline) functions; __shared__ becomes `static thread_local` (see below);
//   * the built-in variables threadIdx, blockIdx, blockDim, gridDim and warpSize;
//   * __syncthreads() as a real barrier over the threads of a block, __syncwarp() and the
//     __shfl_*_sync() warp shuffles over groups of 32 lanes, and atomicAdd;
//   * launch(): runs every block of a grid, one after another, each thread of a block as a
//     cooperative fiber (ucontext) with its own stack, switching at barriers and shuffles;
//   * a small runtime API over host memory: cudaMalloc and cudaMemGetInfo, copies, streams,
//     events with elapsed times (the host clock), errors.
//
// Why fibers: a kernel written for the GPU relies on __syncthreads() being a barrier (all
// threads have written the shared tile before any reads it). Running the threads of a block one
// after another to completion would break every such kernel; fibers let each thread run until it
// reaches a barrier, then the next, and resume them all once every thread has arrived.
//
// Limits (see docs/CUDA.md): blocks run sequentially (no concurrency between blocks, so a kernel
// that waits for another block deadlocks); threads never run concurrently, so data races are not
// detected except when they change the result under the emulator's varied scheduling order (or,
// in shared memory, by the checks below: WINFER_EMU_CHECKS=race, uninit, poison, warps);
// "device" memory is host memory, so out-of-bounds reads are not caught (writes past the end of a
// buffer are caught by the tests' canaries); no dynamic shared memory, textures, streams
// concurrency, cooperative groups or tensor cores; cuBLAS and cuDNN are not emulated. cp.async
// (the __pipeline_* primitives) is emulated as a per-thread queue of copies done at the wait.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

// ---- keywords ---------------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// A __shared__ variable is one object per block on the GPU. Blocks run one after another here,
// on one OS thread, so one static object per kernel (per OS thread) serves every block in turn;
// like GPU shared memory it is not reset between blocks (unless Checks::poison_shared, below).
// Only static-size arrays are supported (no `extern __shared__`).
#define __shared__ static thread_local

// ---- built-in types and variables ----------------------------------------------------------------
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
struct alignas(16) float4 {
  float x, y, z, w;
};
inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

// Set by the scheduler before it resumes a fiber, so they always describe the running thread.
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
constexpr int warpSize = 32;

// ---- runtime API subset -------------------------------------------------------------------------
// Error codes keep the CUDA runtime's numbers.
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};
struct EmuStream;
typedef EmuStream* cudaStream_t;  // every stream runs its work synchronously, in call order
struct EmuEvent;
typedef EmuEvent* cudaEvent_t;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  int major, minor;
  int multiProcessorCount;
};

const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetLastError();  // returns and clears the last error
cudaError_t cudaPeekAtLastError();
cudaError_t cudaGetDeviceCount(int* count);  // the emulator is one device
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
// New allocations are filled with 0xFF bytes (float NaN), so a kernel that leaves an element
// unwritten produces a visible NaN instead of a stale value.
cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
// The emulated device's memory is the host's: `total` is the host's physical memory (as
// cudaDeviceProp::totalGlobalMem), `free` is total less the live cudaMalloc allocations (each
// rounded up to 256 bytes). cudaMalloc refuses (cudaErrorMemoryAllocation) more than is free.
cudaError_t cudaMemGetInfo(size_t* free, size_t* total);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaDeviceSynchronize();
// Events hold the host clock's time at cudaEventRecord: the work issued before it on the stream
// has finished by then (streams are synchronous), so the elapsed time between two events is the
// time of the work between them, as on the GPU. cudaEventElapsedTime of an event never recorded
// is cudaErrorInvalidResourceHandle, as natively.
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

// ---- device intrinsics ------------------------------------------------------------------------
// Barrier over every thread of the block. All threads must reach it (none may have returned):
// a barrier that some threads skip is reported as a launch failure, not silently accepted.
void __syncthreads();
// Barrier over the lanes of `mask` in the calling thread's warp.
void __syncwarp(unsigned mask = 0xffffffffu);
inline void __threadfence() {}
inline void __threadfence_block() {}
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
inline float __expf(float x) { return std::exp(x); }
inline float __fdividef(float a, float b) { return a / b; }

namespace winfer_emu {
// Warp exchange used by the shuffles: every lane of `mask` publishes `size` bytes at `value`,
// then receives into `out` the bytes published by lane `source_lane(lane)`, where a source lane
// outside [0, 32) or outside the mask means "keep your own value".
using SourceLaneFn = int (*)(int lane, int arg, int width);
void warp_exchange(unsigned mask, const void* value, size_t size, void* out, SourceLaneFn source, int arg, int width);
int shfl_idx_source(int lane, int src, int width);
int shfl_up_source(int lane, int delta, int width);
int shfl_down_source(int lane, int delta, int width);
int shfl_xor_source(int lane, int lane_mask, int width);

template <typename T>
T shuffle(unsigned mask, T var, SourceLaneFn source, int arg, int width) {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "shuffle of 1..8-byte values");
  T result;
  warp_exchange(mask, &var, sizeof(T), &result, source, arg, width);
  return result;
}
}  // namespace winfer_emu

template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize) {
  return winfer_emu::shuffle(mask, var, winfer_emu::shfl_idx_source, src_lane, width);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return winfer_emu::shuffle(mask, var, winfer_emu::shfl_up_source, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return winfer_emu::shuffle(mask, var, winfer_emu::shfl_down_source, static_cast<int>(delta), width);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize) {
  return winfer_emu::shuffle(mask, var, winfer_emu::shfl_xor_source, lane_mask, width);
}

// Asynchronous global -> shared copies (cp.async, sm_80+), through CUDA's pipeline primitives
// (<cuda_pipeline_primitives.h>). Each thread's copies are queued in issue order and happen only
// when __pipeline_wait_prior() waits for their group (copies not yet committed are never waited
// for), so a kernel that reads the destination too early reads its old contents, as it would
// race on the GPU; copies still pending when a thread returns happen then (the GPU completes
// them too). `zfill` trailing bytes of the `size_and_align` (4, 8 or 16) are zeros, not read.
void __pipeline_memcpy_async(void* dst_shared, const void* src_global, size_t size_and_align, size_t zfill = 0);
void __pipeline_commit();
void __pipeline_wait_prior(size_t prior);

// Threads never run at the same time, so a read-modify-write is atomic by construction.
template <typename T>
T atomicAdd(T* address, T value) {
  const T old = *address;
  *address = old + value;
  return old;
}

// ---- checking modes (docs/CUDA.md, "Emulator checks") ----------------------------------------------
namespace winfer_emu {

// What the emulator does beyond running the kernel, read once from the environment variable
// WINFER_EMU_CHECKS (comma-separated: "poison", "warps", "seed=N"; unknown words abort) and
// changeable by the emulator's own tests through set_checks().
struct Checks {
  // Every __shared__ variable a kernel declares with WINFER_EMU_SHARED is filled with signalling
  // NaN bytes (0x7FA5A5A5 per 4 bytes: a float sNaN, a huge int64 index) at every block start, so
  // a read of a slot the block never wrote (a missing zero-fill) is NaN, as it can be on a GPU,
  // instead of the zero or the stale value of an earlier block.
  bool poison_shared = false;
  // Warps run one at a time, each from one __syncthreads() to the next (through its shuffles and
  // __syncwarp()s), in an order drawn afresh for every block and barrier from `seed`, instead of
  // all warps in step from shuffle to shuffle: a warp can run ahead of the others, so a missing
  // barrier after a warp-level reduction reads what another warp has not written yet.
  bool warps_apart = false;
  uint64_t seed = 1;
  // Every load and store of a kernel seen (the emulated kernels are compiled with
  // -fsanitize=thread's instrumentation and the emulator's own __tsan_* hooks, emu.cpp; Release
  // build only, shared_access_checked()), per 4-byte granule of the WINFER_EMU_SHARED variables:
  //   uninit: a read of shared memory no thread of the block has written (nor a cp.async filled)
  //           is reported with the kernel, variable offset, block and thread, and fails the launch;
  //   race:   two threads touch the same granule between two __syncthreads(), at least one
  //           writing, without a warp barrier or shuffle between them when in the same warp.
  bool uninit_shared = false;
  bool race_shared = false;
};
Checks checks();
Checks set_checks(const Checks& checks);  // returns the previous ones

// Called by every thread at a __shared__ declaration (WINFER_EMU_SHARED): the first thread of a
// block to get there poisons the variable when Checks::poison_shared is on.
void shared_declared(void* address, size_t bytes);

// Whether every load and store of the emulated code is checked for alignment (-fsanitize=alignment
// with the emulator's handlers, emu.cpp): the emulated Release build, not the sanitizer builds,
// where UBSan itself checks it.
bool alignment_checked();
// Whether Checks::uninit_shared and race_shared can see the kernels' accesses (see above).
bool shared_access_checked();
// Names the next launch in the emulator's reports (kernels/cuda/launch.h passes its `what`).
void name_next_launch(const char* name);

}  // namespace winfer_emu

// After `__shared__ T name[...];` in a kernel: `WINFER_EMU_SHARED(name);` (nothing natively,
// kernels/cuda/device_common.cuh).
#define WINFER_EMU_SHARED(var) ::winfer_emu::shared_declared(&(var), sizeof(var))

// ---- kernel launch ------------------------------------------------------------------------------
namespace winfer_emu {

// Runs thread_body(closure) once for every thread of every block of the grid. Checks the
// configuration as the GPU does (at most 1024 threads per block, block and grid dimensions within
// the hardware limits) and returns cudaErrorInvalidConfiguration otherwise; returns
// cudaErrorLaunchFailure (and prints why to stderr) on a barrier that not every thread reaches.
cudaError_t run_grid(dim3 grid, dim3 block, void (*thread_body)(void*), void* closure);

// The emulated counterpart of kernel<<<grid, block, 0, stream>>>(args...). The arguments are
// converted to the kernel's parameter types once, as the GPU copies them into parameter memory,
// and every thread calls the kernel with those copies.
template <typename... Params, typename... Args>
cudaError_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t /*stream*/, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "wrong number of kernel arguments");
  using ParamTuple = std::tuple<std::decay_t<Params>...>;
  struct Closure {
    void (*kernel)(Params...);
    ParamTuple params;
  };
  Closure closure{kernel, ParamTuple(std::forward<Args>(args)...)};
  return run_grid(
      grid, block,
      [](void* p) {
        Closure* c = static_cast<Closure*>(p);
        std::apply(c->kernel, c->params);
      },
      &closure);
}

}  // namespace winfer_emu
