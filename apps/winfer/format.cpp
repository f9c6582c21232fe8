#include "apps/winfer/format.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>

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

std::vector<std::string> read_labels(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read labels file '" + path + "'";
    return {};
  }
  std::vector<std::string> labels;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  return labels;
}

int fail(const Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 1;
}

Tensor random_tensor(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::allocate(shape, shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain);
  std::mt19937_64 rng(seed);
  float* data = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = static_cast<float>(double(rng() >> 40) / double(1 << 23) - 1.0);
  return t;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace winfer::cli
