// Helpers for the core tests: a private temporary directory per test, raw byte files, random
// tensors and little-endian encodings used to build (bad) files byte by byte.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer_test {

// A fresh directory under the build folder, removed with its contents at the end of the test.
// The process id keeps tests that ctest runs in parallel (one process each) apart.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::path(WINFER_BINARY_DIR) / "test_tmp" /
            ("core-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  // A fresh inode rather than truncating: ext4 flushes a truncated file's old data to disk,
  // which made the fuzz loops below take seconds.
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::string le_bytes(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

template <typename T>
std::string raw_bytes(const T* values, size_t count) {
  return std::string(reinterpret_cast<const char*>(values), count * sizeof(T));
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Uniform values in [-2, 2) from a fixed seed.
inline winfer::Tensor random_tensor(const winfer::Shape& shape, uint32_t seed,
                                    winfer::Layout layout = winfer::Layout::kPlain) {
  winfer::Tensor t = winfer::Tensor::allocate(shape, layout);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = dist(gen);
  return t;
}

inline bool same_bits(const winfer::Tensor& a, const winfer::Tensor& b) {
  return a.shape() == b.shape() && (a.bytes() == 0 || std::memcmp(a.data(), b.data(), a.bytes()) == 0);
}

inline bool python_has_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }

}  // namespace winfer_test
