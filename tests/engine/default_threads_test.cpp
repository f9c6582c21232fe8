// winfer::default_thread_count(): the CPUs this process may run on, or WINFER_NUM_THREADS when it
// holds a whole number >= 1 (another value is ignored with a warning that names it).
#include <doctest/doctest.h>
#include <sched.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "winfer/log.h"
#include "winfer/session.h"

namespace {

// Sets WINFER_NUM_THREADS for one scope and puts back what was there (ctest sets it to 1).
class ThreadsVariable {
 public:
  explicit ThreadsVariable(const char* value) {
    if (const char* old = std::getenv("WINFER_NUM_THREADS")) saved_ = old;
    if (value) {
      setenv("WINFER_NUM_THREADS", value, 1);
    } else {
      unsetenv("WINFER_NUM_THREADS");
    }
  }
  ~ThreadsVariable() {
    if (saved_) {
      setenv("WINFER_NUM_THREADS", saved_->c_str(), 1);
    } else {
      unsetenv("WINFER_NUM_THREADS");
    }
  }

 private:
  std::optional<std::string> saved_;
};

int affinity_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  return CPU_COUNT(&set);
}

std::vector<std::string> warnings;
void collect(winfer::LogLevel level, const char* message, void*) {
  if (level == winfer::LogLevel::kWarning) warnings.emplace_back(message);
}

}  // namespace

TEST_CASE("default threads: the CPUs this process may run on, unless WINFER_NUM_THREADS says otherwise") {
  {
    ThreadsVariable unset(nullptr);
    CHECK(winfer::default_thread_count() == affinity_count());
    CHECK(winfer::SessionOptions{}.threads == affinity_count());
  }
  {
    ThreadsVariable three("3");
    CHECK(winfer::default_thread_count() == 3);
    CHECK(winfer::SessionOptions{}.threads == 3);
  }
  {
    ThreadsVariable empty("");
    CHECK(winfer::default_thread_count() == affinity_count());
  }
}

TEST_CASE("default threads: a WINFER_NUM_THREADS that is not a whole number >= 1 is named in a warning and ignored") {
  winfer::set_log_callback(collect, nullptr);
  for (const char* bad : {"0", "-2", "two", "4x", "99999999999"}) {
    ThreadsVariable variable(bad);
    CAPTURE(bad);
    CHECK(winfer::default_thread_count() == affinity_count());
  }
  winfer::set_log_callback(nullptr, nullptr);
  // Warned once per process, naming the first bad value.
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("WINFER_NUM_THREADS='0'") != std::string::npos);
}
