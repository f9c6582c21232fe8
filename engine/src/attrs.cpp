#include "engine/src/attrs.h"

#include <cerrno>
#include <cstdlib>

namespace winfer {
namespace {

bool parse_int(const std::string& text, int64_t* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  *out = static_cast<int64_t>(v);
  return true;
}

bool parse_float(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

Status bad_value(const std::string& key, const std::string& expected, const AttrValue& v) {
  return invalid_argument("attribute '" + key + "': expected " + expected + ", got " + v.to_string());
}

}  // namespace

std::string AttrValue::to_string() const {
  if (kind == Kind::kScalar) return items.empty() ? std::string("''") : "'" + items[0] + "'";
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + "]";
}

const AttrValue* Attrs::lookup(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) return nullptr;
  read_.insert(key);
  return &it->second;
}

Status Attrs::get_int(const std::string& key, int64_t* out) const {
  const AttrValue* v = lookup(key);
  if (v == nullptr) return not_found("missing attribute '" + key + "'");
  if (v->kind != AttrValue::Kind::kScalar || !parse_int(v->items[0], out)) {
    return bad_value(key, "an integer", *v);
  }
  return Status::Ok();
}

Status Attrs::get_int(const std::string& key, int64_t* out, int64_t fallback) const {
  if (!has(key)) {
    *out = fallback;
    return Status::Ok();
  }
  return get_int(key, out);
}

Status Attrs::get_float(const std::string& key, double* out, double fallback) const {
  const AttrValue* v = lookup(key);
  if (v == nullptr) {
    *out = fallback;
    return Status::Ok();
  }
  if (v->kind != AttrValue::Kind::kScalar || !parse_float(v->items[0], out)) {
    return bad_value(key, "a number", *v);
  }
  return Status::Ok();
}

Status Attrs::get_bool(const std::string& key, bool* out, bool fallback) const {
  const AttrValue* v = lookup(key);
  if (v == nullptr) {
    *out = fallback;
    return Status::Ok();
  }
  const std::string t = v->kind == AttrValue::Kind::kScalar ? v->items[0] : std::string();
  if (t == "true" || t == "True") {
    *out = true;
  } else if (t == "false" || t == "False") {
    *out = false;
  } else {
    return bad_value(key, "true or false", *v);
  }
  return Status::Ok();
}

Status Attrs::get_string(const std::string& key, std::string* out, const std::string& fallback) const {
  const AttrValue* v = lookup(key);
  if (v == nullptr) {
    *out = fallback;
    return Status::Ok();
  }
  if (v->kind != AttrValue::Kind::kScalar) return bad_value(key, "a string", *v);
  *out = v->items[0];
  return Status::Ok();
}

Status Attrs::get_ints(const std::string& key, std::vector<int64_t>* out,
                       const std::vector<size_t>& allowed_sizes) const {
  const AttrValue* v = lookup(key);
  if (v == nullptr) return not_found("missing attribute '" + key + "'");
  std::string expected = "an integer";
  for (size_t n : allowed_sizes) {
    if (n > 1) expected += " or a list of " + std::to_string(n) + " integers";
  }
  bool size_ok = false;
  for (size_t n : allowed_sizes) size_ok = size_ok || n == v->items.size();
  if (v->kind == AttrValue::Kind::kScalar) size_ok = true;  // a scalar is always accepted
  if (!size_ok) return bad_value(key, expected, *v);
  out->clear();
  for (const std::string& item : v->items) {
    int64_t x = 0;
    if (!parse_int(item, &x)) return bad_value(key, expected, *v);
    out->push_back(x);
  }
  return Status::Ok();
}

Status Attrs::get_ints(const std::string& key, std::vector<int64_t>* out, const std::vector<size_t>& allowed_sizes,
                       const std::vector<int64_t>& fallback) const {
  if (!has(key)) {
    *out = fallback;
    return Status::Ok();
  }
  return get_ints(key, out, allowed_sizes);
}

std::vector<std::string> Attrs::unread_keys() const {
  std::vector<std::string> keys;
  for (const auto& kv : values_) {
    if (!read_.count(kv.first)) keys.push_back(kv.first);
  }
  return keys;
}

int Attrs::line_of(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? 0 : it->second.line;
}

}  // namespace winfer
