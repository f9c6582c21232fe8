// The CUDA backend's parts that cuda_backend.cpp puts behind the DeviceBackend interface.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/src/device_backend.h"
#include "engine/src/session_impl.h"

namespace winfer {

// The devices the CUDA runtime reports (or why none).
DeviceAvailability cuda_device_availability();
// The CUDA convolution algorithms a session may ask for.
std::vector<std::string> cuda_selectable_conv_algorithms();
// A session on CUDA device `device_index`.
Result<std::unique_ptr<SessionImpl>> create_cuda_session(std::shared_ptr<const Model> model,
                                                         const SessionOptions& options, int device_index);

}  // namespace winfer
