// The CUDA backend object (cuda_backend.cpp). Programs reach it through cuda_backend()
// (engine/src/device_backend.h): linked in directly (linked/cuda_backend_linked.cpp: the tests,
// libwinfer.a) or loaded from the plug-in libwinfer_cuda.so on first use (plugin/: the CLI,
// libwinfer.so). Named apart from cuda_backend() so that inside the plug-in no call can bind to
// the loading program's cuda_backend().
#pragma once

#include "engine/src/device_backend.h"

namespace winfer {

const DeviceBackend& cuda_backend_implementation();

}  // namespace winfer
