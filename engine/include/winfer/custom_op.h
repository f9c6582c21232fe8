// Custom operators: an embedder's own layer types, usable in the model YAML like the built-in
// ones (`op: my_op`), as ncnn's register_custom_layer allows. C++ only, CPU only.
//
//   class HardSwish : public winfer::CustomOp { ... };
//   winfer::CustomOpDefinition def;
//   def.type = "hardswish";
//   def.create = [](const winfer::CustomOpAttrs& attrs) -> winfer::Result<std::unique_ptr<winfer::CustomOp>> {
//     double scale = 1;
//     winfer::Status s = attrs.get_float("scale", &scale, 1.0);   // `scale: 0.5` in the YAML
//     if (!s.ok()) return s;
//     return std::unique_ptr<winfer::CustomOp>(new HardSwish(scale));
//   };
//   winfer::Status registered = winfer::register_custom_op(def);   // before loading the model
//
// Registration is process-wide and permanent, and thread-safe (models may load on other threads
// meanwhile). A type that a built-in operator or an earlier registration has is refused.
//
// Layout: tensors reach run() in the layout the definition asks for. The default, kNCHW, is the
// one the rest of the API uses (PyTorch's): rank-4 inputs are converted from the CPU backend's
// internal NHWC into a scratch buffer of the session's arena before run(), and rank-4 outputs
// back after it (one pass over each tensor). kNHWC skips both copies: run() then reads and
// writes the arena directly, channels last (`data[((n * H + h) * W + w) * C + c]`); shapes
// stay logical NCHW either way. Tensors of other ranks are plain row-major in both.
//
// Errors: the loader names the file, line and layer around whatever the factory or
// infer_shapes returns ("model.yaml:7: layer 'hs' (hardswish): attribute 'scale': ..."), and
// a key of the layer that the factory never read is reported as an unknown attribute, as for
// built-in ops. A session on a CUDA device refuses a model with a custom op ("operator 'x' has
// no CUDA kernel").
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "winfer/shape.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {

class Attrs;

// A layer's attributes (the keys of its YAML entry other than name, op, input(s), params),
// read by name. Valid only during the CustomOpDefinition::create call that receives it.
class CustomOpAttrs {
 public:
  explicit CustomOpAttrs(const Attrs& attrs) : attrs_(&attrs) {}

  bool has(const std::string& key) const;
  // Required: kNotFound "missing attribute 'key'" when absent.
  Status get_int(const std::string& key, int64_t* out) const;
  // Optional: `fallback` when absent. All fail with "attribute 'key': expected ..., got ..."
  // on a value of the wrong kind.
  Status get_int(const std::string& key, int64_t* out, int64_t fallback) const;
  Status get_float(const std::string& key, double* out, double fallback) const;
  Status get_bool(const std::string& key, bool* out, bool fallback) const;
  Status get_string(const std::string& key, std::string* out, const std::string& fallback) const;
  // Required: an int, or a flat list of ints (`sizes: [3, 5]`) of one of the allowed lengths
  // ({2, 4}: "expected an integer or a list of 2 integers or a list of 4 integers" otherwise).
  Status get_ints(const std::string& key, std::vector<int64_t>* out, const std::vector<size_t>& allowed_sizes) const;

 private:
  const Attrs* attrs_;
};

// What run() is given besides its tensors.
struct CustomOpContext {
  int threads = 1;  // SessionOptions::threads: the parallelism the session allows this layer
};

// One layer of a custom op, created once per layer when the model loads and shared by every
// session of that model: run() is const and may be called from several threads at once (one
// per session), so it must not change the object.
class CustomOp {
 public:
  virtual ~CustomOp() = default;
  // Output shapes (logical NCHW for rank 4) from input shapes, for any batch a session asks
  // for; one per declared output. Check the inputs here and say what was expected: run()
  // cannot fail.
  virtual Status infer_shapes(const std::vector<Shape>& inputs, std::vector<Shape>* outputs) const = 0;
  // Computes the outputs (allocated, in the definition's layout, shapes as infer_shapes said)
  // from the inputs. Must not throw, and must not keep the pointers: they are the session's
  // scratch memory.
  virtual void run(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                   const CustomOpContext& context) const = 0;
  // Multiply-adds x 2, for `winfer info` and Model::layers(); 0 when unknown.
  virtual int64_t flops(const std::vector<Shape>& /*inputs*/, const std::vector<Shape>& /*outputs*/) const { return 0; }
};

struct CustomOpDefinition {
  // The `op:` name in the YAML: letters, digits and '_' (not a built-in op's).
  std::string type;
  // Makes the layer's op from its attributes; fails with a Status naming a bad attribute.
  std::function<Result<std::unique_ptr<CustomOp>>(const CustomOpAttrs&)> create;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number from min_inputs
  int num_outputs = 1;
  // kNCHW (default) or kNHWC; see the layout note at the top of this header.
  Layout layout = Layout::kNCHW;
};

// Adds the op to the process's operator registry. kInvalidArgument when the type is empty or
// not a plain identifier, is a built-in op's or was registered already, when create is empty,
// or when the input/output counts or the layout make no sense.
Status register_custom_op(const CustomOpDefinition& definition);

}  // namespace winfer
