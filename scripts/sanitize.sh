#!/usr/bin/env bash
# Sanitizer runs of the test suite (the sanitizer stages of scripts/test.sh, what CI runs).
#
#   scripts/sanitize.sh asan   # AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer),
#                              # build-asan/, every doctest suite and the fuzz corpora (ctest -L fuzz)
#   scripts/sanitize.sh tsan   # ThreadSanitizer, build-tsan/, the tests whose names mention threads
#                              # or concurrency
#   scripts/sanitize.sh asan -R 'image'   # extra arguments go to ctest
#
# Both use clang (Debian: clang, libclang-rt-14-dev, libomp-dev). Release-like code (-O2 -g).
#
# ASan/UBSan: any report fails the test (UBSan is built with -fno-sanitize-recover). The unrolled
# micro-kernel files (kernels/cpu/ukernel_*.cpp, the emulated im2win GEMM) are built with ASan but
# without UBSan, which doubled their compile time, their ASan checks as calls; the depthwise
# kernels without UBSan's pointer-overflow check only (cmake/sanitizers.cmake). Left out:
# the whole-network planner runs of the deepest zoo models (see below), the PyTorch parity tests (label parity: whole ImageNet models, minutes each even uninstrumented,
# and a 5 GB reference cache per build folder), the Python model-tool checks (label models: no
# C++ under test), and the cuda.*native tests (real GPU code, not instrumented; its kernels run here through
# the emulator, tests emu/*). The same build holds the libFuzzer targets (WINFER_FUZZ=ON), so
# scripts/fuzz.sh --build-dir build-asan --no-build runs them without a second build.
#
# TSan: the tests selected by name, -R '[Cc]oncurren|[Tt]hread' (so a new test only has to say
# "threads" or "concurrent" in its name to be picked up: CMake builds the files holding them
# into winfer_thread_tests). The kernels' threads are their own (kernels/cpu/thread_pool.h:
# std::thread, atomics, mutexes), all instrumented, so TSan checks the pool's hand-offs too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-}
shift || true
jobs=$(nproc)
start=$(date +%s)

# The doctest binaries of a configured build: every winfer_*_tests target, CUDA ones only in their
# emulated form (native CUDA code is not instrumented, and needs a GPU), except the whole networks
# on the emulated CUDA backend (winfer_engine_cuda_emu_tests: a second instrumented build of the
# whole engine and 56 s of one test, for layers whose emulated kernels winfer_cuda_emu_tests checks
# under ASan one by one; stage 1 runs it uninstrumented).
test_targets() {
  cmake --build "$root/$1" --target help |
    sed -n -e 's/^\.\.\. \(winfer_[a-z_]*_tests\)$/\1/p' -e 's/^\(winfer_[a-z_]*_tests\): phony$/\1/p' |
    awk '(!/cuda/ || /emu/) && !/^winfer_engine_cuda_emu_tests$/'
}

configure() {  # folder, sanitizer, extra cmake args...
  local dir=$1 sanitize=$2
  shift 2
  # WINFER_CUDA=EMU: the CUDA kernels, and whole networks on CUDA, run instrumented through the
  # host emulator; the nvcc-built native code could not be instrumented (and needs a GPU).
  # Ninja for a new folder, as scripts/build.sh does.
  local generator=()
  if [[ ! -f "$root/$dir/CMakeCache.txt" ]] && command -v ninja > /dev/null; then generator=(-G Ninja); fi
  # -O1, as the sanitizers' own docs advise: about a fifth less compile time than -O2 for both
  # stages of CI, for tests that run a little slower.
  cmake -S "$root" -B "$root/$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" -DCMAKE_C_COMPILER=clang \
        -DCMAKE_CXX_COMPILER=clang++ -DWINFER_SANITIZE="$sanitize" -DWINFER_BENCH_PEERS=OFF -DWINFER_CUDA=EMU "$@" >/dev/null
}

case "$kind" in
  asan)
    configure build-asan address,undefined -DWINFER_FUZZ=ON
    cmake --build "$root/build-asan" -j "$jobs" --target winfer $(test_targets build-asan) winfer_fuzzers
    echo "sanitize.sh: build-asan built in $(( $(date +%s) - start )) s"
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    cd "$root/build-asan"
    # The deepest zoo models' whole-network planner runs (VGG-13/16/19, ResNet-101/152) are left to
    # the uninstrumented stage: the same layers as VGG-11 and ResNet-18/34/50, which stay here, at
    # 8-12 s each under ASan.
    ctest --output-on-failure -j "$jobs" -LE 'parity|models|format' \
          -E '^cuda[.].*native$|^slow: zoo (vgg1[369]|vgg1[369]_bn|resnet101|resnet152) |^winfer_engine_cuda_emu_tests_NOT_BUILT' "$@"
    ;;
  tsan)
    configure build-tsan thread
    # Only the test files that hold thread and concurrency tests, as one binary (CMakeLists.txt:
    # winfer_thread_tests; kernels: thread counts and the pool; engine: the shared-model concurrency
    # tests, the C API's), not the CLI (its two thread-count runs are the engine's, checked here
    # in process).
    cmake --build "$root/build-tsan" -j "$jobs" --target winfer_thread_tests
    echo "sanitize.sh: build-tsan built in $(( $(date +%s) - start )) s"
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1}
    cd "$root/build-tsan"
    ctest --output-on-failure -j "$jobs" -R '[Cc]oncurren|[Tt]hread' -E '^cuda[.].*native$' "$@"
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan [ctest arguments]" >&2
    exit 2
    ;;
esac
echo "sanitize.sh $kind: done in $(( $(date +%s) - start )) s"
