// sgemm (OpenBLAS path and portable fallback) against the float64 reference, and sgemm under an
// address-space limit (ulimit -v), where OpenBLAS would retry a failed buffer mapping forever.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/linear.h"
#include "reference.h"
#include "test_util.h"

// A sanitizer reserves terabytes of address space for its shadow memory and maps more as it
// goes: an address-space limit measures nothing there and may kill the sanitizer itself.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define WINFER_GEMM_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WINFER_GEMM_TEST_SANITIZED 1
#endif

namespace winfer {
namespace {

struct GemmShape {
  int64_t m, n, k;
};

// Restores the normal backend when a test that forced the fallback ends (even on failure).
struct ForcePortable {
  explicit ForcePortable(bool force) { gemm_force_portable_for_testing(force); }
  ~ForcePortable() { gemm_force_portable_for_testing(false); }
};

// One sgemm call with padded leading dimensions (ld = cols + 3) and C guarded by a padding
// column band that must stay untouched, checked against the reference.
void check_gemm(bool ta, bool tb, GemmShape s, float alpha, float beta, uint32_t seed) {
  const int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
  const int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
  const int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = s.n + 3;
  const std::vector<float> a = test::random_floats(static_cast<size_t>(a_rows * lda), seed);
  const std::vector<float> b = test::random_floats(static_cast<size_t>(b_rows * ldb), seed + 1);
  std::vector<float> c = test::random_floats(static_cast<size_t>(s.m * ldc), seed + 2);
  if (beta == 0.f) {  // BLAS must not read C then: fill the visible part with NaN
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) c[static_cast<size_t>(i * ldc + j)] = NAN;
  }
  const std::vector<float> c_before = c;
  const ref::Result want = ref::gemm(ta, tb, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc);

  sgemm(ta, tb, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);

  std::vector<float> got(static_cast<size_t>(s.m * s.n));
  bool padding_intact = true;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) got[static_cast<size_t>(i * s.n + j)] = c[static_cast<size_t>(i * ldc + j)];
    for (int64_t j = s.n; j < ldc; ++j)
      padding_intact &=
          std::memcmp(&c[static_cast<size_t>(i * ldc + j)], &c_before[static_cast<size_t>(i * ldc + j)], 4) == 0;
  }
  CHECK_MESSAGE(padding_intact, "sgemm wrote outside the m x n block of C");
  test::check_close(got.data(), want.value, want.abs_sum, want.terms, "sgemm vs reference");
}

void check_all_shapes() {
  // m/n/k of 1, odd sizes, and sizes past the fallback's blocking (MC 64, KC 256, NC 512).
  const std::vector<GemmShape> shapes = {{1, 1, 1},    {1, 7, 3},      {5, 1, 9},    {13, 17, 1},
                                         {33, 65, 70}, {130, 67, 300}, {7, 600, 20}, {67, 9, 513}};
  uint32_t seed = 1;
  for (const GemmShape& s : shapes)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        INFO("m=", s.m, " n=", s.n, " k=", s.k, " trans_a=", ta, " trans_b=", tb);
        check_gemm(ta, tb, s, 1.f, 0.f, seed += 3);
        check_gemm(ta, tb, s, 0.5f, -1.5f, seed += 3);
        check_gemm(ta, tb, s, -2.f, 1.f, seed += 3);
      }
}

TEST_CASE("gemm backend description") {
  const std::string d = gemm_backend_description();
  MESSAGE("GEMM backend: ", d);
  CHECK_FALSE(d.empty());
  if (gemm_uses_openblas()) {
    CHECK(d.find("core=") != std::string::npos);
    CHECK(d.find("OPENBLAS_CORETYPE") != std::string::npos);
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    // The point of loading it ourselves: on an AVX-512 CPU, OpenBLAS must run its AVX-512 core.
    if (d.find("set by winfer") != std::string::npos && __builtin_cpu_supports("avx512f"))
      CHECK(d.find("core=SkylakeX") != std::string::npos);
#endif
  } else {
    CHECK(d.find("portable fallback") != std::string::npos);
  }
}

TEST_CASE("gemm OpenBLAS path matches the float64 reference") {
  if (!gemm_uses_openblas()) MESSAGE("OpenBLAS not loaded; this checks the fallback again");
  gemm_set_threads(2);
  check_all_shapes();
  gemm_set_threads(1);
  check_all_shapes();
}

TEST_CASE("gemm portable fallback matches the float64 reference") {
  ForcePortable force(true);
  CHECK_FALSE(gemm_uses_openblas());
  for (cpu::Isa isa : test::runnable_isas()) {
    test::IsaCap cap(isa);
    INFO("isa ", test::isa_name(isa));
    check_all_shapes();
  }
}

TEST_CASE("gemm degenerate sizes") {
  for (bool portable : {false, true}) {
    ForcePortable force(portable);
    INFO("portable ", portable);
    // m == 0 or n == 0: nothing is touched (the pointers may even be null).
    sgemm(false, false, 0, 5, 3, 1.f, nullptr, 3, nullptr, 5, 0.f, nullptr, 5);
    sgemm(false, false, 5, 0, 3, 1.f, nullptr, 3, nullptr, 1, 0.f, nullptr, 1);
    // k == 0: C = beta * C; with beta == 0 NaN garbage is overwritten.
    std::vector<float> c = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
    sgemm(false, true, 2, 3, 0, 1.f, nullptr, 1, nullptr, 1, 2.f, c.data(), 3);
    CHECK(c == std::vector<float>{2.f, 4.f, 6.f, 8.f, 10.f, 12.f});
    std::vector<float> nan_c(6, NAN);
    sgemm(true, false, 2, 3, 0, 1.f, nullptr, 2, nullptr, 3, 0.f, nan_c.data(), 3);
    CHECK(nan_c == std::vector<float>(6, 0.f));
    // alpha == 0: A and B are not read (they hold NaN here), C = beta * C.
    std::vector<float> a(6, NAN), b(6, NAN), c2 = {1.f, -1.f, 0.5f, 2.f};
    sgemm(false, false, 2, 2, 3, 0.f, a.data(), 3, b.data(), 2, 1.f, c2.data(), 2);
    CHECK(c2 == std::vector<float>{1.f, -1.f, 0.5f, 2.f});
  }
}

// ---- under an address-space limit ---------------------------------------------------------------
//
// OpenBLAS 0.3.21 maps a 128 MiB buffer for each concurrent caller and retries without end when
// the mapping fails (gemm.cpp): ResNet-18 at batch 64 under `ulimit -v` spun at 200 % CPU in its
// final linear layer. The test runs this binary again as a fresh process, OpenBLAS not yet loaded
// and no buffer mapped, with only the child test case below: the child limits its address space
// to what it has mapped plus a headroom, then multiplies. 96 MiB: room for the library (38 MiB)
// and a thread, not for a buffer: the answers must come, right, from the portable kernel (before
// the guard the child spun until killed). 1 GiB: OpenBLAS must still be used.

constexpr const char* kChildHeadroomVariable = "WINFER_GEMM_CHILD_HEADROOM_MIB";
constexpr const char* kChildTestName = "gemm under an address-space limit: child";

size_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Runs the child test case in a fresh copy of this binary; its exit status, -1 when it was still
// running after `deadline` (then killed).
int run_child(int headroom_mib, std::chrono::seconds deadline) {
  // Everything the child needs is built before fork(): after it only exec and _exit.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kChildHeadroomVariable) + "=" + std::to_string(headroom_mib));
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(&e[0]);
  envp.push_back(nullptr);
  std::string filter = std::string("--test-case=") + kChildTestName;
  std::string no_skip = "--no-skip", name = "winfer_kernel_tests";
  std::vector<char*> argv = {&name[0], &no_skip[0], &filter[0], nullptr};
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execve("/proc/self/exe", argv.data(), envp.data());
    _exit(127);
  }
  const auto until = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Skipped in normal runs (and not listed to ctest): only the test below runs it, with --no-skip.
TEST_CASE(kChildTestName* doctest::skip()) {
  const char* headroom_text = std::getenv(kChildHeadroomVariable);
  if (headroom_text == nullptr) return;  // run by hand: it would limit the caller's process
  const int headroom_mib = std::atoi(headroom_text);
  rlimit limit{};
  REQUIRE(getrlimit(RLIMIT_AS, &limit) == 0);
  limit.rlim_cur = mapped_bytes() + (rlim_t(headroom_mib) << 20);
  REQUIRE(setrlimit(RLIMIT_AS, &limit) == 0);
  // 200^3: past OpenBLAS's small-matrix path (M*N*K <= 100^3 needs no buffer).
  check_gemm(false, true, {200, 200, 200}, 1.f, 0.f, 11);
  // The layer of the report: 64 rows, 512 -> 1000, two threads each calling sgemm.
  const int64_t rows = 64, in_features = 512, out_features = 1000;
  const auto in = test::random_floats(static_cast<size_t>(rows * in_features), 21);
  const auto weight = test::random_floats(static_cast<size_t>(out_features * in_features), 22);
  std::vector<float> out(static_cast<size_t>(rows * out_features), NAN);
  linear(in.data(), weight.data(), nullptr, out.data(), rows, in_features, out_features, Activation::kNone, 2);
  const ref::Result want = ref::gemm(false, true, rows, out_features, in_features, 1.f, in, in_features, weight,
                                     in_features, 0.f, std::vector<float>(out.size()), out_features);
  test::check_close(out.data(), want.value, want.abs_sum, want.terms, "linear under the limit");
  if (!gemm_uses_openblas()) return;  // nothing to guard
  if (headroom_mib < 128)
    CHECK(gemm_calls_kept_from_openblas() > 0);
  else
    CHECK(gemm_calls_kept_from_openblas() == 0);
}

TEST_CASE("gemm under an address-space limit (ulimit -v) answers promptly instead of spinning in OpenBLAS") {
#ifdef WINFER_GEMM_TEST_SANITIZED
  MESSAGE(
      "WINFER_TEST_SKIPPED: a sanitizer's shadow memory needs terabytes of address space, so RLIMIT_AS cannot "
      "be used");
  return;
#endif
  // A child takes well under a second; 60 s leaves room for a loaded 2-core machine.
  const auto deadline = std::chrono::seconds(60);
  const int tight = run_child(96, deadline);
  CHECK_MESSAGE(tight == 0, "the child with 96 MiB of headroom exited with ", tight,
                " (-1: still spinning after 60 s, killed)");
  const int loose = run_child(1024, deadline);
  CHECK_MESSAGE(loose == 0, "the child with 1 GiB of headroom exited with ", loose);
}

}  // namespace
}  // namespace winfer
