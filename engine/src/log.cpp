// The library's log sink (winfer/log.h): a process-wide callback and level, read under a lock
// so that a host may swap them while sessions run on other threads.
#include "winfer/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace winfer {
namespace {

std::mutex& sink_mutex() {
  static std::mutex mutex;
  return mutex;
}
LogCallback g_callback = nullptr;  // guarded by sink_mutex()
void* g_user_data = nullptr;       // guarded by sink_mutex()
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};

}  // namespace

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "unknown";
}

void set_log_callback(LogCallback callback, void* user_data) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  g_callback = callback;
  g_user_data = user_data;
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }

LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void log_message(LogLevel level, const std::string& message) {
  if (level == LogLevel::kOff || static_cast<int>(level) < g_level.load(std::memory_order_relaxed)) return;
  // The lock is held during the callback, so that set_log_callback() returning means the old
  // callback is no longer running (its user data may then be freed).
  std::lock_guard<std::mutex> lock(sink_mutex());
  if (g_callback != nullptr) {
    g_callback(level, message.c_str(), g_user_data);
  } else {
    std::fprintf(stderr, "winfer: %s: %s\n", log_level_name(level), message.c_str());
  }
}

}  // namespace winfer
