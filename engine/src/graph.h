// Graph: named tensors and nodes in topological order. Built by the model loader, rewritten by
// the fusion pass, then immutable and shared by every Session of the Model.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/src/op.h"

namespace winfer {

struct GraphTensor {
  std::string name;
  Shape shape;                 // for the model's declared batch
  int producer = -1;           // node index; -1 for the graph input
  std::vector<int> consumers;  // node indices (a node reading it twice appears twice)
  // u8 between the INT8 layers of a quantized model (quant_model.h); the graph's input and
  // outputs are always float32.
  DType dtype = DType::kFloat32;
};

struct GraphNode {
  std::string name;
  std::string type;
  std::unique_ptr<Op> op;
  std::vector<int> inputs;   // tensor indices
  std::vector<int> outputs;  // tensor indices
  std::string param_prefix;  // parameters are read as param_prefix + "." + param
  int line = 0;              // line of the layer in the model file (0 if unknown)

  // "model.yaml:12: layer 'conv1' (conv2d)", the prefix of every error about this node.
  std::string context(const std::string& file) const;
};

class Graph {
 public:
  std::vector<GraphTensor> tensors;
  std::vector<GraphNode> nodes;
  int input = -1;
  std::vector<int> outputs;

  int find_tensor(const std::string& name) const;  // -1 if absent
  // Adds a tensor; fails if the name is taken.
  Result<int> add_tensor(const std::string& name);

  // Reorders nodes so that every node comes after the producers of its inputs (stable: keeps
  // file order when possible). Fails naming the nodes on a cycle.
  Status sort_topologically();
  // Recomputes producer/consumer links from the nodes' inputs/outputs.
  void link();
  // Output shapes of every tensor for a given graph input shape (any batch).
  Status infer_shapes(const Shape& input_shape, std::vector<Shape>* shapes, const std::string& file) const;
  // Drops tensors that nothing produces or reads (after fusion) and renumbers.
  void remove_dead_tensors();

 private:
  std::map<std::string, int> index_;
};

}  // namespace winfer
