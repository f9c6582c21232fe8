// L2 size detection (cpu_caches.h).
#include "kernels/cpu/cpu_caches.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <string>

namespace winfer {
namespace cpu {
namespace {

constexpr int64_t kMinL2Bytes = 64 << 10;
constexpr int64_t kMaxL2Bytes = int64_t{64} << 20;
constexpr int64_t kFallbackL2Bytes = 1 << 20;

bool plausible(int64_t bytes) { return bytes >= kMinL2Bytes && bytes <= kMaxL2Bytes; }

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// The first level-2 data or unified cache that sysfs lists for cpu0 ("512K"), or -1.
int64_t sysfs_l2_bytes() {
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 8; ++i) {
    const std::string index = dir + std::to_string(i) + "/";
    if (read_line(index + "level") != "2") continue;
    if (read_line(index + "type") == "Instruction") continue;
    return parse_cache_size(read_line(index + "size").c_str());
  }
  return -1;
}

int64_t machine_l2_bytes() {
  if (const char* env = std::getenv("WINFER_L2_BYTES")) {
    const int64_t bytes = parse_cache_size(env);
    if (plausible(bytes)) return bytes;
  }
#ifdef _SC_LEVEL2_CACHE_SIZE
  const long sc = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (plausible(sc)) return sc;
#endif
  const int64_t fs = sysfs_l2_bytes();
  return plausible(fs) ? fs : kFallbackL2Bytes;
}

std::atomic<int64_t>& l2_override() {
  static std::atomic<int64_t> bytes{0};
  return bytes;
}

}  // namespace

int64_t parse_cache_size(const char* text) {
  if (text == nullptr) return -1;
  const char* s = text;
  if (!std::isdigit(static_cast<unsigned char>(*s))) return -1;
  int64_t value = 0;
  for (; std::isdigit(static_cast<unsigned char>(*s)); ++s) {
    value = value * 10 + (*s - '0');
    if (value > kMaxL2Bytes) return -1;  // far beyond any L2; also keeps the product in range
  }
  int64_t unit = 1;
  if (*s == 'K' || *s == 'k') {
    unit = 1 << 10;
    ++s;
  } else if (*s == 'M' || *s == 'm') {
    unit = 1 << 20;
    ++s;
  }
  if (unit > 1 && (s[0] == 'i' && s[1] == 'B')) s += 2;
  if (*s != '\0') return -1;
  return value * unit;
}

int64_t l2_bytes() {
  const int64_t forced = l2_override().load(std::memory_order_relaxed);
  if (forced > 0) return forced;
  static const int64_t bytes = machine_l2_bytes();
  return bytes;
}

int64_t l2_weight_bytes() { return l2_bytes() / 4 * 3; }

void set_l2_bytes_for_testing(int64_t bytes) { l2_override().store(bytes > 0 ? bytes : 0); }

}  // namespace cpu
}  // namespace winfer
