#!/bin/sh
# Builds and runs bench/tools/tile_ab.cpp: the AVX2 convolution micro-kernels as they are
# (kernels/cpu/ukernel_conv_body.h) against a modified copy of that header, in one process,
# called in turn on 1x1 layers' tiles (warm, or COPIES buffers used in turn).
#
#   bench/tools/tile_ab.sh VARIANT_DIR [ROUNDS [COPIES ["P C Co" ...]]]
#   e.g. mkdir -p build/variant/kernels/cpu && cp kernels/cpu/ukernel_conv_body.h build/variant/kernels/cpu/
#        (edit the copy), then bench/tools/tile_ab.sh build/variant 41 8
#
# VARIANT_DIR holds kernels/cpu/ukernel_conv_body.h and, optionally, kernels/cpu/ukernel_avx2.cpp
# (only the kernel body and the AVX2 file may differ: TileArgs is shared). Needs the kernels built (cmake --build build --target winfer_kernels); writes only
# into build/tile_ab/. The two builds differ in code placement too: identical bodies measured
# 0.95-1.0 here, so read ratios within ~5% of 1 as ties.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
VARIANT=$(cd "${1:?usage: tile_ab.sh VARIANT_DIR [ROUNDS [COPIES]]}" && pwd)
OUT=$BUILD/tile_ab
mkdir -p "$OUT"
CXX=${CXX:-g++}
FLAGS="-O3 -DNDEBUG -Wall -Wextra -std=c++17"
SYM=_ZN6winfer3cpu17tile_kernels_avx2Ev
$CXX $FLAGS -I"$ROOT" -c "$ROOT/kernels/cpu/ukernel_avx2.cpp" -o "$OUT/base0.o"
# The variant's own ukernel_avx2.cpp when it has one (an assembly loop lives there).
VARIANT_SRC=$ROOT/kernels/cpu/ukernel_avx2.cpp
[ -f "$VARIANT/kernels/cpu/ukernel_avx2.cpp" ] && VARIANT_SRC=$VARIANT/kernels/cpu/ukernel_avx2.cpp
$CXX $FLAGS -I"$VARIANT" -I"$ROOT" -c "$VARIANT_SRC" -o "$OUT/variant0.o"
objcopy --redefine-sym $SYM=winfer_tile_ab_base "$OUT/base0.o" "$OUT/base.o"
objcopy --redefine-sym $SYM=winfer_tile_ab_variant "$OUT/variant0.o" "$OUT/variant.o"
$CXX $FLAGS -I"$ROOT" "$ROOT/bench/tools/tile_ab.cpp" "$OUT/base.o" "$OUT/variant.o" "$BUILD/libwinfer_kernels.a" \
  "$BUILD/libwinfer_core.a" -fopenmp -lopenblas -o "$OUT/tile_ab"
shift
exec "$OUT/tile_ab" "$@"
