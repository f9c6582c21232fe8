#!/usr/bin/env bash
# Configures (Release) and builds winfer into build/; the CLI lands at build/bin/winfer.
# Extra arguments go to the CMake configure step, e.g. scripts/build.sh -DWINFER_CUDA=OFF.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$root/build" -j "$(nproc)"
