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
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$root/build" -j "$(nproc)" "${target[@]}"
