#!/usr/bin/env bash
# Checks a folder staged by scripts/stage_device.sh on this (CPU) machine, as far as a machine
# without a GPU can (docs/CUDA.md, "The device check from a carried build"):
#   1. layout: the CLI, the two CUDA modules, device_check.sh, stage.env, the models and layer sets;
#   2. self-contained: every library each staged ELF needs (readelf -d NEEDED) is in lib/ (lib/gcc/
#      for libstdc++, libgcc_s, libgomp), or is glibc, or is a CUDA/driver library
#      (scripts/device_libs.sh); no staged ELF needs a glibc newer than --glibc-max (default 2.35,
#      Ubuntu 22.04; the device is Ubuntu 24.04's 2.39 by its Python 3.12.3); no RPATH/RUNPATH
#      outside the folder;
#   3. size: at most --max-mib MiB (default 50);
#   4. unless --no-run, the folder run with an empty environment (env -i, LD_LIBRARY_PATH = its
#      lib/ and lib/gcc/ only), under LD_DEBUG=files so that every library the loader maps is seen:
#      tiny_net on the CPU against PyTorch's output, resnet18 (zoo YAML, random weights) on the
#      CPU, the paper12 layer set parsed, `--device cuda` reaching the plug-in (which then reports
#      no device), the native test binaries skipping (77); every library mapped is inside the
#      folder or glibc. Where this machine has no NVIDIA driver, device_check.sh must stop within
#      30 s with status 2 and a message naming libcuda.so.1.
# Usage: scripts/check_stage.sh FOLDER [--max-mib N] [--glibc-max V] [--no-run]
# Exit status 0 when every check passed; each failure is printed with the file and what was expected.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stage=""
max_mib=50
glibc_max=2.35
run=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --max-mib) max_mib="$2"; shift 2 ;;
    --glibc-max) glibc_max="$2"; shift 2 ;;
    --no-run) run=0; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "check_stage.sh: unknown option '$1'" >&2; exit 2 ;;
    *) stage="$1"; shift ;;
  esac
done
[[ -n "$stage" && -d "$stage" ]] || { echo "usage: check_stage.sh FOLDER (a folder staged by scripts/stage_device.sh)" >&2; exit 2; }
stage=$(cd "$stage" && pwd)
# shellcheck source=scripts/device_libs.sh
source "$root/scripts/device_libs.sh"

failures=0
optional=()  # libraries mapped from outside the folder that are optional (OpenBLAS)
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }

# ---- 1. layout
for f in bin/winfer lib/winfer/libwinfer_cuda.so lib/winfer/libwinfer_bench_cuda.so device_check.sh env.sh stage.env \
         MANIFEST.txt models/examples/tiny_net.yaml models/examples/tiny_net.input.npy models/examples/tiny_net.output.npy \
         models/zoo/resnet18.yaml models/zoo/resnet50.yaml models/zoo/vgg16.yaml models/zoo/shufflenet_v2_x1_0.yaml \
         models/fashion/fashion_resnet.yaml bench/layers/paper12.yaml; do
  [[ -e "$stage/$f" ]] || fail "$stage/$f is missing"
done
[[ -x "$stage/device_check.sh" ]] || fail "$stage/device_check.sh is not executable"
# shellcheck source=/dev/null
source "$stage/stage.env" 2> /dev/null || fail "$stage/stage.env cannot be read"
for t in ${STAGE_TESTS:-}; do [[ -x "$stage/bin/$t" ]] || fail "stage.env lists $t, but bin/$t is missing"; done
pass "layout (tests staged: ${STAGE_TESTS:-none})"

# ---- 2. self-contained
elfs=()
while IFS= read -r -d '' f; do
  [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] && elfs+=("$f")
done < <(find "$stage" -type f -print0)
((${#elfs[@]} >= 3)) || fail "only ${#elfs[@]} ELF files in $stage (expected the CLI and two modules at least)"
declare -A kinds=()
newest_glibc=""
gcc_glibc=none
for elf in "${elfs[@]}"; do
  rel=${elf#"$stage"/}
  dyn=$(readelf -d --wide "$elf" 2> /dev/null) || { fail "$rel: readelf -d failed"; continue; }
  while read -r name; do
    kind=$(lib_kind "$name")
    kinds[$kind]=$((${kinds[$kind]:-0} + 1))
    case "$kind" in
      glibc|cuda) ;;
      gcc) [[ -f "$stage/lib/gcc/$name" ]] || fail "$rel needs $name, expected in lib/gcc/ (the GCC runtime fallback), not there" ;;
      stage) [[ -f "$stage/lib/$name" ]] || fail "$rel needs $name, which is neither glibc nor a CUDA library and is not in lib/" ;;
    esac
  done < <(sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' <<< "$dyn")
  while read -r rpath; do
    # shellcheck disable=SC2016  # $ORIGIN is the loader's, not the shell's
    for p in ${rpath//:/ }; do
      case "$p" in
        '$ORIGIN'*|'${ORIGIN}'*) ;;
        *) fail "$rel has RPATH/RUNPATH '$p', outside the folder" ;;
      esac
    done
  done < <(sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p' <<< "$dyn")
  v=$(readelf -V --wide "$elf" 2> /dev/null | grep -oE 'Name: GLIBC_[0-9.]+' | sed 's/Name: GLIBC_//' | sort -V | tail -1)
  if [[ "$rel" == lib/gcc/* ]]; then
    # The GCC runtime fallback is used only where the device's own is older than this machine's,
    # and device_check.sh checks the glibc it needs then (STAGE_GCC_GLIBC_MIN).
    if [[ -n "$v" && ( "$gcc_glibc" == none || "$(printf '%s\n%s\n' "${gcc_glibc#GLIBC_}" "$v" | sort -V | tail -1)" == "$v" ) ]]; then
      gcc_glibc="GLIBC_$v"
    fi
  elif [[ -n "$v" ]]; then
    [[ -z "$newest_glibc" || "$(printf '%s\n%s\n' "$newest_glibc" "$v" | sort -V | tail -1)" == "$v" ]] && newest_glibc=$v
    if [[ "$(printf '%s\n%s\n' "$v" "$glibc_max" | sort -V | tail -1)" != "$glibc_max" ]]; then
      fail "$rel needs GLIBC_$v, newer than $glibc_max (the oldest glibc the device may have)"
    fi
  fi
done
pass "${#elfs[@]} ELF files; needed libraries: ${kinds[stage]:-0} in lib/, ${kinds[gcc]:-0} GCC runtime in lib/gcc/, ${kinds[glibc]:-0} glibc, ${kinds[cuda]:-0} CUDA/driver; newest glibc symbol GLIBC_${newest_glibc:-none} (<= $glibc_max; lib/gcc/ needs $gcc_glibc where it is used)"

# ---- 3. size
bytes=$(du -sb "$stage" | cut -f1)
limit=$((max_mib * 1024 * 1024))
if ((bytes > limit)); then
  fail "$stage is $((bytes / 1048576)) MiB, over the $max_mib MiB limit; largest files: $(cd "$stage" && find . -type f -printf '%s %p\n' | sort -rn | head -5 | awk '{ printf "%s (%.1f MiB) ", $2, $1 / 1048576 }')"
else
  pass "size $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }') MiB <= $max_mib MiB"
fi

# ---- 4. run it with an empty environment
if ((run)); then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  ld="$stage/lib:$stage/lib/gcc"
  clean=(env -i "PATH=/usr/bin:/bin" "HOME=$tmp" "LD_LIBRARY_PATH=$ld")
  # every library the loader maps must be in the folder or glibc (LD_DEBUG=files: "calling init: PATH")
  check_maps() {  # check_maps WHAT DEBUGLOG
    local path base bad=0
    while read -r path; do
      path=$(readlink -f "$path")
      base=$(basename "$path")
      case "$path" in
        "$stage"/*) ;;
        *)
          if [[ "$(lib_kind "$base")" == glibc ]]; then continue; fi
          # OpenBLAS is dlopen()ed by soname when the machine has it (kernels/cpu/gemm.cpp), with
          # what it needs; the device has none and the portable GEMM runs instead: not staged (36 MB).
          case "$base" in libopenblas*.so* | libgfortran.so.* | libquadmath.so.*) optional+=("$base"); continue ;; esac
          fail "$1 mapped $path from outside the folder"
          bad=1
          ;;
      esac
    done < <(sed -n 's/.*calling init: \(.*\)$/\1/p' "$2" | sort -u)
    return $bad
  }
  run_case() {  # run_case NAME EXPECTED_STATUS GREP_PATTERN -- COMMAND...
    local name=$1 want=$2 pattern=$3
    shift 4
    (cd "$tmp" && timeout 120 "${clean[@]}" LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" "$@") > "$tmp/out" 2>&1
    local rc=$?
    cat "$tmp"/ld.* > "$tmp/ld" 2> /dev/null
    rm -f "$tmp"/ld.*
    if [[ $rc != "$want" ]]; then
      fail "$name: exit status $rc, expected $want; output: $(tail -5 "$tmp/out" | tr '\n' ' ')"
    elif ! grep -qE "$pattern" "$tmp/out"; then
      fail "$name: output lacks /$pattern/: $(tail -5 "$tmp/out" | tr '\n' ' ')"
    elif check_maps "$name" "$tmp/ld"; then
      pass "$name ($(sed -n 's/.*calling init: \(.*\)$/\1/p' "$tmp/ld" | sort -u | grep -c "^$stage/") libraries from the folder)"
    fi
  }
  ex="$stage/models/examples"
  run_case "env -i: tiny_net on the CPU against PyTorch's output" 0 'max relative error' -- \
    "$stage/bin/winfer" run "$ex/tiny_net.yaml" --input "$ex/tiny_net.input.npy" --expect "$ex/tiny_net.output.npy" --repeat 0 --top 1
  run_case "env -i: resnet18 (zoo YAML, random weights, 64x64) on the CPU" 0 'run|top' -- \
    "$stage/bin/winfer" run "$stage/models/zoo/resnet18.yaml" --random-weights 1 --size 64x64 --batch 1 --repeat 0 --top 1
  run_case "env -i: the paper12 layer set from bench/layers" 0 'conv12' -- \
    env WINFER_BENCH_LAYERS="$stage/bench/layers" "$stage/bin/winfer" bench --layers paper12 --batch 128 --list
  if [[ -e /dev/nvidiactl ]] || command -v nvidia-smi > /dev/null; then
    echo "note: this machine has an NVIDIA driver: the no-GPU cases are left out"
  else
    run_case "env -i: --device cuda reaches the staged plug-in, which reports no device" 1 'no CUDA device: cudaGetDeviceCount' -- \
      "$stage/bin/winfer" run "$ex/tiny_net.yaml" --device cuda --repeat 0 --top 0
    if ! sed -n 's/.*calling init: \(.*\)$/\1/p' "$tmp/ld" | xargs -r readlink -f | grep -qx "$stage/lib/winfer/libwinfer_cuda.so"; then
      fail "--device cuda did not map $stage/lib/winfer/libwinfer_cuda.so"
    fi
    for t in ${STAGE_TESTS:-}; do
      run_case "env -i: $t skips without a GPU (77)" 77 'skipped, no usable CUDA device' -- "$stage/bin/$t"
    done
    # The device script stops at once, naming the missing driver (its results go to a temp folder).
    start=$SECONDS
    (cd "$tmp" && timeout 60 env -i "PATH=/usr/bin:/bin" "HOME=$tmp" "OUT=$tmp/out_dir" "$stage/device_check.sh") > "$tmp/dc" 2>&1
    rc=$?
    took=$((SECONDS - start))
    if [[ $rc != 2 ]]; then
      fail "device_check.sh without a driver: exit status $rc, expected 2 (missing driver); output: $(tail -5 "$tmp/dc" | tr '\n' ' ')"
    elif ! grep -q 'FATAL: no NVIDIA driver library: libcuda.so.1' "$tmp/dc"; then
      fail "device_check.sh without a driver: no message naming libcuda.so.1: $(tail -5 "$tmp/dc" | tr '\n' ' ')"
    elif ((took > 30)); then
      fail "device_check.sh without a driver took $took s to stop (expected well under 30 s)"
    elif [[ ! -s "$tmp/out_dir/device_check/device_check.log" ]]; then
      fail "device_check.sh did not write \$OUT/device_check/device_check.log"
    else
      pass "device_check.sh without a driver stops in $took s, status 2: $(grep -m1 'FATAL' "$tmp/dc" | cut -c1-110)..."
    fi
  fi
fi

if ((${#optional[@]})); then
  echo "note: mapped from this machine, optional (dlopen()ed when present, absent on the device): $(printf '%s\n' "${optional[@]}" | sort -u | tr '\n' ' ')"
fi
if ((failures)); then
  echo "check_stage.sh: $failures check(s) failed for $stage"
  exit 1
fi
echo "check_stage.sh: $stage is self-contained and runs here"
