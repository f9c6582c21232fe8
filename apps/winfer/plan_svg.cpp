// `winfer plan --svg FILE`: the arena of each algorithm as a picture. x is the execution step,
// y the offset in the arena (0 at the bottom), one rectangle per tensor or workspace. Every
// panel uses the same bytes-per-pixel scale so the algorithms compare at a glance; the dark
// line is the number of bytes alive at each step (its highest point is the lower bound).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "apps/winfer/format.h"
#include "apps/winfer/plan_report.h"

namespace winfer::cli {
namespace {

constexpr double kWidth = 1200, kLeft = 90, kRight = 20;
constexpr double kTallestPlot = 360;  // pixels for the largest arena
constexpr double kHeader = 34, kFooter = 30;
constexpr const char* kTensorColour = "#4e79a7";
constexpr const char* kInPlaceColour = "#76b7b2";
constexpr const char* kWorkspaceColour = "#f28e2b";

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Bytes covered by the buffers alive at each step (storage shared in place counted once).
std::vector<size_t> occupied_per_step(const MemoryReport& r) {
  std::vector<size_t> occupied(r.steps.size(), 0);
  for (size_t s = 0; s < occupied.size(); ++s) {
    std::vector<std::pair<size_t, size_t>> live;
    for (const MemoryBuffer& b : r.buffers) {
      const int step = static_cast<int>(s);
      // A concat slice lies inside its concat output's rectangle, alive whenever it is.
      if (b.bytes > 0 && b.slice_of.empty() && b.first_step <= step && step <= b.last_step) {
        live.emplace_back(b.offset, b.offset + b.bytes);
      }
    }
    std::sort(live.begin(), live.end());
    size_t cursor = 0;
    for (const auto& [begin, end] : live) {
      if (end > cursor) occupied[s] += end - std::max(begin, cursor);
      cursor = std::max(cursor, end);
    }
  }
  return occupied;
}

std::string buffer_title(const MemoryBuffer& b, const MemoryReport& r) {
  std::ostringstream t;
  t << b.name << ": " << human_bytes(double(b.bytes)) << " (" << b.bytes << " B) at offset " << b.offset << ", steps "
    << b.first_step << "-" << b.last_step;
  if (b.first_step < static_cast<int>(r.steps.size()) && b.last_step < static_cast<int>(r.steps.size())) {
    t << " (" << r.steps[b.first_step] << " .. " << r.steps[b.last_step] << ")";
  }
  if (!b.in_place_of.empty()) t << ", in place of " << b.in_place_of;
  std::string slices;
  for (const MemoryBuffer& other : r.buffers) {
    if (other.slice_of == b.name) slices += (slices.empty() ? "" : ", ") + other.name;
  }
  if (!slices.empty()) t << ", written in place by its inputs " << slices << " (concat without copies)";
  return t.str();
}

// One panel; `top` is its upper edge, `scale` pixels per byte. Returns its height.
double draw_panel(std::ostringstream& svg, const PlanColumn& c, double top, double scale) {
  const MemoryReport& r = c.report;
  const double plot_height = std::max(40.0, double(r.arena_bytes) * scale);
  const double bottom = top + kHeader + plot_height;
  const double plot_width = kWidth - kLeft - kRight;
  const size_t steps = std::max<size_t>(1, r.steps.size());
  const auto x = [&](double step) { return kLeft + step * plot_width / double(steps); };
  const auto y = [&](double bytes) { return bottom - bytes * scale; };

  svg << "<text x=\"" << kLeft << "\" y=\"" << top + 22 << "\" font-weight=\"bold\">" << escape(c.conv) << ": arena "
      << human_bytes(double(r.arena_bytes)) << ", lower bound " << human_bytes(double(r.activations_lower_bound_bytes))
      << ", no reuse " << human_bytes(double(r.activations_sum_bytes)) << ", largest workspace "
      << human_bytes(double(r.max_workspace_bytes)) << "</text>\n";
  svg << "<rect x=\"" << kLeft << "\" y=\"" << fixed(y(double(r.arena_bytes))) << "\" width=\"" << plot_width
      << "\" height=\"" << fixed(double(r.arena_bytes) * scale) << "\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n";
  for (const MemoryBuffer& b : r.buffers) {
    if (b.bytes == 0 || !b.slice_of.empty()) continue;  // a concat slice: inside its output's rectangle
    const char* colour = b.workspace ? kWorkspaceColour : b.in_place_of.empty() ? kTensorColour : kInPlaceColour;
    const double height = std::max(0.5, double(b.bytes) * scale);
    svg << "<rect x=\"" << fixed(x(b.first_step)) << "\" y=\"" << fixed(y(double(b.offset + b.bytes))) << "\" width=\""
        << fixed(std::max(1.0, x(b.last_step + 1) - x(b.first_step))) << "\" height=\"" << fixed(height) << "\" fill=\""
        << colour << "\" stroke=\"#fff\" stroke-width=\"0.3\"><title>" << escape(buffer_title(b, r))
        << "</title></rect>\n";
  }
  const std::vector<size_t> occupied = occupied_per_step(r);
  svg << "<polyline fill=\"none\" stroke=\"#222\" stroke-width=\"1.2\" points=\"";
  for (size_t s = 0; s < occupied.size(); ++s) {
    svg << fixed(x(double(s))) << "," << fixed(y(double(occupied[s]))) << " " << fixed(x(double(s + 1))) << ","
        << fixed(y(double(occupied[s]))) << " ";
  }
  svg << "\"><title>bytes alive per step</title></polyline>\n";
  // Axes: offsets 0 and the arena size on the left, steps below.
  svg << "<text x=\"" << kLeft - 6 << "\" y=\"" << bottom << "\" text-anchor=\"end\">0</text>\n";
  svg << "<text x=\"" << kLeft - 6 << "\" y=\"" << fixed(y(double(r.arena_bytes)) + 10) << "\" text-anchor=\"end\">"
      << human_bytes(double(r.arena_bytes)) << "</text>\n";
  svg << "<text x=\"" << kLeft << "\" y=\"" << bottom + 16 << "\">step 0</text>\n";
  svg << "<text x=\"" << kWidth - kRight << "\" y=\"" << bottom + 16 << "\" text-anchor=\"end\">step " << steps - 1
      << " (execution order)</text>\n";
  return kHeader + plot_height + kFooter;
}

}  // namespace

std::string plan_svg(const std::string& model, int64_t batch, const std::vector<PlanColumn>& columns) {
  size_t largest = 1;
  for (const PlanColumn& c : columns) {
    if (c.available) largest = std::max(largest, c.report.arena_bytes);
  }
  const double scale = kTallestPlot / double(largest);
  std::ostringstream body;
  double height = 50;
  body << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"15\" font-weight=\"bold\">" << escape(model) << ", batch "
       << batch << ": memory arena per convolution algorithm (x: step, y: offset)</text>\n";
  body << "<text x=\"" << kLeft << "\" y=\"38\"><tspan fill=\"" << kTensorColour
       << "\">&#9632; tensor</tspan>  <tspan fill=\"" << kInPlaceColour
       << "\">&#9632; tensor computed in place</tspan>  <tspan fill=\"" << kWorkspaceColour
       << "\">&#9632; convolution workspace</tspan>  <tspan>&#8212; bytes alive</tspan>  (hover for names)</text>\n";
  for (const PlanColumn& c : columns) {
    if (!c.available) {
      body << "<text x=\"" << kLeft << "\" y=\"" << height + 20 << "\">" << escape(c.conv)
           << ": not available: " << escape(c.error) << "</text>\n";
      height += 30;
      continue;
    }
    height += draw_panel(body, c, height, scale);
  }
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << fixed(height)
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n<title>" << escape(model) << " memory plan</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      << body.str() << "</svg>\n";
  return svg.str();
}

}  // namespace winfer::cli
