// Helpers for model-level tests: write a YAML model into a temp dir, load it, and check that
// loading fails with a message containing given fragments.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "winfer/model.h"
#include "winfer/npy.h"
#include "winfer/safetensors.h"
#include "winfer/session.h"

namespace winfer_test {

inline std::string repo_path(const std::string& relative) { return std::string(WINFER_SOURCE_DIR) + "/" + relative; }

// A zoo model's YAML with a side x side input instead of its declared 224x224 (the plan's and
// the fusions' structure do not depend on the image size; the tests stay short).
inline std::string zoo_yaml_at(const std::string& name, int64_t side) {
  std::string yaml = read_bytes(repo_path("models/zoo/" + name + ".yaml"));
  const std::string declared = "shape: [1, 3, 224, 224]";
  const size_t at = yaml.find(declared);
  REQUIRE(at != std::string::npos);
  yaml.replace(at, declared.size(), "shape: [1, 3, " + std::to_string(side) + ", " + std::to_string(side) + "]");
  return yaml;
}

// A header for hand-written test models: input [1, C, H, W].
inline std::string model_header(int64_t c = 3, int64_t h = 8, int64_t w = 8) {
  return "format: winfer/1\ninput: {name: input, shape: [1, " + std::to_string(c) + ", " + std::to_string(h) + ", " +
         std::to_string(w) + "]}\n";
}

inline winfer::Result<std::shared_ptr<const winfer::Model>> load_text(const TempDir& dir, const std::string& yaml,
                                                                      const winfer::LoadOptions& options = {}) {
  const std::string path = dir.file("model.yaml");
  write_bytes(path, yaml);
  return winfer::Model::load(path, options);
}

// Loading must fail and the message must contain every fragment.
inline void expect_load_error(const std::string& yaml, const std::vector<std::string>& fragments,
                              const winfer::LoadOptions& options = {}) {
  TempDir dir;
  auto model = load_text(dir, yaml, options);
  REQUIRE_FALSE(model.ok());
  const std::string& message = model.status().message();
  INFO("message: " << message);
  for (const std::string& f : fragments) CHECK(contains(message, f));
}

inline float max_abs_diff(const winfer::Tensor& a, const winfer::Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  float worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(a.data()[i] - b.data()[i]));
  return worst;
}

inline winfer::Tensor run_model(std::shared_ptr<const winfer::Model> model, const winfer::Tensor& input,
                                winfer::SessionOptions options = {}) {
  options.batch = input.shape()[0];
  auto session = winfer::Session::create(std::move(model), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  auto output = session.value()->run(input);
  REQUIRE_MESSAGE(output.ok(), output.status().message());
  return std::move(output).value();
}

}  // namespace winfer_test
