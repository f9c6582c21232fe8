#include "apps/winfer/process_memory.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>

#include "engine/src/core/huge_page_promotion.h"

namespace winfer::cli {
namespace {

bool write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string read_all(int fd) {
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

// A "Name:   123 kB" line of /proc/self/status, in bytes.
std::optional<size_t> status_bytes(const std::string& name) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ':')
      return static_cast<size_t>(std::stoull(line.substr(name.size() + 1))) * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::optional<size_t> peak_resident_bytes() { return status_bytes("VmHWM"); }

std::optional<size_t> warm_peak_growth(const std::function<bool()>& pass) {
  // The weights' move into 2 MiB pages holds a model's block while it copies a range of it: a
  // model the caller has just released may still be alive in that thread, and freed there a
  // moment later (CI measured 12 MB less than the plan once: the old block was in the baseline).
  // Once the move is idle, what the caller released is gone.
  wait_for_huge_page_promotion();
  // glibc raised its mmap threshold when the first run freed large blocks, so the second
  // run's large blocks would come from the heap, whose freed pages stay resident: fix the
  // thresholds at glibc's initial values (128 KiB), as a fresh process starts.
  ::mallopt(M_MMAP_THRESHOLD, 128 << 10);
  ::mallopt(M_TRIM_THRESHOLD, 128 << 10);
  ::malloc_trim(0);
  {
    std::ofstream clear_refs("/proc/self/clear_refs");
    if (!(clear_refs << "5" << std::flush)) return std::nullopt;
  }
  const std::optional<size_t> baseline = status_bytes("VmRSS");
  const std::optional<size_t> restarted = peak_resident_bytes();
  // The reset took where the peak now equals the resident set (within what the reads touched).
  if (!baseline || !restarted || *restarted > *baseline + (size_t{1} << 20)) return std::nullopt;
  if (!pass()) return std::nullopt;
  const std::optional<size_t> peak = peak_resident_bytes();
  if (!peak) return std::nullopt;
  return *peak - std::min(*peak, *baseline);
}

std::string run_in_child(const std::function<std::string()>& work, std::string* error) {
  int fds[2];
  std::fflush(nullptr);
  if (::pipe(fds) != 0) {
    *error = "cannot create a pipe";
    return "";
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    *error = "cannot fork a process";
    return "";
  }
  if (pid == 0) {
    ::close(fds[0]);
    int code = 0;
    try {
      code = write_all(fds[1], work()) ? 0 : 3;
    } catch (const std::exception&) {
      code = 4;
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  std::string text = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    *error = "the measuring process was killed by signal " + std::to_string(WTERMSIG(status)) +
             (WTERMSIG(status) == SIGKILL ? " (out of memory?)" : "");
    return "";
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) {
    *error = "the measuring process failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
    return "";
  }
  return text;
}

}  // namespace winfer::cli
