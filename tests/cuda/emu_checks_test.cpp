// The emulator's checking modes (kernels/cuda/emu/emu.h, Checks; docs/CUDA.md "Emulator checks"):
// for each blind spot of the plain emulator, a small deliberately broken kernel (here, never in
// the product kernels) that the mode catches and the plain emulator lets pass. The product
// kernels' own tests run under every mode in CI (ctest emu.checks.*, CMakeLists.txt).
#include <doctest/doctest.h>

#if defined(WINFER_CUDA_EMULATED)

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "../kernels/test_util.h"
#include "cuda_test_util.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace {

using test::DeviceArray;

cuda::LaunchConfig config(dim3 grid, dim3 block) { return cuda::LaunchConfig{grid, block}; }

// Sets the emulator's checks for one scope, and puts back the ones it found (those of
// WINFER_EMU_CHECKS, when CI runs this binary under a mode).
class ScopedChecks {
 public:
  explicit ScopedChecks(const winfer_emu::Checks& checks) : previous_(winfer_emu::set_checks(checks)) {}
  ~ScopedChecks() { winfer_emu::set_checks(previous_); }
  ScopedChecks(const ScopedChecks&) = delete;
  ScopedChecks& operator=(const ScopedChecks&) = delete;

 private:
  winfer_emu::Checks previous_;
};

winfer_emu::Checks plain() { return winfer_emu::Checks{}; }
winfer_emu::Checks poison() {
  winfer_emu::Checks c;
  c.poison_shared = true;
  return c;
}
winfer_emu::Checks warps_apart(uint64_t seed) {
  winfer_emu::Checks c;
  c.warps_apart = true;
  c.seed = seed;
  return c;
}

// What the process writes to stderr while `run` runs (the emulator's reports).
template <typename Run>
std::string stderr_of(Run run) {
  std::fflush(stderr);
  FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  const int saved = dup(fileno(stderr));
  dup2(fileno(capture), fileno(stderr));
  run();
  std::fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  std::string text;
  std::rewind(capture);
  for (int c; (c = std::fgetc(capture)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(capture);
  return text;
}

// ---- uninitialized shared memory (a missing zero-fill) ------------------------------------------
// Sums a 64-slot shared tile of which the block (48 threads) fills only 48 slots: the zero-fill
// of the other 16 is missing. The plain emulator's shared memory starts at zero and the unwritten
// slots stay zero from block to block, so the sum is right; on a GPU they hold whatever was
// there. Poisoned, they are NaN.
__global__ void sum_without_zero_fill(const float* in, float* out) {
  __shared__ float tile[64];
  WINFER_EMU_SHARED(tile);
  const unsigned t = threadIdx.x;
  tile[t] = in[blockIdx.x * blockDim.x + t];  // BUG: slots blockDim.x..63 never written
  __syncthreads();
  if (t == 0) {
    float sum = 0.f;
    for (int i = 0; i < 64; ++i) sum += tile[i];
    out[blockIdx.x] = sum;
  }
}

// The same with the zero-fill.
__global__ void sum_with_zero_fill(const float* in, float* out) {
  __shared__ float tile[64];
  WINFER_EMU_SHARED(tile);
  const unsigned t = threadIdx.x;
  for (unsigned i = t; i < 64; i += blockDim.x) tile[i] = 0.f;
  __syncthreads();
  tile[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  if (t == 0) {
    float sum = 0.f;
    for (int i = 0; i < 64; ++i) sum += tile[i];
    out[blockIdx.x] = sum;
  }
}

// An int64 index table read before it is written: poisoned, the index is huge.
__global__ void gather_uninitialized_index(const float* in, float* out, int* bad) {
  __shared__ int64_t rows[32];
  WINFER_EMU_SHARED(rows);
  const unsigned t = threadIdx.x;
  if (t < 16) rows[t] = t;  // BUG: rows 16..31 never written
  __syncthreads();
  const int64_t r = rows[t];
  if (r < 0 || r >= 32) {
    atomicAdd(bad, 1);  // a GPU would read far outside `in`
  } else {
    out[t] = in[r];
  }
}

std::vector<float> block_sums(const std::vector<float>& input, int blocks, int threads) {
  std::vector<float> sums(static_cast<size_t>(blocks), 0.f);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t) sums[static_cast<size_t>(b)] += input[static_cast<size_t>(b * threads + t)];
  return sums;
}

TEST_CASE("emulator checks: poisoned shared memory shows a missing zero-fill the plain emulator hides") {
  const int blocks = 4, threads = 48;
  const std::vector<float> input = test::random_floats(blocks * threads, 11);
  const std::vector<float> expected = block_sums(input, blocks, threads);
  DeviceArray in(input), out(blocks);
  auto run = [&](void (*kernel)(const float*, float*)) {
    REQUIRE_CUDA_OK(cuda::launch("sum", config(dim3(blocks), dim3(threads)), nullptr, kernel, in.data(), out.data()));
    return out.download();
  };
  {
    ScopedChecks checks(plain());
    const std::vector<float> got = run(sum_without_zero_fill);  // the blind spot: passes
    for (int b = 0; b < blocks; ++b) CHECK(got[static_cast<size_t>(b)] == doctest::Approx(expected[b]));
  }
  {
    ScopedChecks checks(poison());
    const std::vector<float> got = run(sum_without_zero_fill);
    for (int b = 0; b < blocks; ++b) CHECK(std::isnan(got[static_cast<size_t>(b)]));
    const std::vector<float> fixed = run(sum_with_zero_fill);
    for (int b = 0; b < blocks; ++b) CHECK(fixed[static_cast<size_t>(b)] == doctest::Approx(expected[b]));
  }
}

TEST_CASE("emulator checks: a poisoned shared index is out of range") {
  const std::vector<float> input = test::random_floats(32, 12);
  DeviceArray in(input), out(32);
  int* bad = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&bad), sizeof(int)) == cudaSuccess);
  auto bad_reads = [&] {
    REQUIRE(cudaMemset(bad, 0, sizeof(int)) == cudaSuccess);
    REQUIRE_CUDA_OK(cuda::launch("gather", config(dim3(1), dim3(32)), nullptr, gather_uninitialized_index, in.data(),
                                 out.data(), bad));
    int count = -1;
    REQUIRE(cudaMemcpy(&count, bad, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
    return count;
  };
  {
    ScopedChecks checks(plain());
    CHECK(bad_reads() == 0);  // the unwritten rows read as row 0
  }
  {
    ScopedChecks checks(poison());
    CHECK(bad_reads() == 16);
  }
  CHECK(cudaFree(bad) == cudaSuccess);
}

// ---- a missing barrier after a warp-level reduction ----------------------------------------------
// Each warp sums its lanes with shuffles and lane 0 writes the warp's sum to shared memory; the
// last thread of the block adds the warps' sums. The __syncthreads() between the two is missing.
// In the plain emulator every warp reaches the write in the same round, and the last thread runs
// last in it, so it reads every warp's sum; a warp that runs ahead of the others reads sums not
// written yet (an earlier block's, or poison).
template <bool kBarrier>
__global__ void block_sum_after_shuffles(const float* in, float* out) {
  __shared__ float partial[4];
  WINFER_EMU_SHARED(partial);
  const unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  float v = in[blockIdx.x * blockDim.x + t];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (lane == 0) partial[warp] = v;
  if (kBarrier) __syncthreads();  // BUG when false
  if (t == blockDim.x - 1) out[blockIdx.x] = partial[0] + partial[1] + partial[2] + partial[3];
}

TEST_CASE("emulator checks: warps apart show a missing barrier after a warp reduction") {
  const int blocks = 16, threads = 128;
  const std::vector<float> input = test::random_floats(blocks * threads, 13);
  const std::vector<float> expected = block_sums(input, blocks, threads);
  DeviceArray in(input), out(blocks);
  // How many blocks get a wrong sum.
  auto wrong_blocks = [&](void (*kernel)(const float*, float*)) {
    REQUIRE_CUDA_OK(
        cuda::launch("block sum", config(dim3(blocks), dim3(threads)), nullptr, kernel, in.data(), out.data()));
    const std::vector<float> got = out.download();
    int wrong = 0;
    for (int b = 0; b < blocks; ++b)
      wrong += !(std::fabs(got[static_cast<size_t>(b)] - expected[static_cast<size_t>(b)]) <= 1e-3f);
    return wrong;
  };
  {
    ScopedChecks checks(plain());
    CHECK(wrong_blocks(block_sum_after_shuffles<false>) == 0);  // the blind spot: passes
    CHECK(wrong_blocks(block_sum_after_shuffles<true>) == 0);
  }
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed ", seed);
    ScopedChecks checks(warps_apart(seed));
    CHECK(wrong_blocks(block_sum_after_shuffles<false>) > 0);
    CHECK(wrong_blocks(block_sum_after_shuffles<true>) == 0);
  }
}

// Warps apart still run every thread once and release barriers as before: the plain emulator's
// own cases (a partial last warp, a barrier some threads skip) behave the same.
__global__ void partial_warp_reduce(float* out) {
  const unsigned t = threadIdx.x;
  const unsigned mask = t < 32 ? 0xffffffffu : 0x0000ffffu;
  const int width = t < 32 ? 32 : 16;
  float v = static_cast<float>(t);
  for (int offset = width / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset, width);
  __syncthreads();
  out[t] = v;
}

__global__ void half_skip_barrier(float* out) {
  if (threadIdx.x % 2 == 0) return;
  __syncthreads();
  out[threadIdx.x] = 1.f;
}

TEST_CASE("emulator checks: warps apart keeps CUDA's shuffle and barrier rules") {
  ScopedChecks checks(warps_apart(7));
  DeviceArray out(48);
  REQUIRE_CUDA_OK(cuda::launch("partial warp", config(dim3(2), dim3(48)), nullptr, partial_warp_reduce, out.data()));
  const std::vector<float> got = out.download();
  for (int t = 0; t < 48; ++t) CHECK(got[static_cast<size_t>(t)] == (t < 32 ? 496.f : 32 * 16 + 120.f));
  std::string report;
  const std::string text = stderr_of([&] {
    const cuda::Status broken =
        cuda::launch("divergent", config(dim3(1), dim3(64)), nullptr, half_skip_barrier, out.data());
    CHECK(broken.message().find("cudaErrorLaunchFailure") != std::string::npos);
  });
  CHECK(text.find("32 have returned") != std::string::npos);
  CHECK(cudaGetLastError() == cudaSuccess);
}

// ---- every shared access seen: uninitialized reads and races, named ---------------------------------
winfer_emu::Checks watch(bool uninit, bool race) {
  winfer_emu::Checks c;
  c.uninit_shared = uninit;
  c.race_shared = race;
  return c;
}

// Two threads write the same shared slot between the same barriers (a write-write race), then
// every thread reads it: whichever wrote last wins, here and on a GPU, and the plain emulator
// always lets the same one win, so the result looks deterministic.
__global__ void racy_flag(float* out) {
  __shared__ float flag[1];
  WINFER_EMU_SHARED(flag);
  if (threadIdx.x == 0) flag[0] = 0.f;
  __syncthreads();
  if (threadIdx.x == 5 || threadIdx.x == 40) flag[0] = static_cast<float>(threadIdx.x);  // BUG: race
  __syncthreads();
  out[threadIdx.x] = flag[0];
}

TEST_CASE("emulator checks: reads of never-written shared memory are reported with kernel, offset, block, thread") {
  if (!winfer_emu::shared_access_checked()) {
    MESSAGE("the kernels' accesses are not instrumented in this build (sanitizer build): skipped");
    return;
  }
  const int blocks = 2, threads = 48;
  const std::vector<float> input = test::random_floats(blocks * threads, 15);
  DeviceArray in(input), out(blocks);
  {
    ScopedChecks checks(watch(true, false));
    cuda::Status status;
    const std::string text = stderr_of([&] {
      status = cuda::launch("sum without zero fill", config(dim3(blocks), dim3(threads)), nullptr,
                            sum_without_zero_fill, in.data(), out.data());
    });
    CHECK(status.message().find("cudaErrorLaunchFailure") != std::string::npos);
    INFO(text);
    CHECK(text.find("read of shared memory never written in this block: kernel sum without zero fill, 4 bytes at "
                    "offset 192 of a 256-byte __shared__ variable") != std::string::npos);
    CHECK(text.find("thread (0,0,0)") != std::string::npos);
    // Zero-filled first: nothing to report.
    REQUIRE_CUDA_OK(cuda::launch("sum with zero fill", config(dim3(blocks), dim3(threads)), nullptr, sum_with_zero_fill,
                                 in.data(), out.data()));
  }
  {
    ScopedChecks checks(plain());  // the blind spot: passes
    REQUIRE_CUDA_OK(cuda::launch("sum without zero fill", config(dim3(blocks), dim3(threads)), nullptr,
                                 sum_without_zero_fill, in.data(), out.data()));
  }
}

TEST_CASE("emulator checks: shared-memory races between barriers are reported") {
  if (!winfer_emu::shared_access_checked()) {
    MESSAGE("the kernels' accesses are not instrumented in this build (sanitizer build): skipped");
    return;
  }
  DeviceArray out(64);
  {
    ScopedChecks checks(plain());  // the blind spot: one of the two values, and no error
    REQUIRE_CUDA_OK(cuda::launch("racy flag", config(dim3(1), dim3(64)), nullptr, racy_flag, out.data()));
    const float v = out.download()[0];
    CHECK((v == 5.f || v == 40.f));
  }
  ScopedChecks checks(watch(false, true));
  cuda::Status status;
  std::string text =
      stderr_of([&] { status = cuda::launch("racy flag", config(dim3(1), dim3(64)), nullptr, racy_flag, out.data()); });
  CHECK(status.message().find("cudaErrorLaunchFailure") != std::string::npos);
  CHECK(text.find("shared-memory race (write after another thread's access): kernel racy flag, 4 bytes at offset 0 "
                  "of a 4-byte __shared__ variable, block (0,0,0) thread (") != std::string::npos);
  CHECK((text.find("thread (40,0,0) and thread (5,0,0) with no __syncthreads() between") != std::string::npos ||
         text.find("thread (5,0,0) and thread (40,0,0) with no __syncthreads() between") != std::string::npos));
  // The missing barrier after the warp reduction, seen in the plain order too: thread 127 reads
  // what lane 0 of warps 0-2 wrote in the same interval.
  const int blocks = 2, threads = 128;
  DeviceArray in(test::random_floats(blocks * threads, 16)), sums(blocks);
  text = stderr_of([&] {
    status = cuda::launch("block sum", config(dim3(blocks), dim3(threads)), nullptr, block_sum_after_shuffles<false>,
                          in.data(), sums.data());
  });
  CHECK(status.message().find("cudaErrorLaunchFailure") != std::string::npos);
  CHECK(text.find("shared-memory race (read of another thread's write): kernel block sum") != std::string::npos);
  CHECK(text.find("thread (127,0,0) and thread (0,0,0)") != std::string::npos);
  REQUIRE_CUDA_OK(cuda::launch("block sum", config(dim3(blocks), dim3(threads)), nullptr,
                               block_sum_after_shuffles<true>, in.data(), sums.data()));
}

// ---- misaligned vector accesses --------------------------------------------------------------------
// 16-byte loads from `in + offset` and 8-byte loads from its bytes: on a GPU a float4 load from an
// address that is not a multiple of 16 faults; x86 does it. Checked in the emulated Release build
// (-fsanitize=alignment with the emulator's handlers); the sanitizer builds check it with UBSan,
// where this broken kernel would abort the process, so the case runs only with the handlers. (A
// misaligned float4 store is not among the cases: GCC stores a 16-byte-aligned type with an
// aligned SSE store, which faults on x86 too, so the plain emulator was never blind to it.)
__global__ void load_float4(const float* in, float* out, int offset) {
  const float4 v = *reinterpret_cast<const float4*>(in + offset + 4 * threadIdx.x);
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

__global__ void load_int64(const float* in, float* out, int offset) {
  const int64_t v = *reinterpret_cast<const int64_t*>(in + offset + 2 * threadIdx.x);
  out[threadIdx.x] = static_cast<float>(v & 1);
}

__global__ void store_float4(float* out, int offset) {
  *reinterpret_cast<float4*>(out + offset + 4 * threadIdx.x) = make_float4(1.f, 2.f, 3.f, 4.f);
}

TEST_CASE("emulator checks: misaligned 16- and 8-byte accesses fail the launch, naming the kernel") {
  if (!winfer_emu::alignment_checked()) {
    MESSAGE("alignment is checked by UBSan in this build (a misaligned access aborts): skipped");
    return;
  }
  ScopedChecks checks(plain());  // thread (0,0,0) runs first
  DeviceArray in(test::random_floats(64 + 4, 14)), out(64 + 4);
  // Aligned: fine.
  REQUIRE_CUDA_OK(cuda::launch("float4", config(dim3(1), dim3(16)), nullptr, load_float4, in.data(), out.data(), 0));
  REQUIRE_CUDA_OK(cuda::launch("int64", config(dim3(1), dim3(16)), nullptr, load_int64, in.data(), out.data(), 2));
  REQUIRE_CUDA_OK(cuda::launch("store", config(dim3(1), dim3(16)), nullptr, store_float4, out.data(), 4));
  struct Case {
    const char* what;
    std::function<cuda::Status()> launch;
    const char* report;
  };
  const Case cases[] = {
      {"float4 load at +1 float",
       [&] {
         return cuda::launch("float4", config(dim3(1), dim3(16)), nullptr, load_float4, in.data(), out.data(), 1);
       },
       "misaligned load of 'const"},
      {"float4 load at +2 floats",
       [&] {
         return cuda::launch("float4", config(dim3(1), dim3(16)), nullptr, load_float4, in.data(), out.data(), 2);
       },
       "needs 16-byte alignment"},
      {"int64 load at +1 float",
       [&] { return cuda::launch("int64", config(dim3(1), dim3(16)), nullptr, load_int64, in.data(), out.data(), 1); },
       "needs 8-byte alignment"},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.what));
    cuda::Status status;
    const std::string text = stderr_of([&] { status = c.launch(); });
    CHECK(status.message().find("cudaErrorLaunchFailure") != std::string::npos);
    CHECK(text.find(c.report) != std::string::npos);
    CHECK(text.find("emu_checks_test.cpp:") != std::string::npos);  // the kernel's line
    CHECK(text.find("block (0,0,0) thread (0,0,0)") != std::string::npos);
    CHECK(cudaGetLastError() == cudaSuccess);
  }
}

}  // namespace
}  // namespace winfer

#endif  // WINFER_CUDA_EMULATED
