// Device memory: an owning buffer and checked copies. The engine's arena will be one DeviceBuffer
// of the planned size; the tests use them for every tensor.
#pragma once

#include <cstddef>

#include "kernels/cuda/runtime.h"
#include "kernels/cuda/status.h"

namespace winfer {
namespace cuda {

// cudaMalloc'd bytes, freed by the destructor. Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Replaces *out with a new buffer of `bytes` (null data for 0 bytes).
  static Status allocate(size_t bytes, DeviceBuffer* out);
  void reset();

  void* data() const { return data_; }
  float* floats() const { return static_cast<float*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Host -> device, ordered on `stream`. The host memory may be reused when this returns.
Status copy_to_device(void* device_dst, const void* host_src, size_t bytes, cudaStream_t stream);
// Device -> host, ordered on `stream`; waits for the stream, so the data is there on return.
Status copy_to_host(void* host_dst, const void* device_src, size_t bytes, cudaStream_t stream);
// Device -> device, ordered on `stream`; nothing when dst == src (a layer computed in place).
Status copy_on_device(void* device_dst, const void* device_src, size_t bytes, cudaStream_t stream);
// Fills device bytes with `value` (e.g. 0xFF: float NaN), ordered on `stream`.
Status fill_bytes(void* device_dst, int value, size_t bytes, cudaStream_t stream);
// Waits for the stream and reports any error of the work queued on it.
Status synchronize(cudaStream_t stream);

}  // namespace cuda
}  // namespace winfer
