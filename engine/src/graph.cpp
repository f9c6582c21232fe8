#include "engine/src/graph.h"

#include <algorithm>
#include <queue>

namespace winfer {

std::string GraphNode::context(const std::string& file) const {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line);
  return (where.empty() ? std::string() : where + ": ") + "layer '" + name + "' (" + type + ")";
}

int Graph::find_tensor(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

Result<int> Graph::add_tensor(const std::string& name) {
  if (index_.count(name)) return invalid_argument("tensor name '" + name + "' is defined twice");
  const int id = static_cast<int>(tensors.size());
  tensors.push_back(GraphTensor{name, Shape(), -1, {}});
  index_[name] = id;
  return id;
}

void Graph::link() {
  for (GraphTensor& t : tensors) {
    t.producer = -1;
    t.consumers.clear();
  }
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int t : nodes[n].inputs) tensors[t].consumers.push_back(static_cast<int>(n));
    for (int t : nodes[n].outputs) tensors[t].producer = static_cast<int>(n);
  }
}

Status Graph::sort_topologically() {
  link();
  // Kahn's algorithm; a min-heap on the original index keeps the file order where possible.
  const size_t count = nodes.size();
  std::vector<int> pending(count, 0);
  for (size_t n = 0; n < count; ++n) {
    for (int t : nodes[n].inputs) pending[n] += tensors[t].producer >= 0 ? 1 : 0;
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t n = 0; n < count; ++n) {
    if (pending[n] == 0) ready.push(static_cast<int>(n));
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int t : nodes[n].outputs) {
      for (int consumer : tensors[t].consumers) {
        if (--pending[consumer] == 0) ready.push(consumer);
      }
    }
  }
  if (order.size() != count) {
    std::string cycle;
    for (size_t n = 0; n < count; ++n) {
      if (pending[n] > 0) cycle += (cycle.empty() ? "'" : ", '") + nodes[n].name + "'";
    }
    return invalid_argument("the graph has a cycle through layers " + cycle);
  }
  std::vector<GraphNode> sorted;
  sorted.reserve(count);
  for (int n : order) sorted.push_back(std::move(nodes[n]));
  nodes = std::move(sorted);
  link();
  return Status::Ok();
}

Status Graph::infer_shapes(const Shape& input_shape, std::vector<Shape>* shapes, const std::string& file) const {
  shapes->assign(tensors.size(), Shape());
  (*shapes)[input] = input_shape;
  for (const GraphNode& node : nodes) {
    std::vector<Shape> in, out;
    for (int t : node.inputs) in.push_back((*shapes)[t]);
    Status s = node.op->infer_shapes(in, &out);
    if (!s.ok()) return s.with_context(node.context(file));
    if (out.size() != node.outputs.size()) {
      return internal_error(node.context(file) + ": produced " + std::to_string(out.size()) + " shapes for " +
                            std::to_string(node.outputs.size()) + " outputs");
    }
    for (size_t i = 0; i < out.size(); ++i) {
      auto checked = Shape::make(out[i].dims());  // guards against overflowing products
      if (!checked.ok()) return Status(checked.status()).with_context(node.context(file));
      (*shapes)[node.outputs[i]] = out[i];
    }
  }
  return Status::Ok();
}

void Graph::remove_dead_tensors() {
  link();
  std::vector<int> remap(tensors.size(), -1);
  std::vector<GraphTensor> kept;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const bool is_output = std::find(outputs.begin(), outputs.end(), static_cast<int>(t)) != outputs.end();
    const bool used =
        static_cast<int>(t) == input || is_output || tensors[t].producer >= 0 || !tensors[t].consumers.empty();
    if (!used) continue;
    remap[t] = static_cast<int>(kept.size());
    kept.push_back(std::move(tensors[t]));
  }
  tensors = std::move(kept);
  index_.clear();
  for (size_t t = 0; t < tensors.size(); ++t) index_[tensors[t].name] = static_cast<int>(t);
  for (GraphNode& node : nodes) {
    for (int& t : node.inputs) t = remap[t];
    for (int& t : node.outputs) t = remap[t];
  }
  input = remap[input];
  for (int& t : outputs) t = remap[t];
  link();
}

}  // namespace winfer
