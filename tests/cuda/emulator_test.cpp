// The host emulator itself (kernels/cuda/emu/): barriers, shared memory, warp shuffles, indices,
// launch errors. Its kernels are written in this .cpp, so the file only builds for the emulator;
// on a GPU the same CUDA semantics are the hardware's.
#include <doctest/doctest.h>

#if defined(WINFER_CUDA_EMULATED)

#include <vector>

#include "../kernels/test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace {

using test::DeviceArray;

// Every thread writes its slot of shared memory, waits at the barrier, then reads the slot of the
// thread at the other end of the block. Without a real barrier the first threads would read
// slots nobody has written yet.
__global__ void reverse_through_shared(const float* in, float* out) {
  __shared__ float buffer[256];
  const unsigned t = threadIdx.x, n = blockDim.x;
  buffer[t] = in[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = buffer[n - 1 - t];
}

// Records which (block, thread) ran, in a 3-D grid of 3-D blocks, and the dimensions it saw.
__global__ void record_indices(int* seen, int* dims_ok) {
  const unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  atomicAdd(&seen[block * threads + thread], 1);
  if (gridDim.x == 3 && gridDim.y == 2 && gridDim.z == 2 && blockDim.x == 5 && blockDim.y == 3 && blockDim.z == 2)
    atomicAdd(dims_ok, 1);
}

// Warp shuffles: out[t*5 + i] holds the result of the i-th kind of shuffle in thread t.
__global__ void shuffles(int* out) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32;
  const unsigned full = 0xffffffffu;
  int* o = out + t * 5;
  o[0] = __shfl_xor_sync(full, t, 1);         // neighbour swap
  o[1] = __shfl_down_sync(full, t, 4);        // lane + 4, own value at the top
  o[2] = __shfl_up_sync(full, t, 3);          // lane - 3, own value at the bottom
  o[3] = __shfl_sync(full, t, 7);             // broadcast lane 7 of the warp
  o[4] = __shfl_sync(full, t, lane + 1, 16);  // rotate within halves of 16
}

// Butterfly sum over each warp of a 48-thread block: the second warp has 16 lanes, so it shuffles
// with a 16-lane mask.
__global__ void partial_warp_sum(float* out) {
  const unsigned t = threadIdx.x;
  const unsigned mask = t < 32 ? 0xffffffffu : 0x0000ffffu;
  const int width = t < 32 ? 32 : 16;
  float v = static_cast<float>(t);
  for (int offset = width / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset, width);
  out[t] = v;
}

// A barrier that half the block never reaches (undefined on a GPU): reported as a failure.
__global__ void divergent_barrier(float* out) {
  if (threadIdx.x % 2 == 0) return;
  __syncthreads();
  out[threadIdx.x] = 1.f;
}

cuda::LaunchConfig config(dim3 grid, dim3 block) { return cuda::LaunchConfig{grid, block}; }

TEST_CASE("emulator: __syncthreads is a barrier over the block, shared memory is per block") {
  const std::vector<float> input = test::random_floats(3 * 256, 1);
  DeviceArray in(input), out(input.size());
  REQUIRE_CUDA_OK(
      cuda::launch("reverse", config(dim3(3), dim3(256)), nullptr, reverse_through_shared, in.data(), out.data()));
  const std::vector<float> got = out.download();
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 256; ++t)
      CHECK(got[static_cast<size_t>(b * 256 + t)] == input[static_cast<size_t>(b * 256 + 255 - t)]);
}

TEST_CASE("emulator: every thread of every block runs once with its indices") {
  const int blocks = 3 * 2 * 2, threads = 5 * 3 * 2;
  std::vector<int> zeros(static_cast<size_t>(blocks * threads), 0);
  int* seen = nullptr;
  int* dims_ok = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&seen), zeros.size() * sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&dims_ok), sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMemcpy(seen, zeros.data(), zeros.size() * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemset(dims_ok, 0, sizeof(int)) == cudaSuccess);
  REQUIRE_CUDA_OK(
      cuda::launch("indices", config(dim3(3, 2, 2), dim3(5, 3, 2)), nullptr, record_indices, seen, dims_ok));
  std::vector<int> got(zeros.size());
  int dims = 0;
  REQUIRE(cudaMemcpy(got.data(), seen, got.size() * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  REQUIRE(cudaMemcpy(&dims, dims_ok, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int v : got) CHECK(v == 1);
  CHECK(dims == blocks * threads);
  CHECK(cudaFree(seen) == cudaSuccess);
  CHECK(cudaFree(dims_ok) == cudaSuccess);
}

TEST_CASE("emulator: warp shuffles follow CUDA's lane rules") {
  const int threads = 64;
  int* out = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&out), threads * 5 * sizeof(int)) == cudaSuccess);
  REQUIRE_CUDA_OK(cuda::launch("shuffles", config(dim3(1), dim3(threads)), nullptr, shuffles, out));
  std::vector<int> got(threads * 5);
  REQUIRE(cudaMemcpy(got.data(), out, got.size() * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (int t = 0; t < threads; ++t) {
    const int lane = t % 32, warp_base = t - lane;
    INFO("thread ", t);
    CHECK(got[static_cast<size_t>(t * 5 + 0)] == (t ^ 1));
    CHECK(got[static_cast<size_t>(t * 5 + 1)] == (lane + 4 < 32 ? t + 4 : t));
    CHECK(got[static_cast<size_t>(t * 5 + 2)] == (lane >= 3 ? t - 3 : t));
    CHECK(got[static_cast<size_t>(t * 5 + 3)] == warp_base + 7);
    CHECK(got[static_cast<size_t>(t * 5 + 4)] == warp_base + (lane / 16) * 16 + (lane % 16 + 1) % 16);
  }
  CHECK(cudaFree(out) == cudaSuccess);
}

TEST_CASE("emulator: a partial last warp shuffles among its existing lanes") {
  DeviceArray out(48);
  REQUIRE_CUDA_OK(cuda::launch("partial warp", config(dim3(1), dim3(48)), nullptr, partial_warp_sum, out.data()));
  const std::vector<float> got = out.download();
  for (int t = 0; t < 48; ++t) CHECK(got[static_cast<size_t>(t)] == (t < 32 ? 496.f : 32 * 16 + 120.f));
}

TEST_CASE("emulator: invalid configurations and broken barriers are launch errors") {
  DeviceArray out(64);
  const cuda::Status too_big = cuda::launch("big", config(dim3(1), dim3(2048)), nullptr, divergent_barrier, out.data());
  CHECK(too_big.code() == cuda::StatusCode::kDeviceError);
  CHECK(too_big.message().find("cudaErrorInvalidConfiguration") != std::string::npos);
  const cuda::Status broken =
      cuda::launch("divergent", config(dim3(1), dim3(64)), nullptr, divergent_barrier, out.data());
  CHECK(broken.code() == cuda::StatusCode::kDeviceError);
  CHECK(broken.message().find("cudaErrorLaunchFailure") != std::string::npos);
  // The failure is not left pending for the next call, and the emulator still works.
  CHECK(cudaGetLastError() == cudaSuccess);
  const std::vector<float> input = test::random_floats(256, 2);
  DeviceArray in(input), again(256);
  REQUIRE_CUDA_OK(
      cuda::launch("reverse", config(dim3(1), dim3(256)), nullptr, reverse_through_shared, in.data(), again.data()));
  CHECK(again.download()[0] == input[255]);
  // An empty grid launches nothing and succeeds.
  CHECK(cuda::launch("empty", config(dim3(0), dim3(64)), nullptr, divergent_barrier, out.data()).ok());
}

TEST_CASE("emulator: runtime API checks copies against allocations") {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, 64) == cudaSuccess);
  std::vector<unsigned char> host(128);
  CHECK(cudaMemcpy(p, host.data(), 64, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaMemcpy(p, host.data(), 128, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);  // past the end
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaFree(p) == cudaSuccess);
  CHECK(cudaFree(p) == cudaErrorInvalidDevicePointer);  // double free
  (void)cudaGetLastError();
  const cuda::DeviceProbe probe = cuda::probe_devices();
  CHECK(probe.count == 1);
  CHECK(probe.name.find("emulator") != std::string::npos);
}

TEST_CASE("emulator: events measure the work between them, in order") {
  cudaEvent_t start = nullptr, middle = nullptr, end = nullptr;
  REQUIRE(cudaEventCreate(&start) == cudaSuccess);
  REQUIRE(cudaEventCreate(&middle) == cudaSuccess);
  REQUIRE(cudaEventCreate(&end) == cudaSuccess);
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, start, end) == cudaErrorInvalidResourceHandle);  // never recorded
  CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);

  const std::vector<float> input = test::random_floats(256 * 8, 3);
  DeviceArray in(input), out(input.size());
  REQUIRE(cudaEventRecord(start, nullptr) == cudaSuccess);
  REQUIRE_CUDA_OK(
      cuda::launch("reverse", config(dim3(8), dim3(256)), nullptr, reverse_through_shared, in.data(), out.data()));
  REQUIRE(cudaEventRecord(middle, nullptr) == cudaSuccess);
  REQUIRE_CUDA_OK(
      cuda::launch("reverse", config(dim3(8), dim3(256)), nullptr, reverse_through_shared, out.data(), in.data()));
  REQUIRE(cudaEventRecord(end, nullptr) == cudaSuccess);
  REQUIRE(cudaEventSynchronize(end) == cudaSuccess);

  float first = -1, second = -1, both = -1;
  REQUIRE(cudaEventElapsedTime(&first, start, middle) == cudaSuccess);
  REQUIRE(cudaEventElapsedTime(&second, middle, end) == cudaSuccess);
  REQUIRE(cudaEventElapsedTime(&both, start, end) == cudaSuccess);
  CHECK(first > 0);  // a launch of 2048 fibers takes time on the host clock
  CHECK(second > 0);
  CHECK(both >= first);
  CHECK(both >= second);
  CHECK(both == doctest::Approx(first + second).epsilon(0.01));
  CHECK(cudaEventElapsedTime(&ms, end, start) == cudaSuccess);
  CHECK(ms == doctest::Approx(-both));  // reversed: negative, as natively

  CHECK(cudaEventDestroy(start) == cudaSuccess);
  CHECK(cudaEventDestroy(middle) == cudaSuccess);
  CHECK(cudaEventDestroy(end) == cudaSuccess);
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("emulator: cudaMemGetInfo counts the live allocations against the host's memory") {
  size_t free_before = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free_before, &total) == cudaSuccess);
  CHECK(total > 0);
  CHECK(free_before <= total);
  cudaDeviceProp prop{};
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  CHECK(prop.totalGlobalMem == total);

  void* p = nullptr;
  constexpr size_t kBytes = (1u << 20) + 1;  // rounded up to cudaMalloc's 256-byte alignment
  REQUIRE(cudaMalloc(&p, kBytes) == cudaSuccess);
  size_t free_after = 0, total_after = 0;
  REQUIRE(cudaMemGetInfo(&free_after, &total_after) == cudaSuccess);
  CHECK(total_after == total);
  CHECK(free_after == free_before - ((1u << 20) + 256));
  REQUIRE(cudaFree(p) == cudaSuccess);
  REQUIRE(cudaMemGetInfo(&free_after, &total_after) == cudaSuccess);
  CHECK(free_after == free_before);

  // More than is free is refused before anything is allocated.
  CHECK(cudaMalloc(&p, free_before + 1) == cudaErrorMemoryAllocation);
  CHECK(p == nullptr);
  CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
  CHECK(cudaMemGetInfo(nullptr, &total) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
}

}  // namespace
}  // namespace winfer

#endif  // WINFER_CUDA_EMULATED
