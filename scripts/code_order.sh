#!/usr/bin/env bash
# Regenerates cmake/code_order.txt, the functions that libwinfer.so's and the CLI's link puts first
# and together (cmake/code_order.cmake): builds libwinfer.so with every function on a page of its
# own into build-code-order/ (-DWINFER_CODE_ORDER_TRACE=ON; no CUDA: a CPU session runs none of
# the plug-in loader's code), then traces the zoo's networks through it (bench/tools/code_order.py).
# Run it after changes that rename or add much of what a network executes: tests/code_order_test.py
# fails when the list names too few of the library's functions. About 10 minutes on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${WINFER_CODE_ORDER_BUILD:-$root/build-code-order}
generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja > /dev/null; then generator=(-G Ninja); fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DWINFER_CODE_ORDER_TRACE=ON \
  -DWINFER_CUDA=OFF -DWINFER_BUILD_TESTS=OFF > /dev/null
cmake --build "$build" -j "$(nproc)" --target winfer_lib
/usr/bin/python3 "$root/bench/tools/code_order.py" --build "$build" "$@"
