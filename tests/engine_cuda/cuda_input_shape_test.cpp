// CUDA sessions at a batch and image size chosen when the session is made
// (SessionOptions::input_shape, issue 22): the same shapes, plan and results as the CPU's, and
// the same errors. Built for the host emulator and natively, like cuda_session_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "winfer/model.h"
#include "winfer/session.h"

namespace {

using winfer::Model;
using winfer::Session;
using winfer::SessionOptions;
using winfer::Shape;
using winfer::Tensor;

#if defined(WINFER_CUDA_EMULATED)
constexpr bool kEmulated = true;
#else
constexpr bool kEmulated = false;
#endif

Tensor random_input(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::allocate(shape, winfer::Layout::kNCHW);
  uint32_t state = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    state = state * 1664525u + 1013904223u;
    t.data()[i] = static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2.f - 1.f;
  }
  return t;
}

Tensor run(const std::shared_ptr<const Model>& model, const Tensor& input, const SessionOptions& options) {
  auto session = Session::create(model, options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  CHECK(session.value()->input_shape() == input.shape());
  auto out = session.value()->run(input);
  REQUIRE_MESSAGE(out.ok(), out.status().message());
  return std::move(out).value();
}

}  // namespace

TEST_CASE("cuda session: any batch and image size (SessionOptions::input_shape) equals the CPU at that shape") {
  auto loaded = Model::load(std::string(WINFER_SOURCE_DIR) + "/models/examples/tiny_net.yaml");
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().message());
  const std::shared_ptr<const Model> model = loaded.value();
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3, 24, 40}, std::vector<int64_t>{3, 3, 48, 36}}) {
    CAPTURE(Shape(shape).to_string());
    const Tensor input = random_input(Shape(shape), 3);
    SessionOptions cpu;
    cpu.input_shape = shape;
    const Tensor want = run(model, input, cpu);
    SessionOptions cuda = cpu;
    cuda.device = "cuda";
    cuda.conv_algorithm = "im2win";
    auto session = Session::create(model, cuda);
    REQUIRE_MESSAGE(session.ok(), session.status().message());
    // The device arena is planned for this shape: larger than at the declared [1,3,32,32].
    SessionOptions declared;
    declared.device = "cuda";
    auto at_declared = Session::create(model, declared);
    REQUIRE(at_declared.ok());
    CHECK(session.value()->activation_bytes() > at_declared.value()->activation_bytes());
    auto got = session.value()->run(input);
    REQUIRE_MESSAGE(got.ok(), got.status().message());
    REQUIRE(got.value().shape() == want.shape());
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      diff = std::max(diff, std::fabs(double(got.value().data()[i]) - double(want.data()[i])));
      scale = std::max(scale, std::fabs(double(want.data()[i])));
    }
    MESSAGE(std::string(kEmulated ? "emulated" : "native")
            << " cuda at " << Shape(shape).to_string() << ": max rel error " << diff / scale);
    CHECK(diff / scale <= 1e-5);
  }

  // A fixed dim and a size the layers do not admit: the CPU's messages.
  SessionOptions options;
  options.device = "cuda";
  options.input_shape = {2, 4, 24, 40};
  auto refused = Session::create(model, options);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("dim 1 (channels) is fixed at 3 by the model") != std::string::npos);
  options.input_shape = {1, 3, 8, 8};
  refused = Session::create(model, options);
  REQUIRE_FALSE(refused.ok());
  INFO(refused.status().message());
  CHECK(refused.status().message().find("layer 'head' (conv2d)") != std::string::npos);
  CHECK(refused.status().message().find("at input shape [1,3,8,8]") != std::string::npos);
}
