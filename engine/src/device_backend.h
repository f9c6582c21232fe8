// The seam between the engine and a device backend beside the CPU (today: CUDA, engine/src/cuda/).
// The engine knows devices only through this interface (ggml's backend vtable): session.cpp
// asks the backend whether it has a device and for a session; the op set and the layers know
// nothing of it. A backend maps op types to its own kernels (engine/src/cuda/cuda_ops.cpp) and
// says which ops it runs (`supports_op`).
//
// Which CUDA backend a program has is chosen when it is linked: the real one
// (engine/src/cuda/cuda_backend.cpp, over the nvcc-built kernels or, in tests, the host
// emulator), or engine/src/cuda/stub/no_cuda_backend.cpp, whose availability says why there
// is none. CMake's `winfer_runtime` target links the engine with the one this build has.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "winfer/model.h"
#include "winfer/session.h"
#include "winfer/status.h"

namespace winfer {

class Op;
class SessionImpl;

// How many devices a backend can use, and why none when 0 ("built without CUDA", the driver's
// error, ...).
struct DeviceAvailability {
  int count = 0;
  std::string name;    // device 0
  std::string reason;  // when count == 0
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual DeviceAvailability availability() const = 0;
  // The convolution algorithms a session on this device accepts (SessionOptions::conv_algorithm).
  virtual std::vector<std::string> conv_algorithm_names() const = 0;
  // Whether this backend has a kernel for `op` (by its type and what it absorbed).
  virtual bool supports_op(const Op& op) const = 0;
  // A session on device `device_index`; fails with a clear error where there is none.
  virtual Result<std::unique_ptr<SessionImpl>> create_session(std::shared_ptr<const Model> model,
                                                              const SessionOptions& options,
                                                              int device_index) const = 0;
};

// The CUDA backend this program was linked with (see above).
const DeviceBackend& cuda_backend();

// What a backend keeps per model (e.g. weights uploaded to a device), created on its first
// session and dropped with the model. The model's own data never changes; these only fill up.
class ModelDeviceState {
 public:
  virtual ~ModelDeviceState() = default;
};

// A model's device states, one per backend name, created on first use under a lock.
class ModelDeviceStates {
 public:
  // The state of `backend`, made by `create()` the first time.
  template <class State>
  State& get(const std::string& backend) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<ModelDeviceState>& slot = states_[backend];
    if (!slot) slot = std::make_unique<State>();
    return static_cast<State&>(*slot);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<ModelDeviceState>> states_;
};

}  // namespace winfer
