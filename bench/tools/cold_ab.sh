#!/bin/sh
# Builds and runs bench/tools/cold_ab.cpp: im2win against oneDNN on activations out of the
# caches (COPIES buffers used in turn), called in turn in one process.
#
#   bench/tools/cold_ab.sh THREADS BATCH ROUNDS COPIES "C H Co K S P R" ...
#   e.g. bench/tools/cold_ab.sh 1 1 150 8 "64 56 64 3 1 1 0" "64 56 256 1 1 0 0"
#
# Needs oneDNN's headers (Debian libdnnl-dev) and the kernels built (cmake --build build
# --target winfer_kernels); writes only into build/cold_ab/.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/cold_ab
mkdir -p "$OUT"
FLAGS="-O3 -DNDEBUG -fopenmp -std=c++17 -I$ROOT -I$ROOT/engine/include"
CXX=${CXX:-g++}
$CXX $FLAGS -c "$ROOT/bench/peers/onednn_peer.cpp" -o "$OUT/peer.o"
$CXX $FLAGS -c "$ROOT/bench/tools/cold_ab.cpp" -o "$OUT/main.o"
$CXX -fopenmp "$OUT/main.o" "$OUT/peer.o" "$BUILD/libwinfer_kernels.a" "$BUILD/libwinfer_core.a" -ldnnl -lopenblas \
  -o "$OUT/cold_ab"
# OpenBLAS loads with the program, before winfer could pick its core (kernels/cpu/gemm.cpp): the
# same rule here. SkylakeX only with AVX-512 (on an AVX2-only CPU its kernels die with SIGILL).
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -q avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
exec "$OUT/cold_ab" "$@"
