#!/bin/sh
# Builds and runs bench/tools/int8_layers.cpp (INT8 im2win/indirect vs FP32 im2win on ResNet-50
# layers, with the VNNI and FMA peaks) against the built kernels:
#
#   bench/tools/int8_layers.sh [ROUNDS=60] [THREADS=1] [FILTER]
#
# Needs cmake --build build --target winfer_kernels first; writes only build/int8_layers/.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/int8_layers
mkdir -p "$OUT"
CXX=${CXX:-g++}
$CXX -O2 -DNDEBUG -fopenmp -std=c++17 -I"$ROOT" -I"$ROOT/engine/include" "$ROOT/bench/tools/int8_layers.cpp" \
  "$BUILD/libwinfer_kernels.a" "$BUILD/libwinfer_core.a" -ldl -o "$OUT/int8_layers"
exec "$OUT/int8_layers" "$@"
