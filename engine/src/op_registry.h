// The operator registry: an explicit table filled by register_builtin_ops() (no static
// self-registration, so the set of built-in ops is visible in one place: layers/builtin_ops.cpp),
// plus the custom operators an embedder registers at run time (winfer/custom_op.h).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "engine/src/op.h"

namespace winfer {

// One operator type the loader can create: a built-in (from its OpInfo) or a custom one, whose
// factory is a closure over the embedder's definition.
struct OpEntry {
  std::string type;
  std::function<Result<std::unique_ptr<Op>>(const Attrs&)> create;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: unbounded
  std::function<int(const Attrs&)> num_outputs;
  bool builtin = true;
};

// Thread-safe: models load on any thread while custom ops are being registered. Entries are
// never removed or replaced, so a pointer find() returned stays valid for the process's life.
class OpRegistry {
 public:
  // A built-in op (register_builtin_ops, before the registry is shared).
  void add(const OpInfo& info) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    builtins_[info.type] = info;
    ops_[info.type] = OpEntry{info.type, info.create, info.min_inputs, info.max_inputs, info.num_outputs, true};
  }
  // A custom op: refused when its type is taken (by a built-in or an earlier registration).
  Status add_custom(OpEntry entry) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = ops_.find(entry.type);
    if (it != ops_.end()) {
      return invalid_argument("operator type '" + entry.type + "' is " +
                              (it->second.builtin ? "a built-in operator" : "registered already") +
                              "; choose another name for the custom op");
    }
    entry.builtin = false;
    const std::string type = entry.type;
    ops_.emplace(type, std::move(entry));
    return Status::Ok();
  }
  // Any op, built-in or custom.
  const OpEntry* find_entry(const std::string& type) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = ops_.find(type);
    return it == ops_.end() ? nullptr : &it->second;
  }
  // A built-in op's table line; nullptr for custom ops.
  const OpInfo* find(const std::string& type) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = builtins_.find(type);
    return it == builtins_.end() ? nullptr : &it->second;
  }
  std::vector<std::string> types() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    std::vector<std::string> names;
    for (const auto& kv : ops_) names.push_back(kv.first);
    return names;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, OpInfo> builtins_;
  std::map<std::string, OpEntry> ops_;
};

// Registers every built-in operator (defined in layers/builtin_ops.cpp).
void register_builtin_ops(OpRegistry& registry);
// The process's registry: every built-in op (built once, on first use) and the custom ops
// registered since (register_custom_op, engine/src/custom_op.cpp).
OpRegistry& op_registry();
// The same registry, read-only (the name predates custom ops).
inline const OpRegistry& builtin_op_registry() { return op_registry(); }

}  // namespace winfer
