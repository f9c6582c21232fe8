#!/bin/sh
# Builds and runs bench/tools/spin_probe.cpp against the built libwinfer.so: what winfer's
# OpenMP workers cost another library's next call after a multi-threaded run, and what
# sleeping them costs winfer's back-to-back runs (docs/PERFORMANCE.md, "Idle workers").
#
#   bench/tools/spin_probe.sh [MODEL] [THREADS] [BATCH] [ROUNDS] [OTHER_MS] [--no-pause-mode]
#
# Defaults: resnet18 2 1 30 1.0. Needs build/lib/libwinfer.so (cmake --build build --target
# winfer_shared); writes only into build/spin_probe/.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/spin_probe
mkdir -p "$OUT"
${CXX:-g++} -O2 -std=c++17 -fopenmp -pthread -I"$ROOT/engine/include" "$ROOT/bench/tools/spin_probe.cpp" \
  -L"$BUILD/lib" -lwinfer -Wl,-rpath,"$BUILD/lib" -o "$OUT/spin_probe"
MODEL=${1:-resnet18}
case $MODEL in *.yaml) ;; *) MODEL=$ROOT/models/zoo/$MODEL.yaml ;; esac
# OpenBLAS loads with the program, before winfer could pick its core (kernels/cpu/gemm.cpp): the
# same rule here. SkylakeX only with AVX-512 (on an AVX2-only CPU its kernels die with SIGILL).
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -q avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
exec "$OUT/spin_probe" "$MODEL" "${2:-2}" "${3:-1}" "${4:-30}" "${5:-1.0}" ${6:+"$6"}
