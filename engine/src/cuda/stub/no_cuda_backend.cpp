// The CUDA backend of a build without one (WINFER_CUDA=OFF, or no nvcc): no device, and the
// reason, which `winfer run --device cuda` and Session::create report.
#include "engine/src/device_backend.h"
#include "engine/src/session_impl.h"

namespace winfer {
namespace {

class NoCudaBackend : public DeviceBackend {
 public:
  DeviceAvailability availability() const override {
    DeviceAvailability a;
    a.reason = "this build of winfer has no CUDA backend (configured with WINFER_CUDA=OFF or without nvcc)";
    return a;
  }
  std::vector<std::string> conv_algorithm_names() const override { return {}; }
  bool supports_op(const Op&) const override { return false; }
  Result<std::unique_ptr<SessionImpl>> create_session(std::shared_ptr<const Model>, const SessionOptions& options,
                                                      int) const override {
    return unsupported("device '" + options.device + "': no CUDA device: " + availability().reason);
  }
};

}  // namespace

const DeviceBackend& cuda_backend() {
  static const NoCudaBackend backend;
  return backend;
}

}  // namespace winfer
