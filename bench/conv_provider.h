// What `winfer bench` times: a convolution implementation behind one small interface, so that
// the engine's own algorithms and the peer libraries (oneDNN, XNNPACK) run through exactly the
// same timing, verification and reporting code.
//
// prepare() does everything that happens once per layer in an inference engine (weight
// packing/reordering, primitive creation, workspace allocation); run() is the per-inference
// call, and is the only thing timed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/conv_params.h"
#include "winfer/status.h"

namespace winfer::bench {

// One convolution with its data, all channels-last like the engine's activations:
//   input  [N][H][W][C], output [N][Ho][Wo][Co]; weight OIHW [Co][C/g][Kh][Kw]; bias [Co] or null.
struct ConvProblem {
  ConvParams params;
  Activation activation = Activation::kNone;
  const float* input_nhwc = nullptr;
  const float* weight_oihw = nullptr;
  const float* bias = nullptr;
};

class PreparedConv {
 public:
  virtual ~PreparedConv() = default;
  // The timed call: output = act(conv(input) + bias).
  virtual void run() = 0;
  // NHWC result of the last run().
  virtual const float* output() const = 0;
  // Scratch memory and the implementation's own weight copy, in bytes; nullopt when the
  // library does not expose it.
  virtual std::optional<size_t> workspace_bytes() const = 0;
  virtual std::optional<size_t> packed_weight_bytes() const = 0;
  // What the library picked, e.g. oneDNN's "brg:avx512_core"; may be empty.
  virtual std::string note() const { return {}; }
};

class ConvProvider {
 public:
  virtual ~ConvProvider() = default;
  virtual std::string name() const = 0;  // the --conv name: "im2col", "onednn", ...
  virtual bool is_peer() const = 0;      // another library, not one of the engine's algorithms
  virtual bool supports(const ConvParams& p) const = 0;
  // Keeps pointers into `problem` (the input); the caller keeps the data alive.
  virtual Result<std::unique_ptr<PreparedConv>> prepare(const ConvProblem& problem, int threads) const = 0;
  // A peer's library version and what it detected (the report's "peers" line); may be empty.
  virtual std::string description() const { return {}; }
};

// Heap memory aligned to 64 bytes (a cache line, and what ConvAlgorithm::pack_weights expects).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes)
      : bytes_(bytes), data_(bytes == 0 ? nullptr : std::aligned_alloc(64, (bytes + 63) / 64 * 64)) {}
  void* data() const { return data_.get(); }
  float* floats() const { return static_cast<float*>(data_.get()); }
  size_t bytes() const { return bytes_; }
  bool allocated() const { return bytes_ == 0 || data_ != nullptr; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  size_t bytes_ = 0;
  std::unique_ptr<void, Free> data_;
};

// The output buffer of a PreparedConv, [N][Ho][Wo][Co] floats, filled with NaN: an output
// element an implementation forgets to write then fails the check against `direct`, even
// where the right value is 0 (as after a ReLU) and fresh memory would happen to hold zeros.
inline AlignedBuffer nan_output_buffer(const ConvParams& p) {
  const size_t floats = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
  AlignedBuffer buffer(floats * sizeof(float));
  if (buffer.floats() != nullptr) std::fill(buffer.floats(), buffer.floats() + floats, std::nanf(""));
  return buffer;
}

// The engine's registered algorithms (kernels/cpu/conv_registry.cpp), in registry order.
std::vector<const ConvProvider*> engine_providers();

}  // namespace winfer::bench
