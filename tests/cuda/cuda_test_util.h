// Helpers for the CUDA kernel tests, shared by the emulated and the native test binary: a test
// device (stream + library handles when available), device arrays with canaries, and status checks.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/context.h"
#include "kernels/cuda/memory.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace test {

// REQUIREs that a cuda::Status is ok, printing its message otherwise.
#define REQUIRE_CUDA_OK(expr)                         \
  do {                                                \
    const ::winfer::cuda::Status status_ = (expr);    \
    REQUIRE_MESSAGE(status_.ok(), status_.message()); \
  } while (0)

inline constexpr bool kEmulated =
#if defined(WINFER_CUDA_EMULATED)
    true;
#else
    false;
#endif

// The stream and library handles every test uses. Under the emulator there are no libraries;
// tests of paths that need them print why they skip (skip_without_libraries).
struct TestDevice {
  cuda::Context ctx;
  cuda::LibrariesPtr libraries;
  std::string no_libraries_reason;
};

// Created on first use and never destroyed: destroying cuBLAS/cuDNN handles from a static
// destructor can run after the CUDA runtime has shut down.
inline TestDevice& test_device() {
  static TestDevice* device = [] {
    auto* d = new TestDevice;
    const cuda::Status s = cuda::create_libraries(nullptr, /*allow_tf32=*/false, &d->libraries);
    if (s.ok()) {
      d->ctx.libraries = d->libraries.get();
    } else {
      d->no_libraries_reason = s.message();
    }
    return d;
  }();
  return *device;
}
inline const cuda::Context& ctx() { return test_device().ctx; }

// True (after printing why) when the test needs cuBLAS/cuDNN and this build has none.
inline bool skip_without_libraries(const std::string& what) {
  if (ctx().libraries) return false;
  MESSAGE("skipped " << what << ": " << test_device().no_libraries_reason);
  return true;
}

// Device floats followed by a canary region of 0xA5 bytes. Contents start as NaN (0xFF bytes),
// so an element a kernel forgets to write shows up, unless built from host data.
class DeviceArray {
 public:
  static constexpr size_t kCanaryBytes = 256;

  explicit DeviceArray(size_t count) : count_(count) {
    REQUIRE_CUDA_OK(cuda::DeviceBuffer::allocate(count * sizeof(float) + kCanaryBytes, &buffer_));
    REQUIRE_CUDA_OK(cuda::fill_bytes(buffer_.data(), 0xFF, count * sizeof(float), ctx().stream));
    REQUIRE_CUDA_OK(cuda::fill_bytes(canary(), 0xA5, kCanaryBytes, ctx().stream));
  }
  explicit DeviceArray(const std::vector<float>& host) : DeviceArray(host.size()) { upload(host); }

  float* data() { return count_ ? buffer_.floats() : nullptr; }
  const float* data() const { return count_ ? buffer_.floats() : nullptr; }
  size_t size() const { return count_; }

  void upload(const std::vector<float>& host) {
    REQUIRE(host.size() == count_);
    REQUIRE_CUDA_OK(cuda::copy_to_device(buffer_.data(), host.data(), count_ * sizeof(float), ctx().stream));
  }
  // Waits for the stream (errors of queued kernels surface here) and copies the floats back.
  std::vector<float> download() const {
    std::vector<float> host(count_);
    REQUIRE_CUDA_OK(cuda::copy_to_host(host.data(), buffer_.data(), count_ * sizeof(float), ctx().stream));
    return host;
  }
  bool canary_intact() const {
    std::vector<unsigned char> bytes(kCanaryBytes);
    REQUIRE_CUDA_OK(cuda::copy_to_host(bytes.data(), canary(), kCanaryBytes, ctx().stream));
    for (unsigned char b : bytes)
      if (b != 0xA5) return false;
    return true;
  }

 private:
  void* canary() const { return static_cast<unsigned char*>(buffer_.data()) + count_ * sizeof(float); }

  size_t count_;
  cuda::DeviceBuffer buffer_;
};

inline std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

}  // namespace test
}  // namespace winfer
