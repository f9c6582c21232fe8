// Attrs: a layer's attributes as parsed from the model file, with typed, validating getters.
// Keeps layers free of the YAML library, and records which keys were read so that the loader
// can reject unknown (misspelt) attributes.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "winfer/status.h"

namespace winfer {

// A scalar or a flat list, as written in the model file. Numbers keep their text so that
// "3" reads as an int and "1e-5" as a float; booleans are true/false.
struct AttrValue {
  enum class Kind { kScalar, kList };
  Kind kind = Kind::kScalar;
  std::vector<std::string> items;  // one item for a scalar
  int line = 0;                    // 1-based line in the model file (0 = unknown)

  static AttrValue scalar(std::string text, int line = 0) { return {Kind::kScalar, {std::move(text)}, line}; }
  static AttrValue list(std::vector<std::string> items, int line = 0) { return {Kind::kList, std::move(items), line}; }
  std::string to_string() const;
};

class Attrs {
 public:
  void set(const std::string& key, AttrValue value) { values_[key] = std::move(value); }
  bool has(const std::string& key) const { return values_.count(key) != 0; }

  // Required getters fail with "missing attribute 'key'"; the optional ones return `fallback`
  // when the key is absent. All fail with "attribute 'key': expected ..., got ..." on bad values.
  Status get_int(const std::string& key, int64_t* out) const;
  Status get_int(const std::string& key, int64_t* out, int64_t fallback) const;
  Status get_float(const std::string& key, double* out, double fallback) const;
  Status get_bool(const std::string& key, bool* out, bool fallback) const;
  Status get_string(const std::string& key, std::string* out, const std::string& fallback) const;
  // An int or a list of ints. `allowed_sizes` lists the accepted list lengths (an int counts
  // as size 1); e.g. kernel_size accepts {1, 2}: 3 -> {3}, [3, 5] -> {3, 5}.
  Status get_ints(const std::string& key, std::vector<int64_t>* out, const std::vector<size_t>& allowed_sizes) const;
  Status get_ints(const std::string& key, std::vector<int64_t>* out, const std::vector<size_t>& allowed_sizes,
                  const std::vector<int64_t>& fallback) const;

  // Keys never read by a getter: the loader reports them as unknown attributes.
  std::vector<std::string> unread_keys() const;
  int line_of(const std::string& key) const;

 private:
  const AttrValue* lookup(const std::string& key) const;
  std::map<std::string, AttrValue> values_;
  mutable std::set<std::string> read_;
};

}  // namespace winfer
