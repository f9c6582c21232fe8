# libFuzzer targets (tests/fuzz/, scripts/fuzz.sh): the YAML model loader, the safetensors
# reader, image decoding + preprocessing, the IDX reader and the ONNX importer. Needs clang and its runtimes
# (Debian: clang, libclang-rt-14-dev).
#
#   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
#         -DWINFER_FUZZ=ON -DWINFER_SANITIZE=address,undefined
#
# With WINFER_FUZZ=ON every C/C++ file gets libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link), and the five fuzz_* executables link libFuzzer's main. The same
# build can also hold the doctest suites (they then run instrumented, which costs a little speed
# and nothing else), which is how scripts/test.sh builds ASan/UBSan tests and fuzzers at once.
# ctest runs each fuzzer once over its committed corpus (tests fuzz.<target>.corpus, label fuzz),
# so every past finding kept there is replayed as a regression test.
option(WINFER_FUZZ "Build the libFuzzer targets (clang only)" OFF)
if(WINFER_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "WINFER_FUZZ=ON needs clang (-DCMAKE_CXX_COMPILER=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  foreach(lang C CXX)
    string(APPEND CMAKE_${lang}_FLAGS " -fsanitize=fuzzer-no-link")
  endforeach()
  set(winfer_fuzz_link -fsanitize=fuzzer)
  if(NOT WINFER_SANITIZE)
    message(WARNING "WINFER_FUZZ without WINFER_SANITIZE: fuzzers find crashes only, not memory errors")
  endif()
  set(winfer_fuzz_corpus ${CMAKE_CURRENT_SOURCE_DIR}/tests/fuzz/corpus)
  foreach(target model_yaml safetensors image idx onnx)
    add_executable(fuzz_${target} tests/fuzz/fuzz_${target}.cpp)
    target_compile_options(fuzz_${target} PRIVATE ${WINFER_WARNINGS})
    target_link_options(fuzz_${target} PRIVATE ${winfer_fuzz_link})
    target_link_libraries(fuzz_${target} PRIVATE winfer_runtime)
    if(BUILD_TESTING)
      # -runs=0 over a folder: every file once, fail on the first crash, leak or UB report.
      add_test(NAME fuzz.${target}.corpus
               COMMAND fuzz_${target} -runs=0 -rss_limit_mb=4096 ${winfer_fuzz_corpus}/${target})
      set_tests_properties(fuzz.${target}.corpus PROPERTIES LABELS fuzz TIMEOUT 600)
    endif()
  endforeach()
  add_custom_target(winfer_fuzzers DEPENDS fuzz_model_yaml fuzz_safetensors fuzz_image fuzz_idx fuzz_onnx)
  message(STATUS "winfer: fuzz targets on (fuzz_model_yaml, fuzz_safetensors, fuzz_image, fuzz_idx, fuzz_onnx)")
endif()
