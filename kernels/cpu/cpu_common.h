// Small helpers shared by the CPU kernels (internal: not part of the engine-facing contract).
//
// ISA dispatch. The project is built for the baseline x86-64 ISA (SSE2) so that binaries run
// anywhere; the few loops that dominate run time (direct/depthwise convolution, the fallback
// GEMM) are compiled three times from one body and picked at run time:
//
//   template <int kLanes> WINFER_ALWAYS_INLINE inline void body(...) { ... }  // uses Vec<kLanes>
//   WINFER_TARGET_AVX512 void body_avx512(...) { body<16>(...); }            // wrappers
//   WINFER_TARGET_AVX2   void body_avx2(...)   { body<8>(...); }
//   void body_generic(...)                     { body<4>(...); }
//   ... switch (cpu_isa()) { ... }                                           // pick one
//
// An always_inline callee compiled for the default target may be inlined into a caller with a
// wider target, so the body is compiled with the caller's ISA. On other CPUs the target macros
// are empty and the three wrappers are identical. (Bodies that need intrinsics cannot use this
// scheme, since an intrinsic is not inlined into a default-target template: the convolution
// micro-kernels are compiled per ISA file instead, see ukernel_conv_body.h.)
//
// The environment variable WINFER_ISA=avx512|avx2|generic lowers the ISA every dispatching
// kernel uses (read once), so that the narrower kernels can be run and timed on a wider CPU.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "kernels/common/conv_params.h"
#include "kernels/cpu/thread_pool.h"

#if !defined(__GNUC__) && !defined(__clang__)
#error "winfer's CPU kernels use GCC/Clang extensions (vector types, always_inline, target)"
#endif

#define WINFER_ALWAYS_INLINE __attribute__((always_inline))
#if defined(__x86_64__) || defined(__i386__)
#define WINFER_X86_DISPATCH 1
#define WINFER_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")))
#define WINFER_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define WINFER_X86_DISPATCH 0
#define WINFER_TARGET_AVX512
#define WINFER_TARGET_AVX2
#endif

// Around AVX-512 intrinsic code: GCC 12's AVX-512 headers initialise their _mm512_undefined_*
// placeholders from themselves, which it reports as uninitialised once inlined (GCC bug 105593,
// a false positive fixed in GCC 13).
#if defined(__clang__)
#define WINFER_AVX512_WARNINGS_BEGIN
#define WINFER_AVX512_WARNINGS_END
#else
#define WINFER_AVX512_WARNINGS_BEGIN                                                   \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
      _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define WINFER_AVX512_WARNINGS_END _Pragma("GCC diagnostic pop")
#endif

// GCC warns (-Wpsabi) that returning a 32/64-byte vector by value has a different ABI with and
// without AVX, at every call of the helpers below from a default-target function. They are
// always_inline and never called across an ABI boundary, so the warning is silenced for the
// kernel files that include this (internal) header. (Vector parameters are passed by
// reference: GCC's note about their ABI cannot be silenced.)
#pragma GCC diagnostic ignored "-Wpsabi"

namespace winfer {
namespace cpu {

// Fixed-width float vectors (GCC/Clang vector extensions). Arithmetic on them compiles to the
// ISA of the enclosing function (one zmm, two ymm or four xmm registers for Vec<16>), and a
// local Vec stays in a register where a local float array may be kept in memory by the
// optimiser. Only the widths below are used (an alias template cannot carry the attribute).
template <int kLanes>
struct VecOf;
template <>
struct VecOf<4> {
  typedef float type __attribute__((vector_size(16)));
};
template <>
struct VecOf<8> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct VecOf<16> {
  typedef float type __attribute__((vector_size(64)));
};
template <int kLanes>
using Vec = typename VecOf<kLanes>::type;

// Unaligned load/store (memcpy compiles to one vector move).
template <int kLanes>
WINFER_ALWAYS_INLINE inline Vec<kLanes> load(const float* p) {
  Vec<kLanes> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <int kLanes>
WINFER_ALWAYS_INLINE inline void store(float* p, const Vec<kLanes>& v) {
  std::memcpy(p, &v, sizeof v);
}
// All lanes = x. For GCC written as "x in lane 0, then shuffle lane 0 everywhere": the obvious
// spellings (`x - Vec{}`, a lane-by-lane loop, {x, x, ...}) become 16 masked inserts once this
// default-target helper is inlined into an AVX-512 function, while the shuffle stays one
// vbroadcastss.
template <int kLanes>
WINFER_ALWAYS_INLINE inline Vec<kLanes> broadcast(float x) {
#if defined(__clang__)
  Vec<kLanes> v;
  for (int i = 0; i < kLanes; ++i) v[i] = x;
  return v;
#else
  Vec<kLanes> v = {};
  v[0] = x;
  typedef int Index __attribute__((vector_size(sizeof(Vec<kLanes>))));
  return __builtin_shuffle(v, Index{});
#endif
}

enum class Isa { kGeneric = 0, kAvx2 = 1, kAvx512 = 2 };

// The widest of the ISAs above that this CPU (and OS) supports.
inline Isa hardware_isa() {
#if WINFER_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw"))
    return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
#endif
  return Isa::kGeneric;
}

// The ISA `WINFER_ISA` names ("avx512", "avx2", "generic"); `fallback` when the variable is
// unset or names none of them.
inline Isa isa_from_env(Isa fallback) {
  const char* v = std::getenv("WINFER_ISA");
  if (v == nullptr) return fallback;
  if (std::strcmp(v, "avx512") == 0) return Isa::kAvx512;
  if (std::strcmp(v, "avx2") == 0) return Isa::kAvx2;
  if (std::strcmp(v, "generic") == 0) return Isa::kGeneric;
  return fallback;
}

// The ISA the kernels may use: the hardware's, lowered by the environment variable
// WINFER_ISA=avx512|avx2|generic when set (to run or time the narrower kernels on a wider
// CPU; it never raises the ISA above the hardware's, and other values are ignored). Read once,
// at the first kernel call.
inline Isa detected_isa() {
  static const Isa isa = [] {
    const Isa hw = hardware_isa();
    return static_cast<Isa>(std::min(static_cast<int>(hw), static_cast<int>(isa_from_env(hw))));
  }();
  return isa;
}

inline std::atomic<int>& isa_cap() {
  static std::atomic<int> cap{static_cast<int>(Isa::kAvx512)};
  return cap;
}

// The ISA the dispatching kernels use: the detected one, unless a test capped it lower.
inline Isa cpu_isa() {
  return static_cast<Isa>(std::min(static_cast<int>(detected_isa()), isa_cap().load(std::memory_order_relaxed)));
}

// Test hook: run the kernels' narrower variants (e.g. the generic one on an AVX-512 machine)
// so that every variant is checked. Never raises the ISA above what the CPU supports.
inline void set_isa_cap_for_testing(Isa cap) { isa_cap().store(static_cast<int>(cap)); }

// Threads worth using for `work` units of roughly one multiply-add each: starting an OpenMP
// team costs a few microseconds, so tiny tensors run on the calling thread.
inline int threads_for_work(int threads, int64_t work) {
  constexpr int64_t kMinWorkPerThread = 1 << 15;
  if (threads <= 1 || work < 2 * kMinWorkPerThread) return 1;
  return static_cast<int>(std::min<int64_t>(threads, work / kMinWorkPerThread));
}

// A fused activation as a clamp [lo, hi], so epilogues are branch-free and vectorise: kNone is
// [-inf, inf] (exact identity), kRelu [0, inf], kRelu6 [0, 6]. NaN passes through unchanged
// (as in PyTorch's relu), unlike apply_activation(), which maps a NaN to 0 under relu.
struct Clamp {
  float lo, hi;
};
inline Clamp activation_clamp(Activation a) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (a == Activation::kRelu) return {0.f, kInf};
  if (a == Activation::kRelu6) return {0.f, 6.f};
  return {-kInf, kInf};
}
inline float clamp(float v, Clamp c) {
  v = v < c.lo ? c.lo : v;
  return v > c.hi ? c.hi : v;
}

// Runs body(begin, end) over [0, count) in contiguous chunks, a few per thread (thread_pool.h);
// each item costs about `item_work` element operations.
template <typename Body>
void parallel_chunks(int64_t count, int64_t item_work, int threads, Body body) {
  const int nt = threads_for_work(threads, count * item_work);
  if (nt <= 1) {
    body(int64_t{0}, count);
    return;
  }
  parallel_pieces(nt, count, pieces_for(nt, count, count * item_work),
                  [&](int64_t begin, int64_t end, int) { body(begin, end); });
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Valid kernel taps [first, last) along one axis for an output coordinate whose window starts
// at input coordinate `start` (may be negative): the taps t with 0 <= start + t*dilation < size.
// Empty (first == last) when the whole window lies in the padding.
inline void valid_taps(int64_t start, int64_t dilation, int64_t kernel, int64_t size, int64_t* first, int64_t* last) {
  const int64_t f = start >= 0 ? 0 : ceil_div(-start, dilation);            // first t with start + t*d >= 0
  const int64_t l = start >= size ? 0 : (size - 1 - start) / dilation + 1;  // past last t with start + t*d < size
  *first = std::min(f, kernel);
  *last = std::max(std::min(l, kernel), *first);
}

}  // namespace cpu
}  // namespace winfer
