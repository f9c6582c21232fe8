// sgemm through OpenBLAS loaded with dlopen(), with a portable fallback.
//
// Why dlopen and not a link-time dependency: OpenBLAS picks its kernels (its "core") once, in
// the library constructor, from OPENBLAS_CORETYPE or its own CPU detection. Debian's 0.3.21
// does not know recent Xeons and picks an SSE3 core ~5x slower than its AVX-512 one. Linked at
// build time it would be loaded (and its constructor run) before main(), too early to set the
// variable; loading it ourselves lets us set OPENBLAS_CORETYPE first, from the CPU's features,
// unless the user already chose one.
//
// Why every call is guarded (enter_openblas below): OpenBLAS (0.3.21, memory.c
// blas_memory_alloc) gives each concurrent caller a buffer of BUFFER_SIZE bytes of address space
// (128 MiB on x86-64), mapped the first time that many callers are inside at once and kept for
// the process. When that mmap fails (ulimit -v, vm.overcommit_memory=2) it retries without end:
// ResNet-18 at batch 64 under `ulimit -v 1000000` spun at 200 % CPU in its final linear layer.
// winfer therefore loads it with one thread (no pool of workers mapping buffers behind our back)
// and only lets a call in that cannot need a new buffer, or after checking that one fits; else
// the call runs on the portable kernel below, slower and correct.
#include "kernels/cpu/gemm.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>

#include "kernels/cpu/cpu_common.h"

namespace winfer {
namespace {

// ---- OpenBLAS, resolved at run time ---------------------------------------------------------

// The CBLAS enums, as plain ints (ABI-compatible with the C enums OpenBLAS declares).
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;
constexpr int kCblasTrans = 112;

// blasint is int in Debian's libopenblas.so.0 (the 64-bit-index build is libopenblas64.so.0).
using CblasSgemmFn = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                              int lda, const float* b, int ldb, float beta, float* c, int ldc);
using SetNumThreadsFn = void (*)(int);
using GetNumThreadsFn = int (*)();
using GetStringFn = char* (*)();

constexpr const char* kLibraryName = "libopenblas.so.0";

struct OpenBlas {
  CblasSgemmFn sgemm = nullptr;  // null: use the fallback
  SetNumThreadsFn set_num_threads = nullptr;
  int pool_threads = 1;  // OpenBLAS threads after loading (workers + the caller)
  std::string description;
};

// Sets OPENBLAS_CORETYPE from the CPU's features unless the user set it; returns the part of
// the description that says what happened.
std::string choose_coretype() {
  if (const char* user = std::getenv("OPENBLAS_CORETYPE"))
    return std::string("OPENBLAS_CORETYPE=") + user + " set by user";
  const char* core = nullptr;
#if WINFER_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
#endif
  if (core == nullptr) return "OPENBLAS_CORETYPE not set: no AVX2+FMA, OpenBLAS detects the core";
  // setenv is not thread-safe against concurrent getenv; this runs once, inside call_once.
  setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
  return std::string("OPENBLAS_CORETYPE=") + core + " set by winfer";
}

// dlopen() with OPENBLAS_NUM_THREADS=1, the user's value (if any) restored afterwards. The
// pthreads build starts its pool in the library constructor, and each worker maps its own
// buffer there (128 MiB of address space per core, retried without end when the mmap fails: the
// worker spins, out of reach). winfer never uses that pool (gemm_set_threads(1), see gemm.h);
// the variable is read only at load, so restoring it changes nothing else in this process.
void* dlopen_single_threaded() {
  const char* user = std::getenv("OPENBLAS_NUM_THREADS");
  const std::string saved = user ? user : "";
  // setenv is not thread-safe against concurrent getenv; this runs once, inside call_once.
  setenv("OPENBLAS_NUM_THREADS", "1", /*overwrite=*/1);
  void* handle = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
  if (user)
    setenv("OPENBLAS_NUM_THREADS", saved.c_str(), 1);
  else
    unsetenv("OPENBLAS_NUM_THREADS");
  return handle;
}

void load_openblas(OpenBlas* blas) {
  // Already in the process (linked by someone else)? Then its core is fixed and the variable
  // can no longer change it: say so instead of claiming we set it.
  std::string how;
  bool preloaded = false;
  if (void* existing = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    dlclose(existing);
    preloaded = true;
    how = "loaded before winfer; OPENBLAS_CORETYPE not applied by winfer";
  } else {
    how = choose_coretype();
  }
  void* handle = preloaded ? dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL) : dlopen_single_threaded();
  if (handle == nullptr) {
    const char* err = dlerror();
    blas->description =
        std::string("portable fallback sgemm (") + (err ? err : std::string(kLibraryName) + ": dlopen failed") + ")";
    return;
  }
  auto sgemm = reinterpret_cast<CblasSgemmFn>(dlsym(handle, "cblas_sgemm"));
  auto set_threads = reinterpret_cast<SetNumThreadsFn>(dlsym(handle, "openblas_set_num_threads"));
  auto get_threads = reinterpret_cast<GetNumThreadsFn>(dlsym(handle, "openblas_get_num_threads"));
  auto corename = reinterpret_cast<GetStringFn>(dlsym(handle, "openblas_get_corename"));
  auto config = reinterpret_cast<GetStringFn>(dlsym(handle, "openblas_get_config"));
  if (sgemm == nullptr) {
    blas->description = std::string("portable fallback sgemm (") + kLibraryName + " has no cblas_sgemm)";
    return;  // the handle stays open: harmless, and unloading OpenBLAS is not safe anyway
  }
  blas->sgemm = sgemm;
  blas->set_num_threads = set_threads;
  // Loaded here: one thread. Loaded before: its pool already exists, of about this size.
  blas->pool_threads = preloaded && get_threads ? std::max(get_threads(), 1) : 1;
  std::string text = config ? config() : "OpenBLAS (no openblas_get_config)";
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (corename) text += std::string(" core=") + corename();
  blas->description = text + " (" + how + ")";
}

std::atomic<bool> g_force_portable{false};

// ---- the address-space guard (see the file comment) -------------------------------------------
//
// OpenBLAS keeps a table of buffers; a call takes the first free one and maps a new one only when
// all are taken, and each worker of its pool takes one for life. So it holds as many buffers as
// the most takers ever at once: the workers plus winfer's calls inside. winfer counts those
// takers: a call whose count is within the most ever let in cannot need a new buffer (every
// taker counted itself in before taking), and one beyond it first maps and unmaps what the new
// buffers need, with OpenBLAS's flags, plus one buffer of margin (a concurrent allocation
// elsewhere; a build with larger buffers: POWER's are 256 MiB). Refused, it runs on the portable
// kernel and the most-ever stays, so a later call tries again. A larger pool is checked the same
// way (gemm_set_threads); its workers stay counted in.

// BUFFER_SIZE of OpenBLAS 0.3.21 on x86-64 (common_x86_64.h: 32 << 22); 32 MiB on arm64.
constexpr size_t kOpenBlasBufferBytes = size_t(128) << 20;
// A pool worker's stack besides its buffer (glibc's default: RLIMIT_STACK, usually 8 MiB).
constexpr size_t kWorkerStackBytes = size_t(8) << 20;

std::atomic<int> g_takers{0};          // pool workers + winfer's calls inside (or entering)
std::atomic<int> g_takers_allowed{0};  // the most takers ever let in at once
std::atomic<int64_t> g_refused{0};     // calls sent to the portable kernel by the guard
std::mutex g_grow_mutex;               // one probe at a time

// True when `bytes` more of address space can be mapped now, as OpenBLAS maps its buffers
// (private, anonymous, read-write; RLIMIT_AS, the overcommit policy and the map count apply).
// Nothing is touched, so nothing is committed: the probe costs two system calls.
bool address_space_has_room(size_t bytes) {
  void* probe = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (probe == MAP_FAILED) return false;
  munmap(probe, bytes);
  return true;
}

// Counts the call in; false (and counted out again) when it could make OpenBLAS map a buffer
// that does not fit. Every true is followed by leave_openblas().
bool enter_openblas() {
  const int mine = g_takers.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (mine <= g_takers_allowed.load(std::memory_order_acquire)) return true;
  std::lock_guard<std::mutex> lock(g_grow_mutex);
  const int allowed = g_takers_allowed.load(std::memory_order_acquire);
  if (mine <= allowed || address_space_has_room(static_cast<size_t>(mine - allowed + 1) * kOpenBlasBufferBytes)) {
    g_takers_allowed.store(std::max(mine, allowed), std::memory_order_release);
    return true;
  }
  g_takers.fetch_sub(1, std::memory_order_acq_rel);
  g_refused.fetch_add(1, std::memory_order_relaxed);
  return false;
}

// Counts `workers` new pool workers in for good when their buffers and stacks fit; false
// (nothing counted) when they do not.
bool admit_workers(int workers) {
  std::lock_guard<std::mutex> lock(g_grow_mutex);
  const size_t bytes = static_cast<size_t>(workers) * (kOpenBlasBufferBytes + kWorkerStackBytes);
  if (!address_space_has_room(bytes + kOpenBlasBufferBytes)) return false;
  g_takers.fetch_add(workers, std::memory_order_acq_rel);
  g_takers_allowed.fetch_add(workers, std::memory_order_acq_rel);
  return true;
}

void leave_openblas() { g_takers.fetch_sub(1, std::memory_order_acq_rel); }

const OpenBlas& openblas() {
  static std::once_flag once;
  static OpenBlas blas;
  std::call_once(once, [] {
    load_openblas(&blas);
    // A pool started before winfer loaded the library: its workers hold their buffers already.
    g_takers.fetch_add(blas.pool_threads - 1);
    g_takers_allowed.fetch_add(blas.pool_threads - 1);
  });
  return blas;
}

// ---- portable fallback ------------------------------------------------------------------------
//
// Classic three-level blocking: a KC x NC panel of op(B) and an MC x KC panel of alpha*op(A)
// are copied ("packed") into contiguous tiles, so the transposes and leading dimensions are
// handled once in the packing and the inner kernel always reads unit-stride memory. The inner
// kernel computes a kMr x kNr tile of C in registers over the KC depth. Edge tiles are packed
// with zeros and only their valid part is added to C. Single-threaded.

constexpr int64_t kMr = 4, kNr = 16;
constexpr int64_t kKc = 256, kMc = 64, kNc = 512;

// op(A)(i, p) and op(B)(p, j) for row-major storage.
inline float op_a(const float* a, int64_t lda, bool trans, int64_t i, int64_t p) {
  return trans ? a[p * lda + i] : a[i * lda + p];
}
inline float op_b(const float* b, int64_t ldb, bool trans, int64_t p, int64_t j) {
  return trans ? b[j * ldb + p] : b[p * ldb + j];
}

// packed[tile][p][r] = alpha * op(A)(i0 + tile*kMr + r, p0 + p), zero past row i0 + mc.
void pack_a(const float* a, int64_t lda, bool trans, float alpha, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            float* packed) {
  for (int64_t t = 0; t < mc; t += kMr)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t r = 0; r < kMr; ++r) *packed++ = t + r < mc ? alpha * op_a(a, lda, trans, i0 + t + r, p0 + p) : 0.f;
}

// packed[tile][p][j] = op(B)(p0 + p, j0 + tile*kNr + j), zero past column j0 + nc.
void pack_b(const float* b, int64_t ldb, bool trans, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* packed) {
  for (int64_t t = 0; t < nc; t += kNr)
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t j = 0; j < kNr; ++j) *packed++ = t + j < nc ? op_b(b, ldb, trans, p0 + p, j0 + t + j) : 0.f;
}

struct BlockArgs {
  int64_t mc, nc, kc;
  const float* a_packed;
  const float* b_packed;
  float* c;  // top-left of the mc x nc block
  int64_t ldc;
};

// C block += A panel * B panel, one kMr x kNr tile at a time: kMr rows of kNr / kLanes vector
// accumulators (registers) over the kc depth, then the tile's valid part added to C.
template <int kLanes>
WINFER_ALWAYS_INLINE inline void block_body(const BlockArgs& b) {
  using V = cpu::Vec<kLanes>;
  constexpr int kVecs = static_cast<int>(kNr / kLanes);
  for (int64_t jr = 0; jr < b.nc; jr += kNr) {
    for (int64_t ir = 0; ir < b.mc; ir += kMr) {
      const float* ap = b.a_packed + ir * b.kc;
      const float* bp = b.b_packed + jr * b.kc;
      V acc[kMr][kVecs] = {};
      for (int64_t p = 0; p < b.kc; ++p) {
        V bv[kVecs];
        for (int v = 0; v < kVecs; ++v) bv[v] = cpu::load<kLanes>(bp + p * kNr + v * kLanes);
        for (int r = 0; r < kMr; ++r) {
          const V av = cpu::broadcast<kLanes>(ap[p * kMr + r]);
          for (int v = 0; v < kVecs; ++v) acc[r][v] += av * bv[v];
        }
      }
      float tile[kMr][kNr];
      for (int r = 0; r < kMr; ++r)
        for (int v = 0; v < kVecs; ++v) cpu::store<kLanes>(&tile[r][v * kLanes], acc[r][v]);
      const int64_t rows = std::min(kMr, b.mc - ir), cols = std::min(kNr, b.nc - jr);
      for (int64_t r = 0; r < rows; ++r) {
        float* c_row = b.c + (ir + r) * b.ldc + jr;
        for (int64_t j = 0; j < cols; ++j) c_row[j] += tile[r][j];
      }
    }
  }
}

WINFER_TARGET_AVX512 void block_avx512(const BlockArgs& b) { block_body<16>(b); }
WINFER_TARGET_AVX2 void block_avx2(const BlockArgs& b) { block_body<8>(b); }
void block_generic(const BlockArgs& b) { block_body<4>(b); }

using BlockFn = void (*)(const BlockArgs&);
BlockFn pick_block_fn() {
  switch (cpu::cpu_isa()) {
    case cpu::Isa::kAvx512: return block_avx512;
    case cpu::Isa::kAvx2: return block_avx2;
    default: return block_generic;
  }
}

// C = beta * C, with beta == 0 overwriting (C may hold NaN garbage, as BLAS allows).
void scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  if (beta == 1.f) return;
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.f)
      std::fill(row, row + n, 0.f);
    else
      for (int64_t j = 0; j < n; ++j) row[j] *= beta;
  }
}

// The blocked product over B panels of up to nc_max columns, packed into a_packed (kMc x kKc)
// and b_packed (kKc x nc_max rounded up to kNr).
void blocked_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t nc_max, float* a_packed,
                   float* b_packed) {
  const BlockFn block_fn = pick_block_fn();
  for (int64_t j0 = 0; j0 < n; j0 += nc_max) {
    const int64_t nc = std::min(nc_max, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kKc) {
      const int64_t kc = std::min(kKc, k - p0);
      pack_b(b, ldb, trans_b, p0, kc, j0, nc, b_packed);
      for (int64_t i0 = 0; i0 < m; i0 += kMc) {
        const int64_t mc = std::min(kMc, m - i0);
        pack_a(a, lda, trans_a, alpha, i0, mc, p0, kc, a_packed);
        block_fn({mc, nc, kc, a_packed, b_packed, c + i0 * ldc + j0, ldc});
      }
    }
  }
}

// B panels this wide when the heap cannot give the full ones: A and B panels then fit in
// 128 KiB of stack (a frame of its own, so the usual path does not reserve it).
constexpr int64_t kNcStack = 64;

__attribute__((noinline)) void blocked_sgemm_on_stack(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                                                      float alpha, const float* a, int64_t lda, const float* b,
                                                      int64_t ldb, float* c, int64_t ldc) {
  alignas(64) float a_stack[kMc * kKc];
  alignas(64) float b_stack[kKc * kNcStack];
  blocked_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, c, ldc, kNcStack, a_stack, b_stack);
}

void portable_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                    int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  scale_c(m, n, beta, c, ldc);
  // The panels come from the heap; the guard sends calls here when the address space is nearly
  // full, where the heap may fail too, and sgemm runs inside OpenMP regions that no exception
  // may leave: then narrower panels on the stack.
  const size_t a_floats = static_cast<size_t>(cpu::ceil_div(std::min(m, kMc), kMr) * kMr * std::min(k, kKc));
  const size_t b_floats = static_cast<size_t>(cpu::ceil_div(std::min(n, kNc), kNr) * kNr * std::min(k, kKc));
  std::unique_ptr<float[]> a_heap(new (std::nothrow) float[a_floats]);
  std::unique_ptr<float[]> b_heap(new (std::nothrow) float[b_floats]);
  if (a_heap && b_heap) {
    blocked_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, c, ldc, kNc, a_heap.get(), b_heap.get());
    return;
  }
  blocked_sgemm_on_stack(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, c, ldc);
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

}  // namespace

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.f) {  // no product term; BLAS would still scale C by beta
    scale_c(m, n, beta, c, ldc);
    return;
  }
  const OpenBlas& blas = openblas();
  const bool int_sized = fits_int(m) && fits_int(n) && fits_int(k) && fits_int(lda) && fits_int(ldb) && fits_int(ldc);
  if (blas.sgemm == nullptr || !int_sized || g_force_portable.load(std::memory_order_relaxed) || !enter_openblas()) {
    portable_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  blas.sgemm(kCblasRowMajor, trans_a ? kCblasTrans : kCblasNoTrans, trans_b ? kCblasTrans : kCblasNoTrans,
             static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
             static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  leave_openblas();
}

void gemm_set_threads(int threads) {
  const OpenBlas& blas = openblas();
  if (blas.set_num_threads == nullptr) return;
  // OpenBLAS' thread count is process-wide: concurrent callers asking for different counts
  // get a correct result with whichever count was set last. The cache avoids calling into
  // OpenBLAS (which may take its own locks) on every convolution.
  static std::mutex mutex;
  static int current = 0;
  static int pool = blas.pool_threads;  // OpenBLAS never shrinks its pool
  threads = std::max(threads, 1);
  std::lock_guard<std::mutex> lock(mutex);
  // A larger pool starts workers that each map a buffer, retried without end when it does not
  // fit (see the file comment): the pool stays as it is when there is no room for them.
  if (threads > pool) {
    if (admit_workers(threads - pool))
      pool = threads;
    else
      threads = pool;
  }
  if (threads == current) return;
  blas.set_num_threads(threads);
  current = threads;
}

std::string gemm_backend_description() { return openblas().description; }

bool gemm_uses_openblas() { return openblas().sgemm != nullptr && !g_force_portable.load(std::memory_order_relaxed); }

void gemm_force_portable_for_testing(bool force) { g_force_portable.store(force); }

int64_t gemm_calls_kept_from_openblas() { return g_refused.load(std::memory_order_relaxed); }

}  // namespace winfer
