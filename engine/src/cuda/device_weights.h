// Weights on CUDA devices, uploaded once per model and device and shared by every session of
// that model on that device (the model's CUDA state: Model::device_states(), key "cuda").
// Sessions ask for a tensor by its owner (the op) and a key ("weight:im2win", "bias", ...); the
// first asks fills the host form and uploads it, later ones get the same device pointer.
// Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "engine/src/device_backend.h"
#include "kernels/cuda/memory.h"
#include "winfer/status.h"

namespace winfer {

class DeviceWeightCache : public ModelDeviceState {
 public:
  DeviceWeightCache() = default;
  DeviceWeightCache(const DeviceWeightCache&) = delete;
  DeviceWeightCache& operator=(const DeviceWeightCache&) = delete;

  // The device copy of (owner, key) on `device` (the current device), `bytes` long; `fill`
  // writes its host form into a temporary buffer the first time only.
  Result<const float*> get(int device, const void* owner, const std::string& key, size_t bytes,
                           const std::function<void(float*)>& fill);
  // Bytes held on `device`.
  size_t bytes_on(int device) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::tuple<int, const void*, std::string>, cuda::DeviceBuffer> buffers_;
};

// `model`'s cache (created on first use).
DeviceWeightCache& device_weights_of(const Model& model);

}  // namespace winfer
