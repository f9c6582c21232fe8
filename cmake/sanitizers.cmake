# Sanitizer builds (scripts/sanitize.sh, the sanitizer stages of scripts/test.sh).
#
#   cmake -S . -B build-asan -DCMAKE_CXX_COMPILER=clang++ -DWINFER_SANITIZE=address,undefined
#   cmake -S . -B build-tsan -DCMAKE_CXX_COMPILER=clang++ -DWINFER_SANITIZE=thread
#
# The flags go into CMAKE_CXX_FLAGS and the linker flags rather than add_compile_options: this
# file is included at the end of the top-level CMakeLists.txt, after the targets exist, and CMake
# applies a directory's final CMAKE_<LANG>_FLAGS to all of its targets. Only C++ (and C) is
# instrumented; nvcc never sees these flags. Every undefined-behaviour report is fatal
# (-fno-sanitize-recover), so a test that triggers one fails instead of printing and passing.
set(WINFER_SANITIZE "" CACHE STRING
    "Sanitizers for the whole build: empty (none), address,undefined, or thread (clang or gcc)")
if(WINFER_SANITIZE)
  if(WINFER_SANITIZE MATCHES "thread" AND WINFER_SANITIZE MATCHES "address")
    message(FATAL_ERROR "WINFER_SANITIZE: thread cannot be combined with address")
  endif()
  # Line tables only, not full debug info: a report still names file and line, and the objects
  # are half the size (clang, ASan + UBSan: cpu_session.cpp 12.8 -> 9.9 s, 1.4 -> 0.7 MB), which
  # the sanitizer stages of CI compile and link twice over. The build type's own -g goes too.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(winfer_sanitize_debug "-gline-tables-only")
  else()
    set(winfer_sanitize_debug "-g1")
  endif()
  foreach(lang C CXX)
    foreach(config RELWITHDEBINFO DEBUG)
      string(REGEX REPLACE "(^| )-g( |$)" " " CMAKE_${lang}_FLAGS_${config} "${CMAKE_${lang}_FLAGS_${config}}")
    endforeach()
  endforeach()
  set(winfer_sanitize_flags "-fsanitize=${WINFER_SANITIZE} -fno-omit-frame-pointer ${winfer_sanitize_debug}")
  if(WINFER_SANITIZE MATCHES "undefined")
    # float-divide-by-zero is not in 'undefined' by default and stays out: IEEE division by zero
    # is how NaN/Inf propagate through a model (docs/ERRORS.md), not a bug.
    string(APPEND winfer_sanitize_flags " -fno-sanitize-recover=undefined")
  endif()
  foreach(lang C CXX)
    string(APPEND CMAKE_${lang}_FLAGS " ${winfer_sanitize_flags}")
  endforeach()
  foreach(kind EXE SHARED MODULE)
    string(APPEND CMAKE_${kind}_LINKER_FLAGS " -fsanitize=${WINFER_SANITIZE}")
  endforeach()
  if(WINFER_SANITIZE MATCHES "undefined")
    # Third-party stb_image (engine/src/stb_image_impl.cpp) has arithmetic UB on corrupt files that
    # the fuzzer keeps finding (negative shifts in its JPEG bit buffer, int overflow parsing PNM
    # headers): not ours to fix, and harmless where it wraps. UBSan watches our code; ASan still
    # checks every memory access of stb's; image.cpp refuses the inputs we know reach the UB.
    set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/engine/src/stb_image_impl.cpp PROPERTIES COMPILE_OPTIONS "-fno-sanitize=undefined")
  endif()
  # The micro-kernel files instantiate about 110 fully unrolled tile functions per ISA, and full
  # debug info for them is most of their compile time under a sanitizer (clang, ASan + fuzzer
  # coverage: ukernel_avx512.cpp 105 s with -g, 69 s with line tables only, on the CI machine's
  # critical path). Line tables still give a report its file and line.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(winfer_kernel_options "-gline-tables-only")
  else()
    set(winfer_kernel_options "-g1")
  endif()
  # UBSan's checks on those unrolled functions doubled their compile time again (clang 14,
  # ukernel_avx512.cpp alone: 164 s with ASan + UBSan, 85 s with ASan only; the emulated
  # im2win GEMM below: 46 s against 8 s), the longest step of CI. They are intrinsics and
  # pointer arithmetic over buffers whose bounds ASan still checks on every access; UBSan
  # keeps watching everything that computes those pointers and sizes (the algorithms, the
  # planner, the loaders).
  if(WINFER_SANITIZE MATCHES "undefined")
    list(APPEND winfer_kernel_options "-fno-sanitize=undefined")
  endif()
  # At -O1 and without the fuzzers' coverage counters (which no fuzzer target needs inside a
  # micro-kernel): ukernel_avx512.cpp was still 114 s of the ASan build (release: 12 s), and ~30%
  # less with each (clang 14, measured on the CI machine). ASan keeps checking every access.
  list(APPEND winfer_kernel_options "-O1")
  if(WINFER_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND winfer_kernel_options "-fno-sanitize=fuzzer-no-link")
  endif()
  # ASan's checks as calls (__asan_load16/__asan_store64...), not inlined shadow-memory tests:
  # ukernel_avx512.cpp was still 97-106 s of CI's ASan build (one third of its CPU time), and
  # is 26-28 s this way (clang 14, user time; 7 s without ASan at all). Its masked loads and stores
  # are checked lane by lane, and inlining those checks into ~110 unrolled tiles is what took the
  # time. Every access is checked all the same, only through a call; the zoo and kernel tests
  # under ASan ran as fast either way (same source, one build: resnet50 and vgg11 planned and
  # poisoned, im2win on every ISA, within the noise).
  if(WINFER_SANITIZE MATCHES "address" AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    list(APPEND winfer_kernel_options -mllvm -asan-instrumentation-with-call-threshold=0)
  endif()
  foreach(isa avx512 avx2 generic)
    set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/kernels/cpu/ukernel_${isa}.cpp PROPERTIES
                                COMPILE_OPTIONS "${winfer_kernel_options}")
  endforeach()
  # The depthwise kernels (kernels/cpu/conv_depthwise.cpp: vector tiles per ISA, unrolled) were
  # CI's longest sanitizer compile: 96-105 s (clang 14, ASan + UBSan + fuzzer coverage, -O1),
  # against 14 s in Release. UBSan's pointer-overflow check (does p + i wrap around the address
  # space?) on their unrolled pointer arithmetic was 52 s of it, the fuzzers' coverage counters
  # 12 s more (no fuzz target reaches a kernel): without both, 28 s. ASan still checks every
  # access through those pointers, and UBSan's other checks (integer overflow, shifts, bounds,
  # alignment, ...) stay on for the whole file, unlike the micro-kernels above.
  if(WINFER_SANITIZE MATCHES "undefined" OR WINFER_FUZZ)
    set(winfer_depthwise_options "")
    if(WINFER_SANITIZE MATCHES "undefined")
      list(APPEND winfer_depthwise_options "-fno-sanitize=pointer-overflow")
    endif()
    if(WINFER_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      list(APPEND winfer_depthwise_options "-fno-sanitize=fuzzer-no-link")
    endif()
    set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/kernels/cpu/conv_depthwise.cpp PROPERTIES
                                COMPILE_OPTIONS "${winfer_depthwise_options}")
  endif()
  # The emulated CUDA kernels (kernels/cuda/*.cu compiled as C++ for the host emulator) unroll
  # 17 tile shapes of the im2win GEMM: 122 s for that one file at -O2 under ASan, 47 s at -O1
  # (clang, the CI machine's critical path), 8 s without UBSan (as the micro-kernels above);
  # their tests take about a second either way. Most of UBSan is back on for it (issue 26):
  # clang 14, ASan + UBSan + fuzzer coverage, user time of that file: 6.4 s without UBSan,
  # 7.3 s with alignment only, 12.4 s with the checks below, 45 s with all but pointer-overflow,
  # 60 s with all. Left off: pointer-overflow, object-size, float-cast-overflow, vptr, function,
  # the nonnull and builtin checks (ASan still checks every access).
  if(TARGET winfer_cuda_emu)
    target_compile_options(winfer_cuda_emu PRIVATE -O1)
    if(WINFER_SANITIZE MATCHES "undefined")
      set_source_files_properties(
        ${CMAKE_BINARY_DIR}/cuda_emu/conv_im2win.cu.cpp PROPERTIES COMPILE_OPTIONS
        "-fno-sanitize=undefined;-fsanitize=alignment,bounds,shift,integer-divide-by-zero,null,return,unreachable,vla-bound,signed-integer-overflow")
    endif()
  endif()
  # libFuzzer's coverage instrumentation (WINFER_FUZZ: -fsanitize=fuzzer-no-link on every file,
  # cmake/fuzz.cmake) only where a fuzz target can reach: the fuzzers link winfer_runtime, never
  # the test binaries, doctest's main, the CLI or the bench library. Their objects were 10-14% of
  # their compile time in coverage counters (clang 14, ASan + UBSan, user time: apps/winfer/main.cpp
  # 18.6 -> 16.4 s, cmd_bench_model.cpp 12.0 -> 10.8 s, bench/report.cpp 7.1 -> 6.1 s, tests/engine/
  # onnx_import_test.cpp at -O0 5.2 -> 4.6 s, tests/kernels/conv_test.cpp 4.1 -> 3.6 s). The link
  # keeps the flag (CMAKE_CXX_FLAGS), so the instrumented libraries still find the coverage runtime.
  # (Tried and not kept: the CLI and bench library at -O0 compiled 2-2.8x faster, ~35 CPU-s of the
  # ASan build, but the CLI tests ran ~30% slower: ctest -R '^cli' 20.5-22.2 -> 26.8-28.1 s user.)
  if(WINFER_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    foreach(target winfer winfer_bench winfer_doctest_main winfer_kernel_tests winfer_core_tests winfer_engine_tests
                   winfer_cuda_emu_tests winfer_engine_cuda_emu_tests winfer_parity_unfused)
      if(TARGET ${target})
        target_compile_options(${target} PRIVATE -fno-sanitize=fuzzer-no-link)
      endif()
    endforeach()
  endif()
  # Unity builds (batches of 8 files) of the libraries: the same headers are parsed once per
  # batch instead of once per file. clang 14, user + sys time of one batch against its files one
  # by one, interleaved: ASan + UBSan + fuzzer coverage, -O1: winfer_engine's model loader and
  # ONNX importer batch 33.8-37.9 -> 24.6-25.9 s, winfer_core 28.3 -> 23.4 s, a winfer_kernels
  # batch 14.9 -> 13.1 s; TSan: that winfer_engine batch 32.4 -> 21.1 s, a winfer_layers batch
  # 7.9 -> 2.5 s. Files with options of their own (stb_image above) stay out of the batches. Not
  # the kernels (the least gain, and their files define the same internal names: Geometry,
  # RowArgs...), nor the CLI (36.7 -> 35.0 s: its time is code generation), nor the test binaries
  # (their files define the same helper names, and they are precompiled already).
  # The release build stays file by file, so a missing include still shows there.
  # WINFER_SANITIZE_UNITY=OFF builds them file by file (e.g. should a new file clash with another
  # one's internal names in the same batch).
  option(WINFER_SANITIZE_UNITY "Sanitizer builds: compile the engine's libraries as unity batches" ON)
  if(WINFER_SANITIZE_UNITY)
    set_target_properties(winfer_core winfer_layers winfer_engine PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE 8)
  endif()
  message(STATUS "winfer: sanitizers on: ${WINFER_SANITIZE} (${CMAKE_CXX_COMPILER_ID})")
endif()
