#!/bin/sh
# Builds and runs bench/tools/winograd_tiles.cpp: winograd F(2x2), F(4x4) and F(6x6) (forced)
# against im2win per layer, called in turn in one process.
#
#   bench/tools/winograd_tiles.sh [THREADS] [BATCH] [ROUNDS] [FILTER]
#   WINFER_FLUSH_MIB=96 bench/tools/winograd_tiles.sh ...   # weights cold even beyond a 32 MiB L3
#
# Needs the kernels built (cmake --build build --target winfer_kernels); writes only into
# build/winograd_tiles/.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/winograd_tiles
mkdir -p "$OUT"
${CXX:-g++} -O3 -DNDEBUG -fopenmp -std=c++17 -I"$ROOT" -I"$ROOT/engine/include" "$ROOT/bench/tools/winograd_tiles.cpp" \
  "$BUILD/libwinfer_core.a" "$BUILD/libwinfer_kernels.a" -o "$OUT/winograd_tiles"
exec "$OUT/winograd_tiles" "$@"
