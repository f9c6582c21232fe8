#!/bin/sh
# Builds and runs bench/tools/core_pingpong.cpp: the round trip of a cache line between two CPUs
# (which minutes a 2-thread benchmark ran in: docs/PERFORMANCE.md, session 29).
#
#   bench/tools/core_pingpong.sh [CPU_A CPU_B] [ROUND_TRIPS]     defaults: 0 1 1000000
#
# Writes only into build/core_pingpong/.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BUILD:-$ROOT/build}/core_pingpong
mkdir -p "$OUT"
[ "$OUT/core_pingpong" -nt "$ROOT/bench/tools/core_pingpong.cpp" ] ||
  ${CXX:-g++} -O2 -std=c++17 -pthread "$ROOT/bench/tools/core_pingpong.cpp" -o "$OUT/core_pingpong"
exec "$OUT/core_pingpong" "$@"
