#!/usr/bin/env bash
# Configures (Release) and builds winfer into build/; the CLI lands at build/bin/winfer.
# `--target NAME` (first) builds only that target and what it needs (scripts/demo.sh: the CLI,
# not the test binaries). Other arguments go to the CMake configure step, e.g.
# scripts/build.sh -DWINFER_CUDA=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=()
if [[ "${1:-}" == "--target" ]]; then
  target=(--target "$2")
  shift 2
fi
# Ninja for a new build folder (where installed): it compiles a target's objects while the
# libraries it links are still building, which make does not (on 2 cores one long compile left
# the other core idle). A folder configured before keeps its generator.
generator=()
if [[ ! -f "$root/build/CMakeCache.txt" ]] && command -v ninja > /dev/null; then generator=(-G Ninja); fi
# ccache (where installed; WINFER_CCACHE=0 turns it off): its cache in the build tree
# (build/ccache), paths under the repository hashed relative to the build folder (base_dir), so
# that another build folder beside build/ with the same flags -- the Python package's
# (scripts/python_test.sh) -- gets the engine's objects from the cache instead of compiling them
# again. Set as the compiler launcher, so it holds for any `cmake --build build` too.
launcher=()
if [[ "${WINFER_CCACHE:-1}" != 0 ]] && command -v ccache > /dev/null; then
  ccache_env="env;CCACHE_DIR=$root/build/ccache;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=true;ccache"
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER="$ccache_env" -DCMAKE_CXX_COMPILER_LAUNCHER="$ccache_env")
fi
cmake -S "$root" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
cmake --build "$root/build" -j "$(nproc)" "${target[@]}"
