// The op checker on CUDA (tests/engine/op_check.h, cases in tests/engine/op_cases.h): the same
// cases as the CPU's op_check_test.cpp, on device "cuda" with every CUDA convolution algorithm,
// against the same float64 references. Under the emulator (winfer_engine_cuda_emu_tests) the
// kernels run on the host; natively (winfer_engine_cuda_tests) on the GPU.
//
// Nothing is skipped silently: an op type without a CUDA kernel must be listed in
// kNoCudaKernel, and is then checked to be refused with an error naming it; an algorithm that
// needs cuBLAS/cuDNN must be refused under the emulator with kUnsupported.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "engine/op_cases.h"
#include "engine/op_check.h"

namespace winfer {
namespace op_check {
namespace {

#if defined(WINFER_CUDA_EMULATED)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

// Op types with no CUDA kernel: a CUDA session must refuse them. None today: every built-in op
// has one (layers/*.cpp); an embedder's custom op (CPU only) would be the first.
const std::set<std::string> kNoCudaKernel = {};

// CUDA algorithms built on cuBLAS or cuDNN, which the emulator does not have.
bool needs_libraries(const std::string& algorithm) { return algorithm == "im2col" || algorithm == "cudnn"; }

SessionOptions on_cuda(const std::string& algorithm) {
  SessionOptions options;
  options.device = "cuda";
  options.conv_algorithm = algorithm;
  options.poison_unused_memory = true;
  return options;
}

TEST_CASE("op check cuda: the expected refusals are registered op types") {
  const std::vector<std::string> types = registered_op_types();
  for (const std::string& type : kNoCudaKernel) CHECK(std::count(types.begin(), types.end(), type) == 1);
}

TEST_CASE("op check cuda: every case matches float64 on CUDA, convolutions with every algorithm") {
  const std::vector<std::string> algorithms = conv_algorithm_names("cuda");
  REQUIRE_FALSE(algorithms.empty());
  Sweep sweep;
  int refusals = 0;
  for (const OpCheck& c : all_op_cases()) {
    const PreparedCheck check(c);
    if (kNoCudaKernel.count(c.type())) {
      const Run r = check.run(on_cuda("im2win"));
      INFO(c.describe(), ": expected a refusal, got '", r.status.message(), "'");
      CHECK_FALSE(r.status.ok());
      CHECK(r.status.message().find(c.type()) != std::string::npos);
      CHECK(r.status.message().find("no CUDA kernel") != std::string::npos);
      ++refusals;
      continue;
    }
    for (const std::string& algorithm : Sweep::algorithms_for(check, algorithms)) {
      const Run r = check.run(on_cuda(algorithm));
      // A depthwise layer takes the depthwise kernel whatever the algorithm: no library needed.
      if (kEmulated && needs_libraries(algorithm) && !check.depthwise()) {
        INFO(c.describe(), " with ", algorithm, ": ", r.status.message());
        CHECK(r.status.code() == ErrorCode::kUnsupported);
        ++refusals;
        continue;
      }
      sweep.check(check, r, algorithm, "on CUDA");
    }
  }
  sweep.report("of " + std::to_string(all_op_cases().size()) + " cases on CUDA" + (kEmulated ? " (emulated)" : "") +
               ", and " + std::to_string(refusals) + " expected refusals,");
}

}  // namespace
}  // namespace op_check
}  // namespace winfer
