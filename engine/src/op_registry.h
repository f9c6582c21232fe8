// The operator registry: an explicit table filled by register_builtin_ops() (no static
// self-registration, so the set of ops is visible in one place: layers/builtin_ops.cpp).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/src/op.h"

namespace winfer {

class OpRegistry {
 public:
  void add(const OpInfo& info) { ops_[info.type] = info; }
  const OpInfo* find(const std::string& type) const {
    auto it = ops_.find(type);
    return it == ops_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> types() const {
    std::vector<std::string> names;
    for (const auto& kv : ops_) names.push_back(kv.first);
    return names;
  }

 private:
  std::map<std::string, OpInfo> ops_;
};

// Registers every built-in operator (defined in layers/builtin_ops.cpp).
void register_builtin_ops(OpRegistry& registry);
// The registry with every built-in op, built once.
const OpRegistry& builtin_op_registry();

}  // namespace winfer
