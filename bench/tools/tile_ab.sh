#!/bin/sh
# Builds and runs bench/tools/tile_ab.cpp: one ISA's convolution micro-kernels as they are
# (kernels/cpu/ukernel_conv_body.h) against a modified copy of that header, in one process,
# called in turn on 1x1 layers' tiles (warm, or COPIES buffers used in turn).
#
#   [ISA=avx2|avx512] [BASE=DIR] bench/tools/tile_ab.sh VARIANT_DIR [ROUNDS [COPIES ["P C Co [D]" ...]]]
#   e.g. mkdir -p build/variant/kernels/cpu && cp kernels/cpu/ukernel_conv_body.h build/variant/kernels/cpu/
#        (edit the copy), then ISA=avx512 bench/tools/tile_ab.sh build/variant 41 8
#
# VARIANT_DIR holds kernels/cpu/ukernel_conv_body.h and, optionally, kernels/cpu/ukernel_$ISA.cpp
# (ISA: avx2, the default, or avx512); only the kernel body and the ISA file may differ (TileArgs
# is shared). BASE=DIR: the base build from such a directory too (two variants against each
# other) instead of the repository's files. TILE_AB_COLD_WEIGHTS=1 and TILE_AB_WARM_ACTS=1: see
# tile_ab.cpp. Needs the kernels built (cmake --build build --target winfer_kernels); writes only
# into build/tile_ab/. The two builds differ in code placement too: identical bodies measured
# 0.95-1.0 on AMD (session 20) and 0.98-1.0 on Intel (session 36), so read ratios within ~5% of
# 1 as ties.
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
VARIANT=$(cd "${1:?usage: tile_ab.sh VARIANT_DIR [ROUNDS [COPIES]]}" && pwd)
OUT=$BUILD/tile_ab
mkdir -p "$OUT"
CXX=${CXX:-g++}
FLAGS="-O3 -DNDEBUG -Wall -Wextra -std=c++17"
ISA=${ISA:-avx2}  # avx2 or avx512: which micro-kernel file and table
case $ISA in
  avx2) SYM=_ZN6winfer3cpu17tile_kernels_avx2Ev ;;
  avx512) SYM=_ZN6winfer3cpu19tile_kernels_avx512Ev ;;
  *) echo "tile_ab.sh: ISA=$ISA: expected avx2 or avx512" >&2; exit 2 ;;
esac
# BASE=DIR: the base build from DIR's copies (like VARIANT_DIR) instead of the repository's.
BASE_INC=$ROOT BASE_SRC=$ROOT/kernels/cpu/ukernel_$ISA.cpp
if [ -n "${BASE:-}" ]; then
  BASE_INC=$(cd "$BASE" && pwd)
  [ -f "$BASE_INC/kernels/cpu/ukernel_$ISA.cpp" ] && BASE_SRC=$BASE_INC/kernels/cpu/ukernel_$ISA.cpp
fi
$CXX $FLAGS -I"$BASE_INC" -I"$ROOT" -c "$BASE_SRC" -o "$OUT/base0.o"
# The variant's own ukernel_avx2.cpp when it has one (an assembly loop lives there).
VARIANT_SRC=$ROOT/kernels/cpu/ukernel_$ISA.cpp
[ -f "$VARIANT/kernels/cpu/ukernel_$ISA.cpp" ] && VARIANT_SRC=$VARIANT/kernels/cpu/ukernel_$ISA.cpp
# The variant's make_tile_kernels renamed: GCC emits that template's instances as weak symbols,
# and the linker would keep one build's for both tables (both then pointing at the same kernels).
$CXX $FLAGS -Dmake_tile_kernels=make_tile_kernels_variant -I"$VARIANT" -I"$ROOT" -c "$VARIANT_SRC" -o "$OUT/variant0.o"
objcopy --redefine-sym $SYM=winfer_tile_ab_base "$OUT/base0.o" "$OUT/base.o"
objcopy --redefine-sym $SYM=winfer_tile_ab_variant "$OUT/variant0.o" "$OUT/variant.o"
$CXX $FLAGS -I"$ROOT" "$ROOT/bench/tools/tile_ab.cpp" "$OUT/base.o" "$OUT/variant.o" "$BUILD/libwinfer_kernels.a" \
  "$BUILD/libwinfer_core.a" -fopenmp -lopenblas -o "$OUT/tile_ab"
shift
exec "$OUT/tile_ab" "$@"
