// The CUDA backend behind the engine's DeviceBackend seam (engine/src/device_backend.h): the
// devices the runtime finds, the selectable algorithms, the op table's coverage and sessions.
// Built natively (linked in, or as the plug-in libwinfer_cuda.so) or against the host emulator
// in the tests; builds without nvcc link stub/no_cuda_backend.cpp instead.
#include "engine/src/cuda/cuda_backend.h"

#include "engine/src/cuda/cuda_ops.h"
#include "engine/src/cuda/cuda_session.h"
#include "kernels/cuda/conv_algorithm.h"
#include "kernels/cuda/context.h"

namespace winfer {
namespace {

class CudaBackend : public DeviceBackend {
 public:
  DeviceAvailability availability() const override { return cuda_device_availability(); }
  std::vector<std::string> conv_algorithm_names() const override { return cuda_selectable_conv_algorithms(); }
  bool supports_op(const Op& op) const override { return find_cuda_kernel_factory(op.type()) != nullptr; }
  Result<std::unique_ptr<SessionImpl>> create_session(std::shared_ptr<const Model> model, const SessionOptions& options,
                                                      int device_index) const override {
    return create_cuda_session(std::move(model), options, device_index);
  }
};

}  // namespace

DeviceAvailability cuda_device_availability() {
  const cuda::DeviceProbe probe = cuda::probe_devices();
  DeviceAvailability a;
  a.count = probe.count;
  a.name = probe.name;
  a.reason = probe.reason;
  return a;
}

std::vector<std::string> cuda_selectable_conv_algorithms() {
  std::vector<std::string> names;
  for (const cuda::ConvAlgorithm* a : cuda::conv_algorithms()) {
    if (a->user_selectable()) names.push_back(a->name());
  }
  return names;
}

const DeviceBackend& cuda_backend_implementation() {
  static const CudaBackend backend;
  return backend;
}

}  // namespace winfer
