// Helpers of the memory-plan tests (planner_session_test, concat_alias_test): a session that
// must be created, a buffer of the plan by name, a conv2d layer line for hand-written YAML.
#pragma once

#include <memory>
#include <string>

#include "engine/model_test_util.h"

namespace winfer_test {

inline std::unique_ptr<winfer::Session> session_ok(std::shared_ptr<const winfer::Model> model,
                                                   winfer::SessionOptions options = {}) {
  auto session = winfer::Session::create(std::move(model), options);
  REQUIRE_MESSAGE(session.ok(), session.status().message());
  return std::move(session).value();
}

inline const winfer::MemoryBuffer& find_buffer(const winfer::MemoryReport& report, const std::string& name) {
  for (const winfer::MemoryBuffer& b : report.buffers) {
    if (b.name == name) return b;
  }
  FAIL("no buffer '" << name << "' in the plan");
  return report.buffers.front();
}

// A conv2d of a hand-written model's layer list, "same" padding; `input` names its input (default:
// the previous layer's output).
inline std::string conv(const std::string& name, int64_t in, int64_t out, int64_t kernel,
                        const std::string& input = "") {
  return "  - {name: " + name + ", op: conv2d, in_channels: " + std::to_string(in) +
         ", out_channels: " + std::to_string(out) + ", kernel_size: " + std::to_string(kernel) +
         ", padding: " + std::to_string(kernel / 2) + (input.empty() ? "" : ", input: " + input) + "}\n";
}

}  // namespace winfer_test
