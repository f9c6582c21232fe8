#include "kernels/cuda/memory.h"

#include <string>

#include "kernels/cuda/fault_injection.h"

namespace winfer {
namespace cuda {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

Status DeviceBuffer::allocate(size_t bytes, DeviceBuffer* out) {
  out->reset();
  if (bytes == 0) return Status();
  void* p = nullptr;
  if (testing::allocation_fails(bytes)) {
    return Status(StatusCode::kOutOfMemory,
                  "cudaMalloc(" + std::to_string(bytes) +
                      " bytes): cudaErrorMemoryAllocation (out of memory; injected by a test)");
  }
  WINFER_CUDA_RETURN_IF_ERROR(cuda_status(cudaMalloc(&p, bytes), "cudaMalloc(" + std::to_string(bytes) + " bytes)"));
  out->data_ = p;
  out->bytes_ = bytes;
  return Status();
}

void DeviceBuffer::reset() {
  // cudaFree can only fail here after an earlier sticky error, which was reported then.
  if (data_) (void)cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
}

Status copy_to_device(void* device_dst, const void* host_src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return Status();
  return cuda_status(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream),
                     "cudaMemcpyAsync (host to device)");
}

Status copy_to_host(void* host_dst, const void* device_src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return Status();
  WINFER_CUDA_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream),
                                          "cudaMemcpyAsync (device to host)"));
  return synchronize(stream);
}

Status copy_on_device(void* device_dst, const void* device_src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || device_dst == device_src) return Status();
  return cuda_status(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream),
                     "cudaMemcpyAsync (device to device)");
}

Status fill_bytes(void* device_dst, int value, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return Status();
  return cuda_status(cudaMemsetAsync(device_dst, value, bytes, stream), "cudaMemsetAsync");
}

Status synchronize(cudaStream_t stream) { return cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }

}  // namespace cuda
}  // namespace winfer
