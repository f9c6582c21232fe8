// The footprint of a CPU-only process (issue 20, class 9): cuBLAS and cuDNN
// (kernels/cuda/native/loader.h) and the bench peers oneDNN and XNNPACK (bench/peers/peers.h) are
// opened on first use, not linked. `winfer --help`, CPU runs and CPU sessions map none of them,
// and the CLI starts under an address-space limit that a linked cuBLAS alone exceeded
// (libcublasLt.so reserves ~520 MB of it).
//
// Child processes run with LD_DEBUG=files, which makes the dynamic loader print every library it
// maps, at start or through dlopen(), to stderr.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/cli_test_util.h"

#if defined(WINFER_TEST_NATIVE_CUDA)
#include "kernels/cuda/native/loader.h"
#endif

extern char** environ;

using namespace winfer;
using namespace winfer_test;

namespace {

// libwinfer_cuda: the CUDA backend plug-in (engine/src/cuda/plugin/), libwinfer_bench_cuda the
// bench's CUDA layer timing (bench/cuda/module/): cudart and CUDA kernels, each.
const std::vector<std::string> kGpuAndPeerLibraries = {
    "libwinfer_cuda", "libwinfer_bench_cuda", "libcublas", "libcudnn", "libdnnl", "libXNNPACK"};

struct ChildResult {
  int exit_code = -1;
  std::string stdout_text, stderr_text;
};

// Runs `program` with `args` in a child process, NAME=VALUE pairs `env` added to the
// environment, its address space limited to `address_space_bytes` when that is > 0; stdout and
// stderr go to files in `dir`. Everything the child needs is built before fork().
ChildResult run_child(const TempDir& dir, const std::string& program, const std::vector<std::string>& args,
                      const std::vector<std::string>& env, rlim_t address_space_bytes = 0) {
  std::vector<std::string> argv_text = {program};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = env;
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  envp.push_back(nullptr);
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");

  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || err_fd < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) _exit(126);
    if (address_space_bytes > 0) {
      const rlimit limit{address_space_bytes, address_space_bytes};
      if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(126);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  ChildResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.stdout_text = read_bytes(out);
  result.stderr_text = read_bytes(err);
  return result;
}

std::string winfer_cli() { return std::string(WINFER_BINARY_DIR) + "/bin/winfer"; }

std::vector<std::string> tiny_cpu_run() {
  return {"run",       repo_path("models/examples/tiny_net.yaml"),
          "--input",   repo_path("models/examples/tiny_net.input.npy"),
          "--device",  "cpu",
          "--threads", "2"};
}

// The libraries of kGpuAndPeerLibraries that LD_DEBUG=files output (or /proc/<pid>/maps) names.
std::vector<std::string> named_libraries(const std::string& text) {
  std::vector<std::string> named;
  for (const std::string& library : kGpuAndPeerLibraries)
    if (contains(text, library)) named.push_back(library);
  return named;
}

std::string self_maps() {
  std::ifstream maps("/proc/self/maps");
  return std::string(std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>());
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// This test binary's mappings before main(), before any test could have opened a library.
const std::string kMapsAtStart = self_maps();

}  // namespace

TEST_CASE("footprint: winfer --help, a CPU run and a bench of the engine's algorithms load no GPU or peer library") {
  const std::vector<std::vector<std::string>> commands = {
      {"--help"},
      tiny_cpu_run(),
      {"bench", "--layers", "tiny", "--conv", "im2col", "--runs", "1", "--min-time", "0", "--no-peak"},
  };
  for (const auto& args : commands) {
    CAPTURE(joined(args));
    TempDir dir;
    const ChildResult r = run_child(dir, winfer_cli(), args, {"LD_DEBUG=files"});
    INFO("stdout: " << r.stdout_text);
    REQUIRE(r.exit_code == 0);
    // The loader did report what it mapped (else the check below would prove nothing).
    REQUIRE(contains(r.stderr_text, "file=libstdc++"));
    CHECK(named_libraries(r.stderr_text).empty());
  }
}

TEST_CASE("footprint: a CPU session in this process maps no GPU or peer library") {
  // This binary links the engine (and the CUDA backend where nvcc was found) and the bench.
  CHECK_MESSAGE(named_libraries(kMapsAtStart).empty(), "mapped at start: " << joined(named_libraries(kMapsAtStart)));
  if (!named_libraries(self_maps()).empty()) {
    MESSAGE("WINFER_TEST_SKIPPED: an earlier test in this process loaded " << joined(named_libraries(self_maps())));
    return;
  }
  auto model = Model::load(repo_path("models/examples/tiny_net.yaml"), LoadOptions{});
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  auto input = read_npy(repo_path("models/examples/tiny_net.input.npy"));
  REQUIRE_MESSAGE(input.ok(), input.status().message());
  SessionOptions options;
  options.device = "cpu";
  (void)run_model(model.value(), input.value(), options);
  const std::string maps = self_maps();
  INFO("/proc/self/maps:\n" << maps);
  CHECK(named_libraries(maps).empty());
}

TEST_CASE("footprint: the CLI starts and runs tiny_net under a 400 MB address-space limit") {
#if defined(WINFER_TEST_SANITIZED)
  MESSAGE("WINFER_TEST_SKIPPED: a sanitizer's shadow memory needs terabytes of address space");
#else
  const rlim_t limit = rlim_t(400000) << 10;  // ulimit -v 400000
  {
    TempDir dir;
    const ChildResult r = run_child(dir, winfer_cli(), {"--help"}, {}, limit);
    INFO("stderr: " << r.stderr_text);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.stdout_text, "run"));
  }
  TempDir dir;
  const ChildResult r = run_child(dir, winfer_cli(), tiny_cpu_run(), {}, limit);
  INFO("stderr: " << r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "airplane"));  // tiny_net's top class on its example input
#endif
}

#if defined(WINFER_TEST_NATIVE_CUDA)
TEST_CASE("footprint: cuBLAS is mapped by the first load_cublas, not before") {
  if (contains(self_maps(), "libcublas")) {
    MESSAGE("WINFER_TEST_SKIPPED: an earlier test in this process loaded cuBLAS");
    return;
  }
  const cuda::CublasApi* api = nullptr;
  const cuda::Status status = cuda::load_cublas(&api);
  if (!status.ok()) {
    // A machine without the toolkit's cuBLAS: the message says which library and what to do.
    INFO(status.message());
    CHECK(api == nullptr);
    CHECK(contains(status.message(), std::string("cuBLAS (") + cuda::cublas_soname() + ") could not be loaded: "));
    CHECK(contains(status.message(), "--device cpu"));
    return;
  }
  REQUIRE(api != nullptr);
  CHECK(contains(self_maps(), "libcublas"));
  CHECK(std::string(api->cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED)) == "CUBLAS_STATUS_NOT_INITIALIZED");
  const cuda::CublasApi* again = nullptr;
  CHECK(cuda::load_cublas(&again).ok());
  CHECK(again == api);  // loaded once per process
}

TEST_CASE("footprint: a cuBLAS that cannot be mapped is an error naming the library and the remedy") {
#if defined(WINFER_TEST_SANITIZED)
  MESSAGE("WINFER_TEST_SKIPPED: a sanitizer's shadow memory needs terabytes of address space");
#else
  if (contains(self_maps(), "libcublas")) {
    MESSAGE("WINFER_TEST_SKIPPED: an earlier test in this process loaded cuBLAS");
    return;
  }
  // In a child whose address space may grow by 64 MiB: libcublasLt alone needs ~520 MiB, so
  // dlopen() fails as it would without the library.
  TempDir dir;
  const std::string message_file = dir.file("message.txt");
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::ifstream status("/proc/self/status");
    uint64_t vm_kib = 0;
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoull(line.substr(7));
    const rlim_t limit = (vm_kib << 10) + (rlim_t(64) << 20);
    const rlimit rl{limit, limit};
    if (vm_kib == 0 || setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    const cuda::CublasApi* api = nullptr;
    const cuda::Status s = cuda::load_cublas(&api);
    std::ofstream(message_file) << s.message();
    _exit(!s.ok() && api == nullptr ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  const std::string message = read_bytes(message_file);
  INFO("message: " << message);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(contains(message, std::string("cuBLAS (") + cuda::cublas_soname() + ") could not be loaded: "));
  CHECK(contains(message,
                 "install the CUDA toolkit's cuBLAS (or add its folder to LD_LIBRARY_PATH), or use --device cpu"));
#endif
}
#endif

#if defined(WINFER_TEST_NATIVE_CUDA)
TEST_CASE("footprint: the CLI loads the CUDA backend plug-in for a CUDA session, and a missing one is named") {
  std::vector<std::string> args = tiny_cpu_run();
  args[5] = "cuda";  // --device cuda
  {
    // Loaded, whether or not this machine has a GPU: the error, if any, is the device's.
    TempDir dir;
    const ChildResult r = run_child(dir, winfer_cli(), args, {"LD_DEBUG=files"});
    INFO("exit " << r.exit_code);
    CHECK(contains(r.stderr_text, "libwinfer_cuda.so"));
    CHECK_FALSE(contains(r.stderr_text, "plug-in could not be loaded"));
    if (r.exit_code != 0) CHECK(contains(r.stderr_text, "no CUDA device: cuda"));
  }
  // A copy of the CLI without the plug-in beside it (an install missing it), and a file that is
  // not one: refused with the path and the loader's reason, as a build without CUDA would be.
  TempDir dir;
  std::filesystem::create_directories(dir.file("bin"));
  const std::string copy = dir.file("bin/winfer");
  std::filesystem::copy_file(winfer_cli(), copy);
  const ChildResult missing = run_child(dir, copy, args, {});
  INFO("stderr: " << missing.stderr_text);
  CHECK(missing.exit_code != 0);
  CHECK(contains(missing.stderr_text, "no CUDA device: the CUDA backend plug-in could not be loaded: "));
  CHECK(contains(missing.stderr_text, "libwinfer_cuda.so"));
  write_bytes(dir.file("not_a_plugin.so"), "text\n");
  const ChildResult bad = run_child(dir, winfer_cli(), args, {"WINFER_CUDA_PLUGIN=" + dir.file("not_a_plugin.so")});
  INFO("stderr: " << bad.stderr_text);
  CHECK(bad.exit_code != 0);
  CHECK(contains(bad.stderr_text, "the CUDA backend plug-in could not be loaded: " + dir.file("not_a_plugin.so")));
}
#endif

#if defined(WINFER_HAVE_ONEDNN) || defined(WINFER_HAVE_XNNPACK)
TEST_CASE("footprint: a bench peer's library is loaded when the bench times it, and a missing module is named") {
#if defined(WINFER_HAVE_ONEDNN)
  const std::string peer = "onednn", library = "libdnnl";
#else
  const std::string peer = "xnnpack", library = "libXNNPACK";
#endif
  const std::vector<std::string> args = {"bench",  "--layers", "tiny",       "--conv", peer,
                                         "--runs", "1",        "--min-time", "0",      "--no-peak"};
  {
    TempDir dir;
    const ChildResult r = run_child(dir, winfer_cli(), args, {"LD_DEBUG=files"});
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.stderr_text, library));
  }
  // A copy of the CLI without the modules beside it (as an install missing them).
  TempDir dir;
  std::filesystem::create_directories(dir.file("bin"));
  const std::string copy = dir.file("bin/winfer");
  std::filesystem::copy_file(winfer_cli(), copy);
  const ChildResult r = run_child(dir, copy, args, {});
  INFO("stderr: " << r.stderr_text);
  CHECK(r.exit_code != 0);
  CHECK(contains(r.stderr_text, "--conv " + peer + ": the peer module could not be loaded: "));
  CHECK(contains(r.stderr_text, "libwinfer_peer_" + peer + ".so"));
}
#endif
