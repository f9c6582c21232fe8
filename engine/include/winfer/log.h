// Logging: where the library's few messages go. winfer never writes to stdout; by default
// warnings and errors go to stderr, one line each ("winfer: warning: ..."). A host program
// routes them elsewhere (or silences them) with set_log_callback / set_log_level.
//
//   winfer::set_log_level(winfer::LogLevel::kInfo);
//   winfer::set_log_callback([](winfer::LogLevel level, const char* message, void* user) {
//     static_cast<MyLogger*>(user)->write(winfer::log_level_name(level), message);
//   }, &my_logger);
//
// Both settings are process-wide and may be changed at any time from any thread; a callback
// may be called from any thread that uses winfer (it must be thread-safe) and must not call
// back into winfer's logging functions.
#pragma once

#include <string>

namespace winfer {

enum class LogLevel {
  kDebug = 0,
  kInfo = 1,
  kWarning = 2,
  kError = 3,
  kOff = 4,  // as a level: nothing is delivered
};

const char* log_level_name(LogLevel level);  // "debug", "info", "warning", "error", "off"

// `message` is one line without a trailing newline, valid during the call only.
using LogCallback = void (*)(LogLevel level, const char* message, void* user_data);

// nullptr restores the default sink (stderr).
void set_log_callback(LogCallback callback, void* user_data = nullptr);
// Messages below `level` are dropped before the callback sees them. Default: kWarning.
void set_log_level(LogLevel level);
LogLevel log_level();

// Delivers a message through the current sink if `level` passes the current level (what the
// library itself uses; hosts may use it too).
void log_message(LogLevel level, const std::string& message);

}  // namespace winfer
