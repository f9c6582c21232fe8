#include "engine/src/cuda/device_weights.h"

#include <vector>

namespace winfer {

Result<const float*> DeviceWeightCache::get(int device, const void* owner, const std::string& key, size_t bytes,
                                            const std::function<void(float*)>& fill) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto id = std::make_tuple(device, owner, key);
  auto it = buffers_.find(id);
  if (it != buffers_.end()) return static_cast<const float*>(it->second.floats());
  std::vector<float> host((bytes + sizeof(float) - 1) / sizeof(float));
  fill(host.data());
  cuda::DeviceBuffer buffer;
  cuda::Status s = cuda::DeviceBuffer::allocate(bytes, &buffer);
  if (s.ok()) s = cuda::copy_to_device(buffer.data(), host.data(), bytes, nullptr);
  if (s.ok()) s = cuda::synchronize(nullptr);
  if (!s.ok()) {
    return Status(s.code() == cuda::StatusCode::kOutOfMemory ? ErrorCode::kOutOfMemory : ErrorCode::kDeviceError,
                  "uploading weights '" + key + "' (" + std::to_string(bytes) + " bytes): " + s.message());
  }
  const float* data = buffer.floats();
  buffers_.emplace(id, std::move(buffer));
  return data;
}

size_t DeviceWeightCache::bytes_on(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const auto& [id, buffer] : buffers_) {
    if (std::get<0>(id) == device) total += buffer.bytes();
  }
  return total;
}

DeviceWeightCache& device_weights_of(const Model& model) {
  return model.device_states().get<DeviceWeightCache>("cuda");
}

}  // namespace winfer
