// Weights on CUDA devices, uploaded once per model and device and shared by every session of
// that model on that device (a Model owns one cache; see Model::device_weights()). Sessions ask
// for a tensor by its owner (the op) and a key ("weight:im2win", "bias", ...); the first asks
// fills the host form and uploads it, later ones get the same device pointer. Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "winfer/status.h"

#if defined(WINFER_WITH_CUDA)
#include "kernels/cuda/memory.h"
#endif

namespace winfer {

class DeviceWeightCache {
 public:
  DeviceWeightCache() = default;
  DeviceWeightCache(const DeviceWeightCache&) = delete;
  DeviceWeightCache& operator=(const DeviceWeightCache&) = delete;
  ~DeviceWeightCache();

#if defined(WINFER_WITH_CUDA)
  // The device copy of (owner, key) on `device` (the current device), `bytes` long; `fill`
  // writes its host form into a temporary buffer the first time only.
  Result<const float*> get(int device, const void* owner, const std::string& key, size_t bytes,
                           const std::function<void(float*)>& fill);
  // Bytes held on `device`.
  size_t bytes_on(int device) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<int, const void*, std::string>, cuda::DeviceBuffer> buffers_;
#endif
};

}  // namespace winfer
