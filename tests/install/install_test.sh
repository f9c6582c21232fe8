#!/bin/bash
# ctest install.embed_example (label "install"): installs this build into a temporary prefix,
# then, as a user of the installed package would,
#  1. builds apps/examples/embed as a project of its own with find_package(winfer) against the
#     shared library, runs it on a Fashion-MNIST example and checks its top-5 against the
#     installed CLI's `winfer classify` (same labels in the same order, probabilities within
#     1e-4) and the image's true class at rank 1;
#  2. builds it again against the static library and checks all three Fashion-MNIST models
#     (every operator they use must be in libwinfer.a);
#  3. compiles tests/install/c_smoke.c with the C compiler through pkg-config and runs it;
#  4. checks that docs/EMBEDDING.md shows apps/examples/embed/main.cpp verbatim.
# Usage: install_test.sh CMAKE BUILD_DIR SOURCE_DIR LIBDIR CXX CC
set -euo pipefail
cmake_bin=$1 build=$2 src=$3 libdir=$4 cxx=$5 cc=$6
work=$build/install-test
prefix=$work/prefix
rm -rf "$work"
mkdir -p "$work"

step() { echo "== $*"; }
die() { echo "FAIL: $*" >&2; exit 1; }

step "install into $prefix"
"$cmake_bin" --install "$build" --prefix "$prefix" > "$work/install.log" || die "cmake --install failed (see $work/install.log)"
for f in include/winfer/winfer.h include/winfer/winfer_c.h include/winfer/custom_op.h "$libdir/libwinfer.a" "$libdir/cmake/winfer/winferConfig.cmake" \
         "$libdir/pkgconfig/winfer.pc" bin/winfer; do
  [ -e "$prefix/$f" ] || die "missing after install: $f"
done
ls "$prefix/$libdir"/libwinfer.so* > /dev/null || die "missing after install: libwinfer.so"
# cuBLAS, cuDNN and the bench peers' libraries are opened on first use, never linked (docs/CUDA.md).
for f in bin/winfer "$libdir/libwinfer.so"; do
  deps=$(ldd "$prefix/$f")
  if grep -E 'libcublas|libcudnn|libdnnl|libXNNPACK' <<< "$deps"; then die "$f links a library it should open on first use"; fi
done
# The CUDA backend and the bench's CUDA timing are modules opened on first use, installed beside
# the library where this build has them; then the installed CLI must find its plug-in.
cuda_plugin=""
if [ -e "$build/$libdir/winfer/libwinfer_cuda.so" ]; then
  for f in "$libdir/winfer/libwinfer_cuda.so" "$libdir/winfer/libwinfer_bench_cuda.so"; do
    [ -e "$prefix/$f" ] || die "missing after install: $f"
  done
  cuda_plugin=1
  out=$("$prefix/bin/winfer" run "$src/models/examples/tiny_net.yaml" --input "$src/models/examples/tiny_net.input.npy" \
        --device cuda 2>&1) || true
  if grep -q "could not be loaded" <<< "$out"; then die "the installed CLI does not find its CUDA plug-in: $out"; fi
fi
# Only the public headers are installed: nothing internal (engine/src, kernels, layers).
if grep -rhoE '#include "(engine/src|kernels|layers)/' "$prefix/include"; then die "an installed header includes an internal one"; fi

# compare_top5 EXPECTED(CLI output) ACTUAL(example output)
compare_top5() {
  awk 'NR == FNR { if ($1 ~ /^[0-9]+$/ && NF >= 3) { p[$1] = $2; l = $0; sub(/^ *[0-9]+ +[^ ]+ +/, "", l); lab[$1] = l } next }
       { l = $0; sub(/^[0-9]+ +[^ ]+ +/, "", l); n++
         if (!($1 in lab)) { print "rank " $1 " missing from the CLI output"; bad = 1; next }
         if (l != lab[$1]) { print "rank " $1 ": " l " != CLI " lab[$1]; bad = 1 }
         d = $2 - p[$1]; if (d < 0) d = -d; if (d > 1.5e-4) { print "rank " $1 ": p " $2 " != CLI " p[$1]; bad = 1 } }
       END { if (n != 5) { print n " ranks, expected 5"; bad = 1 } exit bad }' "$1" "$2"
}

# check_model EMBED MODEL IMAGE EXPECTED_LABEL
check_model() {
  local exe=$1 model=$2 image=$3 expected=$4 name
  name=$(basename "$exe")-$(basename "$model" .yaml)
  "$exe" "$src/models/fashion/$model" "$src/models/fashion/examples/$image" > "$work/$name.out" 2> "$work/$name.err" ||
    { cat "$work/$name.err"; die "$exe $model $image failed"; }
  "$prefix/bin/winfer" classify "$src/models/fashion/$model" "$src/models/fashion/examples/$image" --top 5 \
    > "$work/$name.cli" 2> /dev/null || die "winfer classify $model $image failed"
  cat "$work/$name.out"
  compare_top5 "$work/$name.cli" "$work/$name.out" || die "$name: top-5 differs from winfer classify"
  local first
  first=$(head -1 "$work/$name.out" | sed -E 's/^[0-9]+ +[^ ]+ +//')
  [ "$first" = "$expected" ] || die "$name: rank 1 is '$first', expected '$expected'"
}

step "embed example against the shared library (find_package)"
"$cmake_bin" -S "$src/apps/examples/embed" -B "$work/embed-shared" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release > "$work/embed-shared.log" 2>&1 ||
  { cat "$work/embed-shared.log"; die "configuring the embed example failed"; }
"$cmake_bin" --build "$work/embed-shared" >> "$work/embed-shared.log" 2>&1 ||
  { cat "$work/embed-shared.log"; die "building the embed example failed"; }
# (ldd's output is kept first: grep -q stopping early would kill ldd with SIGPIPE under pipefail)
libs=$(ldd "$work/embed-shared/embed")
grep -q "$prefix/$libdir/libwinfer.so" <<< "$libs" || die "embed does not use the installed libwinfer.so"
check_model "$work/embed-shared/embed" fashion_resnet.yaml sneaker.png Sneaker

step "embed example against the static library"
"$cmake_bin" -S "$src/apps/examples/embed" -B "$work/embed-static" -DCMAKE_PREFIX_PATH="$prefix" -DEMBED_STATIC=ON \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release > "$work/embed-static.log" 2>&1 ||
  { cat "$work/embed-static.log"; die "configuring the static embed example failed"; }
"$cmake_bin" --build "$work/embed-static" >> "$work/embed-static.log" 2>&1 ||
  { cat "$work/embed-static.log"; die "building the static embed example failed"; }
libs=$(ldd "$work/embed-static/embed")
if grep -q libwinfer <<< "$libs"; then die "the static embed example links libwinfer.so"; fi
check_model "$work/embed-static/embed" fashion_resnet.yaml ankle_boot.png "Ankle boot"
check_model "$work/embed-static/embed" fashion_vgg.yaml trouser.png Trouser
check_model "$work/embed-static/embed" fashion_shufflenet.yaml bag.png Bag

step "C API through pkg-config"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
if command -v pkg-config > /dev/null; then
  flags=$(pkg-config --cflags --libs winfer) || die "pkg-config does not know winfer"
  [[ "$flags" == *-I*include* && "$flags" == *-lwinfer* ]] || die "pkg-config gives '$flags'"
else
  echo "pkg-config not installed: compiling with the flags winfer.pc gives, written out"
  flags="-I$prefix/include -L$prefix/$libdir -lwinfer"
fi
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -Werror -o "$work/c_smoke" "$src/tests/install/c_smoke.c" $flags \
  -Wl,-rpath,"$prefix/$libdir" || die "compiling the C smoke test failed"
out=$(WINFER_EXPECT_CUDA_PLUGIN=$cuda_plugin "$work/c_smoke" "$src/models/fashion/fashion_resnet.yaml") || die "c_smoke failed"
echo "$out"
[[ "$out" == "ok 10 "* ]] || die "c_smoke printed '$out'"

step "docs/EMBEDDING.md shows apps/examples/embed/main.cpp"
awk '/^<!-- begin apps\/examples\/embed\/main.cpp -->$/ { on = 1; next } /^<!-- end -->$/ { on = 0 } on' \
  "$src/docs/EMBEDDING.md" | sed '1{/^```/d}; ${/^```/d}' > "$work/doc_example.cpp"
cmp -s "$work/doc_example.cpp" "$src/apps/examples/embed/main.cpp" ||
  { diff "$work/doc_example.cpp" "$src/apps/examples/embed/main.cpp" | head -20; die "docs/EMBEDDING.md's example differs from apps/examples/embed/main.cpp"; }

echo "install test passed"
