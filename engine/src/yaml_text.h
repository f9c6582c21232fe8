// Text helpers for the YAML readers (the model loader, the preprocess reader): how they show a
// value with control characters in a message, and where the first one is.
#pragma once

#include <cstddef>
#include <string>

namespace winfer::detail {

// `text` with its control characters (a NUL, a newline, ...) written as \xNN, for messages.
std::string escaped(const std::string& text);

// The first control character of `text`, or npos. A NUL would end the name wherever it goes
// through a C string (a file path, strtoll) and hide the rest; none belongs in a name.
size_t first_control_character(const std::string& text);

}  // namespace winfer::detail
