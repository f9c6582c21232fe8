#include "apps/winfer/format.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <new>
#include <numeric>
#include <random>

#include "winfer/session.h"

namespace winfer::cli {

std::string human_count(double value) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (value >= 1000 && u < 4) {
    value /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%s" : "%.2f%s", value, units[u]);
  return buf;
}

std::string batch_runs_note(const MemoryReport& report, int64_t batch) {
  if (report.images_per_run <= 0 || report.images_per_run >= batch) return "";
  return " (runs of " + std::to_string(report.images_per_run) + ", " + std::to_string(report.lanes) + " side by side)";
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

int fail(const Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 1;
}

Result<Tensor> allocate_checked(const Shape& shape, const std::string& what) {
  const size_t bytes = static_cast<size_t>(shape.numel()) * sizeof(float);
  WINFER_RETURN_IF_ERROR(check_host_memory_for(what + " " + shape.to_string(), bytes));
  try {
    return Tensor::allocate(shape, shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain);
  } catch (const std::bad_alloc&) {  // MemAvailable said yes, the allocator no (ulimit -v, fragmentation)
    return out_of_memory(what + " " + shape.to_string() + ": cannot allocate " + std::to_string(bytes) + " bytes");
  }
}

Result<Tensor> random_tensor(const Shape& shape, uint64_t seed) {
  WINFER_ASSIGN_OR_RETURN(Tensor t, allocate_checked(shape, "the random input"));
  std::mt19937_64 rng(seed);
  float* data = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = static_cast<float>(double(rng() >> 40) / double(1 << 23) - 1.0);
  return t;
}

std::string pack_for(const std::string& device, const std::string& conv) {
  const std::vector<std::string> cpu = conv_algorithm_names("cpu");
  if ((device.empty() || device == "cpu") && std::find(cpu.begin(), cpu.end(), conv) != cpu.end()) return conv;
  return LoadOptions().pack_for;
}

Status check_autotune_cache_flag(const std::string& cache, const std::vector<std::string>& convs) {
  if (cache.empty() || std::find(convs.begin(), convs.end(), "auto") != convs.end()) return Status::Ok();
  std::string given;
  for (const std::string& c : convs) given += (given.empty() ? "" : ",") + c;
  return invalid_argument(
      "--autotune-cache keeps the timings of --conv auto (per layer, the fastest algorithm measured "
      "when the session is made); the algorithm here is '" +
      given + "'");
}

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::vector<std::string> model_labels(const Model& model, int64_t classes) {
  if (model.labels_path().empty()) return {};
  auto read = model.labels();
  if (!read.ok()) {
    std::cerr << "warning: " << read.status().message() << "; printing class indices\n";
    return {};
  }
  std::vector<std::string> labels = std::move(read).value();
  if (static_cast<int64_t>(labels.size()) != classes) {
    std::cerr << "warning: " << model.labels_path() << " has " << labels.size() << " labels for " << classes
              << " classes; printing class indices\n";
    return {};
  }
  return labels;
}

std::string class_label(const std::vector<std::string>& labels, int64_t index) {
  return labels.empty() ? "class " + std::to_string(index) : labels[static_cast<size_t>(index)];
}

std::vector<double> class_probabilities(const Model& model, const float* row, int64_t classes) {
  std::vector<double> p(row, row + classes);
  const bool already_probabilities = !model.layers().empty() && model.layers().back().type == "softmax";
  if (!already_probabilities && classes > 0) {  // softmax of the logits, for display
    const double mx = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double& v : p) sum += (v = std::exp(v - mx));
    for (double& v : p) v /= sum;
  }
  return p;
}

std::vector<ClassScore> top_classes(const std::vector<double>& probabilities, int64_t k) {
  std::vector<int64_t> order(probabilities.size());
  std::iota(order.begin(), order.end(), 0);
  k = std::min<int64_t>(k, static_cast<int64_t>(order.size()));
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
    return probabilities[a] > probabilities[b] || (probabilities[a] == probabilities[b] && a < b);
  });
  std::vector<ClassScore> top;
  for (int64_t i = 0; i < k; ++i) top.push_back({order[i], probabilities[order[i]]});
  return top;
}

int64_t argmax(const float* row, int64_t classes) {
  return static_cast<int64_t>(std::max_element(row, row + classes) - row);
}

void print_class_scores(const std::vector<ClassScore>& scores, const std::vector<std::string>& labels) {
  for (size_t i = 0; i < scores.size(); ++i) {
    std::printf("%2zu  %.4f  %s\n", i + 1, scores[i].probability, class_label(labels, scores[i].index).c_str());
  }
}

ProgressBar::ProgressBar(int64_t total, std::string unit, bool wanted)
    : total_(total), unit_(std::move(unit)), enabled_(wanted && total > 0 && ::isatty(STDERR_FILENO)) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

void ProgressBar::update(int64_t done) {
  done_ = done;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  // Redrawing a terminal line costs more than a small batch: at most ten times a second.
  if (visible_ && done_ < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw();
}

void ProgressBar::draw() {
  constexpr int kWidth = 30;
  const double fraction = total_ > 0 ? double(done_) / double(total_) : 1.0;
  const int filled = static_cast<int>(fraction * kWidth);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r[%s%s] %lld/%lld %s  %.0f %s/s ", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), static_cast<long long>(done_), static_cast<long long>(total_),
               unit_.c_str(), seconds > 0 ? double(done_) / seconds : 0.0, unit_.c_str());
  std::fflush(stderr);
  visible_ = true;
}

void ProgressBar::clear() {
  if (!visible_) return;
  std::fprintf(stderr, "\r\033[K");  // carriage return, erase to the end of the line
  std::fflush(stderr);
  visible_ = false;
}

void ProgressBar::finish() {
  if (!enabled_) return;
  clear();
  enabled_ = false;
}

}  // namespace winfer::cli
