// IDX files, the format of MNIST and Fashion-MNIST, and the image/label splits stored in them.
//
//   auto test = winfer::load_mnist_split("/usr/share/datasets/fashion-mnist", "test");
//   // test->count == 10000, test->image(0) is a 28x28 gray winfer::Image, test->labels[0] its class
//
// An IDX file is: two zero bytes, a type byte (0x08 = unsigned bytes, the only type read here),
// the number of dimensions, each dimension as a big-endian uint32, then the data in C order.
// Files may be gzip-compressed (read through zlib) or plain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "winfer/image.h"
#include "winfer/status.h"

namespace winfer {

// Where Debian's dataset-fashion-mnist package installs the four .gz files.
constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // product(dims) bytes
};

// Reads an unsigned-byte IDX file, gzip-compressed or not. Refuses other element types, a
// header that promises more than `max_bytes` of data (a corrupt header cannot make it allocate
// gigabytes), truncated data and corrupt gzip streams, naming the file.
Result<IdxArray> read_idx(const std::string& path, int64_t max_bytes = int64_t(1) << 30);

// Gray images and their class labels, in file order.
struct ImageDataset {
  int64_t count = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // count * height * width
  std::vector<uint8_t> labels;  // count

  Image image(int64_t index) const;
};

// A split of a folder in MNIST's layout: `split` "train" reads train-images-idx3-ubyte and
// train-labels-idx1-ubyte, "test" reads t10k-*; each with or without a .gz suffix.
Result<ImageDataset> load_mnist_split(const std::string& dir, const std::string& split);

}  // namespace winfer
