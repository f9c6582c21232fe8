#include "engine/src/yaml_text.h"

#include <cstdio>

namespace winfer::detail {

namespace {
bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }
}  // namespace

std::string escaped(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_control(c)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  return out;
}

size_t first_control_character(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_control(static_cast<unsigned char>(text[i]))) return i;
  }
  return std::string::npos;
}

}  // namespace winfer::detail
