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
cmake -S "$root" -B "$root/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$root/build" -j "$(nproc)" "${target[@]}"
