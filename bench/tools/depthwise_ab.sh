#!/bin/sh
# Builds and runs bench/tools/depthwise_ab.cpp: the depthwise kernel of the working tree against
# the one at git revision OLD_REV and oneDNN, called in turn in one process.
#
#   bench/tools/depthwise_ab.sh [OLD_REV] [ROUNDS] [FILTER]
#
# OLD_REV defaults to ef22dbd (before issue 23's depthwise rewrite). Needs oneDNN's headers
# (Debian libdnnl-dev) and the kernels built (cmake --build build --target winfer_kernels);
# writes only into build/depthwise_ab/. WINFER_ISA=avx2 runs the AVX2 kernels (then cap oneDNN
# too: ONEDNN_MAX_CPU_ISA=AVX2). The old revision's file must still compile against today's
# headers (kernels/cpu/conv_algorithm.h).
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OUT=$BUILD/depthwise_ab
REV=${1:-ef22dbd}
mkdir -p "$OUT"
git -C "$ROOT" show "$REV:kernels/cpu/conv_depthwise.cpp" > "$OUT/old_depthwise.cpp"
FLAGS="-O3 -DNDEBUG -fopenmp -std=c++17 -I$ROOT -I$ROOT/engine/include"
CXX=${CXX:-g++}
$CXX $FLAGS -w -Ddepthwise_conv_algorithm=old_dw_algo -c "$OUT/old_depthwise.cpp" -o "$OUT/old.o"
$CXX $FLAGS -Ddepthwise_conv_algorithm=new_dw_algo -c "$ROOT/kernels/cpu/conv_depthwise.cpp" -o "$OUT/new.o"
$CXX $FLAGS -c "$ROOT/bench/peers/onednn_peer.cpp" -o "$OUT/peer.o"
$CXX $FLAGS -c "$ROOT/bench/tools/depthwise_ab.cpp" -o "$OUT/main.o"
$CXX -fopenmp "$OUT/main.o" "$OUT/old.o" "$OUT/new.o" "$OUT/peer.o" "$BUILD/libwinfer_kernels.a" \
  "$BUILD/libwinfer_core.a" -ldnnl -o "$OUT/depthwise_ab"
shift 2>/dev/null || true
exec "$OUT/depthwise_ab" "$@"
