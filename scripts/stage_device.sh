#!/usr/bin/env bash
# Builds winfer's native CUDA binaries on this (CPU) machine and stages them into one folder that
# runs on a GPU machine which has only a driver, the CUDA runtime libraries (cuBLAS, cuDNN: the
# toolkit's or PyTorch's pip packages) and glibc: docs/CUDA.md, "The device check from a carried
# build".
#
#   scripts/stage_device.sh [--build-dir DIR] [-o FOLDER] [--no-build] [--allow-partial]
#
# --build-dir DIR   the build folder (default build/). build/ is built under the shared build lock
#                   ($WINFER_BUILD_LOCK, default /tmp/winfer-build.lock); a folder that does not
#                   exist yet is configured first (Release, WINFER_CUDA=ON, no bench peers, ccache
#                   where installed, as scripts/build.sh does)
# -o FOLDER         the staged folder (default build/device-stage; emptied first)
# --no-build        stage what DIR holds, build nothing (CI: tests/device_stage_test.sh)
# --allow-partial   with --no-build: leave out the native test binaries when DIR has not built
#                   them (they are EXCLUDE_FROM_ALL on machines without nvidia-smi) instead of failing
#
# The folder:
#   bin/       winfer, winfer_cuda_tests, winfer_engine_cuda_tests (no RPATH: device_check.sh and
#              env.sh put lib/ on LD_LIBRARY_PATH)
#   lib/winfer/ the CUDA backend plug-in and the CUDA layer-bench module (cudart linked statically;
#              found by the CLI as bin/../lib/winfer)
#   lib/       every shared library they need that is neither glibc nor a CUDA/driver library
#              (yaml-cpp, protobuf-lite, zlib, ...)
#   lib/gcc/   libstdc++, libgcc_s, libgomp of this machine: used on the device only where its own
#              are missing or older than what the binaries need (device_check.sh decides)
#   models/, bench/layers/   the model files and layer sets the check uses (random weights: no
#              large weight files)
#   device_check.sh, env.sh, stage.env, MANIFEST.txt
# Then scripts/check_stage.sh checks the folder (self-contained, size) and exits with its status.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
out="$root/build/device-stage"
do_build=1
allow_partial=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    -o) out="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --allow-partial) allow_partial=1; shift ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "stage_device.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
die() { echo "stage_device.sh: $*" >&2; exit 1; }

tools=(readelf ldd)
for t in "${tools[@]}"; do command -v "$t" > /dev/null || die "'$t' is needed to find the libraries to stage"; done

clis=(winfer)
tests=(winfer_cuda_tests winfer_engine_cuda_tests)
modules=(libwinfer_cuda.so libwinfer_bench_cuda.so)

# ---- build
if [[ $do_build == 1 ]]; then
  lock=()
  if [[ "$build" == "$root/build" ]] && command -v flock > /dev/null; then lock=(flock "${WINFER_BUILD_LOCK:-/tmp/winfer-build.lock}"); fi
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    generator=()
    if command -v ninja > /dev/null; then generator=(-G Ninja); fi
    launcher=()
    if [[ "${WINFER_CCACHE:-1}" != 0 ]] && command -v ccache > /dev/null; then
      ccache_env="env;CCACHE_DIR=$root/build/ccache;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=true;ccache"
      launcher=(-DCMAKE_C_COMPILER_LAUNCHER="$ccache_env" -DCMAKE_CXX_COMPILER_LAUNCHER="$ccache_env"
                -DCMAKE_CUDA_COMPILER_LAUNCHER="$ccache_env")
    fi
    echo "configuring $build (Release, WINFER_CUDA=ON)" >&2
    "${lock[@]}" cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DWINFER_CUDA=ON \
      -DWINFER_BENCH_PEERS=OFF "${launcher[@]}" > /dev/null
  fi
  targets=$(cmake --build "$build" --target help 2> /dev/null || true)
  if ! grep -q 'winfer_cuda_plugin' <<< "$targets"; then
    die "$build has no native CUDA targets (configured without nvcc, or WINFER_CUDA=OFF/EMU): use another --build-dir"
  fi
  echo "building ${clis[*]} ${tests[*]} in $build" >&2
  "${lock[@]}" cmake --build "$build" -j "$(nproc)" --target "${clis[@]}" "${tests[@]}" >&2
fi

# ---- what to stage
[[ -x "$build/bin/winfer" ]] || die "$build/bin/winfer is missing (build it, or drop --no-build)"
for m in "${modules[@]}"; do
  [[ -f "$build/lib/winfer/$m" ]] || die "$build/lib/winfer/$m is missing: $build was not built with the CUDA backend"
done
staged_tests=()
for t in "${tests[@]}"; do
  if [[ -x "$build/bin/$t" ]]; then
    staged_tests+=("$t")
  elif [[ $allow_partial == 1 ]]; then
    echo "note: $build/bin/$t not built, left out (--allow-partial)" >&2
  else
    die "$build/bin/$t is missing (build it, or stage with --allow-partial)"
  fi
done

# Stage into a fresh folder: refuse to empty anything that does not look like an earlier stage.
if [[ -e "$out" ]]; then
  if [[ -n "$(ls -A "$out")" && ! -f "$out/.winfer-device-stage" ]]; then
    die "$out exists, is not empty and is not a staged folder (no .winfer-device-stage): not emptying it"
  fi
  rm -rf "$out"
fi
mkdir -p "$out"
echo "a folder written by scripts/stage_device.sh, emptied by its next run" > "$out/.winfer-device-stage"
mkdir -p "$out/bin" "$out/lib/winfer" "$out/lib/gcc" "$out/models" "$out/bench/layers"

for f in "${clis[@]}" "${staged_tests[@]}"; do cp "$build/bin/$f" "$out/bin/"; done
for m in "${modules[@]}"; do cp "$build/lib/winfer/$m" "$out/lib/winfer/"; done

# shellcheck source=scripts/device_libs.sh
source "$root/scripts/device_libs.sh"

# Every library the staged ELFs need, as this machine's loader resolves it (ldd: the transitive
# closure): glibc and CUDA/driver libraries stay behind, the GCC runtime goes to lib/gcc, the
# rest to lib/ under its soname.
declare -A copied=()
for elf in "$out"/bin/* "$out"/lib/winfer/*.so; do
  while read -r name path; do
    [[ -n "$name" ]] || continue
    kind=$(lib_kind "$name")
    case "$kind" in
      glibc|cuda) continue ;;
    esac
    [[ -n "${copied[$name]:-}" ]] && continue
    [[ -n "$path" && -f "$path" ]] || die "$(basename "$elf") needs $name, which this machine's loader does not find"
    dest="$out/lib"
    [[ "$kind" == gcc ]] && dest="$out/lib/gcc"
    cp -L "$path" "$dest/$name"
    chmod u+w "$dest/$name"
    copied[$name]="$path"
  done < <(ldd "$elf" | sed -n 's/^[[:space:]]*\([^[:space:]]*\) => \([^[:space:]]*\) (0x.*$/\1 \2/p; s/^[[:space:]]*\([^[:space:]]*\) => not found$/\1/p')
done

# Data: the models the check runs (zoo YAMLs with --random-weights; tiny_net and the Fashion-MNIST
# models with their small weights, which the engine tests load), and the layer sets.
cp -r "$root/models/zoo" "$root/models/examples" "$out/models/"
mkdir -p "$out/models/fashion"
cp "$root"/models/fashion/*.yaml "$root"/models/fashion/*.safetensors "$root"/models/fashion/*.txt "$out/models/fashion/"
[[ -d "$root/models/fashion/examples" ]] && cp -r "$root/models/fashion/examples" "$out/models/fashion/"
cp "$root"/bench/layers/*.yaml "$out/bench/layers/"
cp "$root/scripts/device_check.sh" "$out/device_check.sh"
chmod +x "$out/device_check.sh"

# stage.env: what device_check.sh needs to know about this build. The version tags each staged
# ELF needs from glibc and the GCC runtime, so that the device side can tell whether its own
# libraries are recent enough without readelf/objdump.
need_tags() {  # need_tags FILE-PATTERN [ELF...]: the version names these staged ELFs (default: all
               # but lib/gcc/) need from the files whose names match
  local pattern=$1
  shift
  local files=("$@")
  ((${#files[@]})) || files=("$out"/bin/* "$out"/lib/winfer/*.so "$out"/lib/*.so*)
  for elf in "${files[@]}"; do
    [[ -f "$elf" ]] || continue
    readelf -V --wide "$elf" 2> /dev/null | awk -v pat="$pattern" '
      /File:/ { file = $0; sub(/.*File: /, "", file); sub(/ .*/, "", file) }
      /Name:/ && file ~ pat { name = $0; sub(/.*Name: /, "", name); sub(/ .*/, "", name); print name }'
  done | sort -u -V | tr '\n' ' '
}
glibc_tags=$(need_tags '^(libc|libm|libdl|libpthread|librt|ld-linux)')
glibc_max=$(tr ' ' '\n' <<< "$glibc_tags" | sed -n 's/^GLIBC_//p' | sort -V | tail -1)
gcc_glibc_max=$(need_tags '^(libc|libm|libdl|libpthread|librt|ld-linux)' "$out"/lib/gcc/* | tr ' ' '\n' |
                sed -n 's/^GLIBC_//p' | sort -V | tail -1)
nvcc_version=$(sed -n 's/^set(CMAKE_CUDA_COMPILER_VERSION "\(.*\)")$/\1/p' "$build"/CMakeFiles/*/CMakeCUDACompiler.cmake 2> /dev/null | head -1 || true)
cuda_archs=$(grep -rhoE -- '--generate-code=arch=compute_[0-9]+,code=\[[^]]*\]' "$build"/CMakeFiles/*/flags.make "$build"/build.ninja 2> /dev/null |
             sed 's/.*code=\[\(.*\)\]/\1/' | tr ',' '\n' | sort -u | tr '\n' ' ' | sed 's/ $//' || true)
cublas_soname=$(grep -aoE 'libcublas\.so\.[0-9]+' "$out/lib/winfer/libwinfer_cuda.so" | head -1 || true)
cudnn_soname=$(grep -aoE 'libcudnn\.so\.[0-9]+' "$out/lib/winfer/libwinfer_cuda.so" | head -1 || true)
[[ -n "$cublas_soname" ]] || die "no libcublas.so.<major> in libwinfer_cuda.so: the loader's sonames changed (kernels/cuda/native/loader.h)"
[[ -n "$cudnn_soname" ]] || cudnn_soname=none  # built without cuDNN
commit=$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo unknown)
dirty=$(git -C "$root" status --porcelain --untracked-files=no 2> /dev/null | head -1)
{
  echo "# written by scripts/stage_device.sh; read by device_check.sh"
  echo "STAGE_COMMIT='$commit${dirty:+ (with uncommitted changes)}'"
  echo "STAGE_DATE='$(date -u '+%Y-%m-%d %H:%M UTC')'"
  echo "STAGE_HOST_OS='$(. /etc/os-release 2> /dev/null; echo "${PRETTY_NAME:-unknown}")'"
  echo "STAGE_NVCC='${nvcc_version:-unknown}'"
  echo "STAGE_CUDA_ARCHS='${cuda_archs:-unknown}'"
  echo "STAGE_SOURCE_DIR='$root'"  # compiled into winfer_engine_cuda_tests (WINFER_SOURCE_DIR)
  echo "STAGE_TESTS='${staged_tests[*]}'"
  echo "STAGE_GLIBC_MIN='$glibc_max'"
  echo "STAGE_GCC_GLIBC_MIN='$gcc_glibc_max'"  # what lib/gcc/ needs, where it is used
  echo "STAGE_NEEDS_LIBSTDCXX='$(need_tags '^libstdc\\+\\+')'"
  echo "STAGE_NEEDS_LIBGCC='$(need_tags '^libgcc_s')'"
  echo "STAGE_NEEDS_LIBGOMP='$(need_tags '^libgomp')'"
  # The sonames the plug-in dlopen()s (kernels/cuda/native/loader.h): those of the headers built against.
  echo "STAGE_CUBLAS_SONAME='$cublas_soname'"
  echo "STAGE_CUBLASLT_SONAME='${cublas_soname/libcublas/libcublasLt}'"
  echo "STAGE_CUDNN_SONAME='$cudnn_soname'"
} > "$out/stage.env"

cat > "$out/env.sh" << 'EOF'
# Source this (bash) to run the staged binaries by hand: . build/device-stage/env.sh
# Puts lib/ (and lib/gcc-use/: the staged GCC runtime libraries device_check.sh found missing or
# too old here) on LD_LIBRARY_PATH, before the CUDA library folders device_check.sh found.
_stage=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_extra=""
[[ -d "$_stage/lib/gcc-use" ]] && _extra=":$_stage/lib/gcc-use"
[[ -f "$_stage/lib/cuda_dirs" ]] && _extra="$_extra:$(cat "$_stage/lib/cuda_dirs")"
export LD_LIBRARY_PATH="$_stage/lib$_extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$_stage/bin:$PATH"
unset _stage _extra
EOF

{
  echo "winfer device stage: built $(date -u '+%Y-%m-%d %H:%M UTC') from $commit${dirty:+ (with uncommitted changes)} on $(. /etc/os-release 2> /dev/null; echo "${PRETTY_NAME:-unknown}")"
  echo "nvcc ${nvcc_version:-unknown}, CUDA code ${cuda_archs:-unknown}"
  echo "needs on the device: glibc >= $glibc_max (>= $gcc_glibc_max where its GCC runtime is too old and lib/gcc is used), an NVIDIA driver (libcuda.so.1), cuBLAS 13 and cuDNN 9 (device_check.sh finds them)"
  echo
  (cd "$out" && find . -type f ! -path './models/*' ! -path './bench/*' -printf '%10s  %p\n' | sort -k2)
  echo "$(cd "$out" && find models bench -type f | wc -l) model and layer-set files: $(du -sh "$out/models" | cut -f1) models, $(du -sh "$out/bench" | cut -f1) bench"
  for lib in "${!copied[@]}"; do echo "staged $lib from ${copied[$lib]}"; done | sort
} > "$out/MANIFEST.txt"

echo "staged into $out ($(du -sh "$out" | cut -f1))" >&2
exec "$root/scripts/check_stage.sh" "$out"
