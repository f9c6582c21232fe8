// Shared by the fusion tests (residual_fusion_test.cpp, depthwise_fusion_test.cpp): load a YAML
// model fused or not, find and count its layers, and check that the fused graph computes what
// the unfused one does.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "engine/model_test_util.h"
#include "kernels/cpu/conv_algorithm.h"

namespace winfer_test {

// A YAML conv2d layer with "same" padding (kernel / 2) and a bias, reading `input` (default: the
// layer before it).
inline std::string same_conv(const std::string& name, int64_t in, int64_t out, int64_t kernel, int64_t groups = 1,
                             const std::string& input = "") {
  return "  - {name: " + name + ", op: conv2d, in_channels: " + std::to_string(in) +
         ", out_channels: " + std::to_string(out) + ", kernel_size: " + std::to_string(kernel) +
         ", groups: " + std::to_string(groups) + ", padding: " + std::to_string(kernel / 2) + ", bias: true" +
         (input.empty() ? "" : ", input: " + input) + "}\n";
}

// The model with seeded random weights, fused (the default) or not.
inline std::shared_ptr<const winfer::Model> load_ok(const std::string& yaml, bool fuse, uint64_t seed) {
  winfer::LoadOptions options;
  options.random_weights_seed = seed;
  options.fuse = fuse;
  TempDir dir;
  auto model = load_text(dir, yaml, options);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  return model.value();
}

inline int count_type(const winfer::Model& model, const std::string& type) {
  const auto layers = model.layers();
  return static_cast<int>(
      std::count_if(layers.begin(), layers.end(), [&](const winfer::LayerInfo& l) { return l.type == type; }));
}

// The layer of that name, or null.
inline const winfer::LayerInfo* find_layer(const std::vector<winfer::LayerInfo>& layers, const std::string& name) {
  for (const winfer::LayerInfo& l : layers) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

// Every algorithm a user can ask for ("depthwise" is chosen by the engine, not asked).
inline std::vector<std::string> user_algorithms() {
  std::vector<std::string> names;
  for (const winfer::ConvAlgorithm* a : winfer::conv_algorithms()) {
    if (std::string(a->name()) != "depthwise") names.push_back(a->name());
  }
  return names;
}

// max |a - b| / max(1, max |b|): the "relative" agreement of two runs of one network.
inline float relative_diff(const winfer::Tensor& a, const winfer::Tensor& b) {
  float scale = 1.f;
  for (int64_t i = 0; i < b.numel(); ++i) scale = std::max(scale, std::fabs(b.data()[i]));
  return max_abs_diff(a, b) / scale;
}

// What the per-layer timings (winfer bench --per-layer, --profile) say layer `name` ran, after
// one run of the default session on a random input of `input` shape; empty if it did not run.
inline std::string kernel_description(std::shared_ptr<const winfer::Model> model, const winfer::Shape& input,
                                      const std::string& name) {
  auto session = winfer::Session::create(std::move(model), winfer::SessionOptions{});
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  REQUIRE(session.value()->run(random_tensor(input, 3, winfer::Layout::kNCHW)).ok());
  for (const winfer::LayerTiming& t : session.value()->last_timings()) {
    if (t.name == name) return t.kernel;
  }
  return std::string();
}

// Fused and unfused have the same parameters and FLOPs and agree on a random input for every
// algorithm and thread count, with unused arena memory poisoned (a tensor freed or a band read
// too early shows as NaN).
inline void check_fused_equals_unfused(const std::string& yaml, const winfer::Shape& input_shape,
                                       const std::vector<std::string>& algorithms, uint64_t seed,
                                       const std::vector<int>& thread_counts = {1}) {
  const auto fused = load_ok(yaml, true, seed), unfused = load_ok(yaml, false, seed);
  CHECK(fused->total_params() == unfused->total_params());
  CHECK(fused->total_flops() == unfused->total_flops());
  const winfer::Tensor input = random_tensor(input_shape, 23, winfer::Layout::kNCHW);
  for (const std::string& algorithm : algorithms) {
    for (int threads : thread_counts) {
      INFO("conv=" << algorithm << ", threads " << threads);
      winfer::SessionOptions options;
      options.conv_algorithm = algorithm;
      options.threads = threads;
      options.poison_unused_memory = true;
      CHECK(relative_diff(run_model(fused, input, options), run_model(unfused, input, options)) <= 1e-5f);
    }
  }
}

}  // namespace winfer_test
