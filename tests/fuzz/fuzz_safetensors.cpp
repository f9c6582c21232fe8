// Fuzz target: the safetensors reader. Whatever open() accepts must describe tensors that lie
// inside the mapping with exactly numel x dtype-size bytes; every byte handed out is read.
#include <cstdint>
#include <cstdlib>

#include "fuzz_util.h"
#include "winfer/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = winfer_fuzz::write_input("weights.safetensors", data, size);
  auto file = winfer::SafeTensorsFile::open(path);
  winfer_fuzz::require_message(file.status());
  if (!file.ok()) return 0;
  unsigned checksum = 0;
  for (const winfer::SafeTensor& t : file.value()->tensors()) {
    if (uint64_t(t.shape.numel()) * winfer::safetensors_dtype_size(t.dtype) != t.byte_size) std::abort();
    if (file.value()->find(t.name) != &t) std::abort();
    const auto* bytes = static_cast<const unsigned char*>(t.data);
    for (size_t i = 0; i < t.byte_size; ++i) checksum += bytes[i];
  }
  for (const auto& kv : file.value()->metadata()) checksum += static_cast<unsigned>(kv.first.size() + kv.second.size());
  volatile unsigned sink = checksum;
  (void)sink;
  return 0;
}
