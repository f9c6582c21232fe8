// Fuzz target: the IDX reader (plain or gzip, through zlib) and the MNIST split built on it.
// The input is used as a split's image file next to a fixed one-label file, so any header that
// load_mnist_split accepts is also cut into images.
#include <cstdint>
#include <cstdlib>

#include "fuzz_util.h"
#include "winfer/idx_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool labels_written = [] {
    const uint8_t one_label[] = {0, 0, 8, 1, 0, 0, 0, 1, 7};
    winfer_fuzz::write_input("t10k-labels-idx1-ubyte", one_label, sizeof one_label);
    return true;
  }();
  (void)labels_written;
  const std::string path = winfer_fuzz::write_input("t10k-images-idx3-ubyte", data, size);
  // A limit of 16 MiB keeps each run small; the limit logic is the same at 1 GiB.
  auto array = winfer::read_idx(path, int64_t(1) << 24);
  winfer_fuzz::require_message(array.status());
  if (array.ok()) {
    // A zero dimension makes the array empty whatever the others say (they may be huge).
    int64_t product = 1;
    for (int64_t d : array.value().dims) {
      if (__builtin_mul_overflow(product, d, &product)) product = -1;
    }
    for (int64_t d : array.value().dims) product = d == 0 ? 0 : product;
    if (product != static_cast<int64_t>(array.value().data.size())) std::abort();
  }
  if (array.ok() && array.value().data.size() <= (size_t(1) << 20)) {
    auto split = winfer::load_mnist_split(winfer_fuzz::scratch_dir(), "test");
    winfer_fuzz::require_message(split.status());
    if (split.ok()) {
      for (int64_t i = 0; i < split.value().count; ++i) (void)split.value().image(i);
    }
  }
  return 0;
}
