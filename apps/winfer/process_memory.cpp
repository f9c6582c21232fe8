#include "apps/winfer/process_memory.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <fstream>

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

}  // namespace

std::optional<size_t> peak_resident_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return static_cast<size_t>(std::stoull(line.substr(6))) * 1024;
  }
  return std::nullopt;
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
