// The emulator's asynchronous copies (cp.async through __pipeline_memcpy_async / __pipeline_commit /
// __pipeline_wait_prior): a copy lands only when a wait covers its committed group, zero-fill
// works, and a kernel that reads too early sees the old shared contents, as its race would on a
// GPU. Emulator only (the kernels are in this .cpp).
#include <doctest/doctest.h>

#if defined(WINFER_CUDA_EMULATED)

#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/launch.h"

namespace winfer {
namespace {

using test::DeviceArray;

// Thread t copies in[4t..4t+3] (group 1) and in[128+4t..] (group 2) into shared memory that
// starts at -1, then records what it sees: before any wait, after waiting for all but the newest
// group, and after waiting for everything. Group 2 zero-fills its last 8 bytes.
__global__ void async_copy_stages(const float* in, float* out) {
  alignas(16) __shared__ float first[128];
  alignas(16) __shared__ float second[128];
  const int t = static_cast<int>(threadIdx.x);
  for (int j = 0; j < 4; ++j) first[4 * t + j] = second[4 * t + j] = -1.f;
  __pipeline_memcpy_async(&first[4 * t], in + 4 * t, 16);
  __pipeline_commit();
  __pipeline_memcpy_async(&second[4 * t], in + 128 + 4 * t, 16, 8);
  __pipeline_commit();
  float* o = out + t * 12;
  o[0] = first[4 * t];
  o[1] = second[4 * t];
  __pipeline_wait_prior(1);  // group 1 done, group 2 may still be in flight
  o[2] = first[4 * t];
  o[3] = second[4 * t];
  __pipeline_wait_prior(0);
  for (int j = 0; j < 4; ++j) o[4 + j] = first[4 * t + j];
  for (int j = 0; j < 4; ++j) o[8 + j] = second[4 * t + j];
}

// Copies issued but never committed or waited for still land by the time the thread returns.
__global__ void async_copy_unwaited(const float* in, float* out) {
  alignas(16) __shared__ float tile[4];
  if (threadIdx.x == 0) {
    __pipeline_memcpy_async(tile, in, 16);
  }
  __syncthreads();  // the copy has not been waited for: thread 1 may see anything; we only check after
  if (threadIdx.x == 0) {
    __pipeline_wait_prior(0);  // uncommitted: waits for nothing
    out[0] = tile[0];
  }
}

TEST_CASE("emulator: cp.async copies land at the wait that covers their group, with zero fill") {
  std::vector<float> input(256);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i + 1);
  DeviceArray in(input), out(32 * 12);
  REQUIRE_CUDA_OK(
      cuda::launch("async", cuda::LaunchConfig{dim3(1), dim3(32)}, nullptr, async_copy_stages, in.data(), out.data()));
  const std::vector<float> got = out.download();
  for (int t = 0; t < 32; ++t) {
    INFO("thread ", t);
    const float* o = got.data() + t * 12;
    CHECK(o[0] == -1.f);  // nothing has landed before a wait
    CHECK(o[1] == -1.f);
    CHECK(o[2] == input[static_cast<size_t>(4 * t)]);
    CHECK(o[3] == -1.f);
    for (int j = 0; j < 4; ++j) CHECK(o[4 + j] == input[static_cast<size_t>(4 * t + j)]);
    CHECK(o[8] == input[static_cast<size_t>(128 + 4 * t)]);
    CHECK(o[9] == input[static_cast<size_t>(128 + 4 * t + 1)]);
    CHECK(o[10] == 0.f);
    CHECK(o[11] == 0.f);
  }
}

TEST_CASE("emulator: an uncommitted cp.async is not waited for") {
  DeviceArray in(std::vector<float>{5.f, 6.f, 7.f, 8.f}), out(1);
  // Shared memory is not reset between launches; what thread 0 reads is whatever `tile` held,
  // never the new value, which lands only when the thread returns.
  REQUIRE_CUDA_OK(cuda::launch("unwaited", cuda::LaunchConfig{dim3(1), dim3(2)}, nullptr, async_copy_unwaited,
                               in.data(), out.data()));
  CHECK(out.download()[0] != 5.f);
  // The copy did land when thread 0 returned: a second launch reads it before issuing its own.
  DeviceArray in2(std::vector<float>{9.f, 9.f, 9.f, 9.f});
  REQUIRE_CUDA_OK(cuda::launch("unwaited", cuda::LaunchConfig{dim3(1), dim3(2)}, nullptr, async_copy_unwaited,
                               in2.data(), out.data()));
  CHECK(out.download()[0] == 5.f);
}

}  // namespace
}  // namespace winfer

#endif  // WINFER_CUDA_EMULATED
