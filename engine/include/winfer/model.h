// Model: a network loaded from a YAML description plus weights, validated, with shapes inferred
// and weights prepared (batch norm folded, activations fused). Immutable once loaded and safe
// to share between threads; run it through a winfer::Session.
//
//   auto model = winfer::Model::load("models/examples/tiny_net.yaml");
//   if (!model.ok()) { std::cerr << model.status().message() << "\n"; return 1; }
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "winfer/shape.h"
#include "winfer/status.h"

namespace winfer {

class Graph;
class ModelDeviceStates;

struct LoadOptions {
  // Overrides the `weights:` file named in the YAML.
  std::string weights_path;
  // Fills every parameter deterministically from this seed instead of reading weights
  // (He-style scales for conv/linear weights, batch-norm statistics near 0 and 1).
  std::optional<uint64_t> random_weights_seed;
  // Fold batch norm into convolutions and fuse activations (off only to test the fusion).
  bool fuse = true;
  // When the model names no weights at all, load only the structure (shapes, FLOPs) instead of
  // failing; such a model cannot be run. Used by `winfer info`.
  bool allow_missing_weights = false;
  // Packs the convolution weights at load into the layout of this CPU algorithm (as a session
  // with conv_algorithm = pack_for would; depthwise layers into "depthwise"'s), in place where
  // the layout has the same size, and drops the original OIHW copy: the model holds its weights
  // once and every session with that algorithm shares them. Sessions with another algorithm,
  // or on CUDA, unpack the OIHW weights when they compile and pack their own copy. Empty: keep
  // the OIHW weights and let every session pack its own copy (twice the weights' memory with
  // one session).
  std::string pack_for = "im2win";
  // A model file is trusted like a script: its `weights:` and `labels:` may name any file the
  // process can read (absolute paths and `..` included), and a label file's lines are printed.
  // To load model files from elsewhere, set this to a folder: every file the model names must
  // then lie inside it (after `..` and symlinks are resolved), or loading fails naming the path.
  // Files the caller gives (weights_path) are not checked. Empty: no confinement.
  std::string confine_to;
  // How a quantized model's INT8 layers run (docs/MODEL_FORMAT.md, "How INT8 layers run"):
  //   kKernels    on the INT8 kernels, u8 tensors between them (the default);
  //   kSimulated  FP32 kernels between roundings to the u8 grids: the accuracy of INT8 at FP32
  //               speed, to compare with the kernels or to isolate a kernel problem;
  //   kFloat32    the dequantized s8 weights on the FP32 kernels, float32 tensors, no rounding:
  //               the same network in FP32, for memory and speed comparisons (winfer plan
  //               --compare-fp32).
  enum class Int8Mode { kKernels, kSimulated, kFloat32 };
  Int8Mode int8_mode = Int8Mode::kKernels;
};

// Image preprocessing declared by the model (used by `winfer classify`).
struct Preprocess {
  int64_t resize = 0;  // shorter side; 0 = none
  int64_t crop = 0;    // center crop; 0 = none
  std::vector<float> mean, std;
  std::string channel_order = "RGB";  // RGB, BGR or GRAY
  bool present = false;
};

struct LayerInfo {
  std::string name;
  std::string type;
  std::vector<std::string> inputs, outputs;
  std::vector<Shape> output_shapes;
  std::vector<std::string> fused;  // names of the layers folded into this one
  int64_t flops = 0;
  int64_t params = 0;
  // Quantized models (docs/MODEL_FORMAT.md, "Quantized models"): "int8" (on the INT8 kernels),
  // "int8 (simulated)" or "fp32"
  // for conv2d/linear layers; empty otherwise, for every layer of an FP32 model and for a
  // structure-only load (LoadOptions::allow_missing_weights without weights).
  std::string precision;
};

// The largest model description (YAML) that Model::load and load_from_memory take, checked
// before parsing; its YAML nodes are bounded too, so loading holds at most ~130 MB of parse tree
// whatever the text (docs/ERRORS.md, "Limits").
constexpr uint64_t kMaxModelTextBytes = uint64_t(16) << 20;  // 16 MiB

class Model {
 public:
  static Result<std::shared_ptr<const Model>> load(const std::string& yaml_path, const LoadOptions& options = {});
  // The same from memory: `yaml_text` is the model description; `weights` (safetensors bytes,
  // copied, so the caller may free them on return; null with size 0 for none) take the place
  // of the YAML's `weights:` file. `name` stands for the file name in messages and path();
  // relative `weights:`/`labels:` paths in the YAML resolve against the current directory.
  static Result<std::shared_ptr<const Model>> load_from_memory(const std::string& yaml_text,
                                                               const void* weights = nullptr, size_t weights_size = 0,
                                                               const LoadOptions& options = {},
                                                               const std::string& name = "<memory>");
  ~Model();

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  const std::string& input_name() const { return input_name_; }
  const Shape& input_shape() const { return input_shape_; }  // NCHW, declared batch
  // Per dim of the input: true when a session cannot run the model at another size there
  // (SessionOptions::input_shape). A model from YAML fixes dim 1 (the channels of [N,C,H,W],
  // the features of [N,F]) and leaves the batch and the spatial dims free; an ONNX model fixes
  // the dims its input gives as numbers and leaves its symbolic dims free.
  std::vector<bool> input_dim_fixed() const;
  // The largest input dim a session takes (SessionOptions::input_shape, batch).
  static constexpr int64_t kMaxInputDim = int64_t(1) << 24;
  // Ok when a session may be made for input shape `shape`: the rank of input_shape(), every
  // dim in 1..kMaxInputDim, the fixed dims (input_dim_fixed) as declared. Else an error naming
  // the model file, the shape and the dim, e.g. "x.yaml: input shape [2,4,160,224]: dim 1
  // (channels) is fixed at 3 by the model". Whether every layer admits the shape is found by
  // Session::create (its error names the layer).
  Status check_input_shape(const Shape& shape) const;
  std::vector<std::string> output_names() const;
  std::vector<Shape> output_shapes() const;
  const std::string& labels_path() const { return labels_path_; }  // resolved; "" if none
  // The class names of the `labels:` file, one per line (a trailing '\r' dropped); an empty
  // list when the model names none. The file is opened like every input (a regular file of at
  // most 16 MiB, docs/ERRORS.md "Files"); a line holding a NUL or another control byte is an
  // error: a labels file is text.
  Result<std::vector<std::string>> labels() const;
  const Preprocess& preprocess() const { return preprocess_; }
  // Where the weights came from: a file path, "memory" (load_from_memory), "inline",
  // "random(seed=N)" or "none" (then the model was loaded with allow_missing_weights and
  // cannot run).
  const std::string& weights_source() const { return weights_source_; }
  // True when loaded with allow_missing_weights and no weights were found: not runnable.
  bool structure_only() const { return structure_only_; }
  // True for a model file with a `quantization:` block (INT8 layers).
  bool quantized() const { return quantized_; }

  std::vector<LayerInfo> layers() const;  // after fusion, in execution order
  int64_t total_flops() const;
  int64_t total_params() const;
  // Bytes of the parameters the model holds after loading and fusion (batch norm folded into
  // the convolutions): the weights "as loaded" of `winfer plan`.
  size_t weight_bytes() const;

  const Graph& graph() const { return *graph_; }  // for Session; internal type
  // What device backends keep per model, e.g. weights uploaded to a GPU and shared by the
  // model's sessions there (internal type, engine/src/device_backend.h). The model's own data
  // never changes; these states only fill up, under their own lock.
  ModelDeviceStates& device_states() const { return *device_states_; }

 private:
  friend class ModelLoader;
  Model();
  std::string name_, path_, input_name_, labels_path_, weights_source_;
  Shape input_shape_;
  // Per input dim, set by a loader that knows which dims are fixed (ONNX); empty: the rule of
  // input_dim_fixed().
  std::vector<bool> input_dim_fixed_;
  bool structure_only_ = false;
  bool quantized_ = false;
  Preprocess preprocess_;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<ModelDeviceStates> device_states_;
};

}  // namespace winfer
