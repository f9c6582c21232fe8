// `winfer plan`: what one convolution algorithm costs for one model, as measured by a child
// process (cmd_plan.cpp), and the arena picture (plan_svg.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "winfer/session.h"

namespace winfer::cli {

struct PlanColumn {
  std::string conv;
  bool available = false;
  std::string error;  // why the algorithm is not available
  MemoryReport report;
  size_t input_bytes = 0, output_bytes = 0;  // the user's NCHW tensors of the measured run
  int conv_layers = 0, depthwise_layers = 0, fallback_layers = 0;
  std::optional<size_t> measured_peak_bytes;
  // The same load, session and run measured again in the process that did them once
  // (warm_peak_growth): without the process's one-time costs (code pages, library buffers).
  std::optional<size_t> measured_warm_bytes;
  std::string measure_note;  // why there is no measurement
  // The arena the same session plans with SessionOptions::concat_alias = false (every concat
  // input in its own storage): report.arena_bytes when no concat input is written in place.
  size_t arena_without_concat_alias = 0;

  size_t total_bytes() const { return report.packed_weights_bytes + report.arena_bytes; }
  // What the measured process should hold: the model's weights as loaded (the Model keeps
  // them), the weights the session packed, the arena and the user's input and output tensors.
  size_t expected_resident_bytes() const {
    return report.weights_bytes + report.session_weights_bytes + report.arena_bytes + input_bytes + output_bytes;
  }
};

// An SVG picture of the arenas: one panel per available algorithm, all on one byte scale;
// x = execution step, y = offset, one rectangle per buffer with a hover title.
std::string plan_svg(const std::string& model, int64_t batch, const std::vector<PlanColumn>& columns);

}  // namespace winfer::cli
