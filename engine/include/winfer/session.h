// Session: runs a Model on the CPU. Owns all activation memory and the per-session form of
// every layer (weights packed for the chosen convolution algorithm). One session runs one
// inference at a time; create one session per thread to run concurrently.
//
//   winfer::SessionOptions options;
//   options.conv_algorithm = "im2col";
//   auto session = winfer::Session::create(model.value(), options);
//   auto output = session.value()->run(input_nchw);   // Result<Tensor>, NCHW / [N, classes]
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "winfer/model.h"
#include "winfer/tensor.h"

namespace winfer {

struct SessionOptions {
  // Convolution algorithm for every non-depthwise convolution ("direct", "im2col").
  std::string conv_algorithm = "im2col";
  int threads = 1;
  // Batch size; 0 = the model's declared batch.
  int64_t batch = 0;
};

struct LayerTiming {
  std::string name;
  std::string type;
  std::string kernel;  // e.g. "im2col", "depthwise"
  double milliseconds = 0;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> create(std::shared_ptr<const Model> model,
                                                 const SessionOptions& options = {});
  ~Session();

  const Shape& input_shape() const;               // NCHW with the session's batch
  const std::vector<Shape>& output_shapes() const;
  // Input: the model's input shape (NCHW, or plain for non-image inputs), any layout.
  // Returns the first graph output (NCHW for rank 4, else plain).
  Result<Tensor> run(const Tensor& input);
  Result<std::vector<Tensor>> run_all(const Tensor& input);

  // Per-layer wall time of the last run (execution order).
  const std::vector<LayerTiming>& last_timings() const;
  // Bytes of activation memory and of the largest convolution workspace.
  size_t activation_bytes() const;
  size_t workspace_bytes() const;

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace winfer
