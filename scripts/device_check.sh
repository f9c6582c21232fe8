#!/usr/bin/env bash
# winfer's device check, run from a folder staged by scripts/stage_device.sh on a GPU machine that
# has a driver and CUDA's libraries but none of winfer's build dependencies (docs/CUDA.md, "The
# device check from a carried build"). In one command, each step time-boxed:
#   preflight  finds the driver (libcuda.so.1), cuBLAS and cuDNN (the standard folders, the ld.so
#              cache, then the Python packages' nvidia/*/lib folders), prints their versions and the
#              GPU, and decides whether the device's GCC runtime is recent enough (else lib/gcc,
#              library by library);
#              stops at once, naming what is missing, when the driver, the GPU or cuBLAS is;
#              then one CUDA run of tiny_net against its PyTorch output (stops if that fails)
#   1. the native kernel tests (winfer_cuda_tests)
#   2. the engine's tests on CUDA (winfer_engine_cuda_tests)
#   3. resnet18, resnet50, vgg16, shufflenet_v2_x1_0 on CUDA with every CUDA algorithm against the
#      CPU backend's output (batch 8; max relative error <= 1e-4, or 8x the CPU's own direct-vs-im2win
#      spread where that is larger; --models, --batch choose others)
#   4. compute-sanitizer memcheck, racecheck, initcheck on tiny_net and on the im2win GEMM's kernel
#      tests, when the tool is there and works on this machine (skipped with the reason otherwise)
#   5. the paper12 layer benchmark at batch 128: im2win, cuBLAS-im2col, direct, cuDNN, with TFLOPS
#      and % of the FP32 peak (the bench computes the peak as SMs x max SM clock x 128 lanes x 2)
# and a table of the steps at the end.
#
# Usage: device_check.sh [--probe] [--quick] [--zoo-only] [--models M1,M2] [--batch N] [--profile] [--budget SECONDS]
#   --probe     preflight only (no GPU work beyond the tiny_net run; without a GPU: stops at the driver)
#   --quick     resnet18 only in step 3, no sanitizer, bench on conv1 and conv10-12
#   --zoo-only  preflight and step 3 only (no tests, sanitizer or bench)
#   --models L  step 3's zoo models, comma-separated, or 'all' (default resnet18,resnet50,vgg16,
#               shufflenet_v2_x1_0)
#   --batch N   step 3's batch (default 8)
#   --profile   step 3's CUDA runs print per-layer times (winfer run --profile) into each run's log
#               ($OUT/device_check/MODEL.CONV.log)
#   --budget S  overall time limit (default 420 s); later steps keep a minimum share
# Environment: OUT (results are written to $OUT/device_check/ when set, else to results/ here),
#   WINFER_CUDA_LIB_DIRS (colon-separated folders searched first for cuBLAS/cuDNN), RUNS (bench
#   runs per layer and algorithm, default 20).
# Exit status: 0 every step passed; 1 a step failed or timed out; 2 preflight: something needed is
# missing; 3 preflight: the first CUDA run failed.
set -uo pipefail
stage=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
probe=0
quick=0
zoo_only=0
zoo_models="resnet18,resnet50,vgg16,shufflenet_v2_x1_0"
zoo_batch=8
zoo_profile=()
budget=420
while [[ $# -gt 0 ]]; do
  case "$1" in
    --probe) probe=1; shift ;;
    --quick) quick=1; shift ;;
    --zoo-only) zoo_only=1; shift ;;
    --models) zoo_models="$2"; shift 2 ;;
    --batch) zoo_batch="$2"; shift 2 ;;
    --profile) zoo_profile=(--profile); shift ;;
    --budget) budget="$2"; shift 2 ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "device_check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [[ -n "${OUT:-}" ]]; then res="$OUT/device_check"; else res="$stage/results"; fi
mkdir -p "$res" || { echo "device_check.sh: cannot create $res" >&2; exit 2; }
t0=$SECONDS

# ---- helpers
fatal() {  # fatal CODE MESSAGE...: the preflight's clear stop
  local code=$1
  shift
  echo
  echo "FATAL: $*"
  echo "device check stopped after $((SECONDS - t0)) s, exit status $code (results in $res)"
  exit "$code"
}
info() { printf '  %-22s %s\n' "$1" "$2"; }
section() { printf '\n==== %s (%d s)\n' "$1" $((SECONDS - t0)); }

steps=()    # "name|status|seconds|note"
versions="" # GPU and library versions found by the preflight, for the summary
overall=0
record() { steps+=("$1|$2|$3|$4"); [[ "$2" == FAIL || "$2" == TIMEOUT ]] && overall=1; return 0; }

# relative_error LOG: the error `winfer run --expect` printed into LOG (empty if none)
relative_error() { sed -n 's/^max relative error vs [^:]*: \([^ ]*\) .*/\1/p' "$1" | head -1; }

# step_cap CAP LATER_MIN: seconds a step may use, keeping LATER_MIN seconds for the steps after it
step_cap() {
  local left=$((budget - (SECONDS - t0) - $2))
  ((left < $1)) && echo "$left" || echo "$1"
}

# Runs our binaries with the staged libraries first. Set up in the preflight.
run_env=()

# find_lib SONAME: the first file named SONAME in $WINFER_CUDA_LIB_DIRS, the ld.so cache, the
# standard folders, then the Python packages (nvidia/*/lib, torch/lib); prints its path
python_dirs=""
python_dirs_done=0
find_python_dirs() {
  ((python_dirs_done)) && return 0
  python_dirs_done=1
  local py dirs
  for py in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    command -v "$py" > /dev/null 2>&1 || continue
    dirs=$(timeout 30 "$py" - 2> /dev/null << 'EOF'
import importlib.util, os, site, sys
roots = []
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
for sp in list(getattr(site, "getsitepackages", lambda: [])()) + [site.getusersitepackages()] + sys.path:
    for sub in ("nvidia", "torch/lib"):
        p = os.path.join(sp, sub)
        if os.path.isdir(p) and p not in roots:
            roots.append(p)
for r in roots:
    for dirpath, dirnames, filenames in os.walk(r):
        if dirpath[len(r):].count(os.sep) > 3:
            dirnames[:] = []
            continue
        if any(".so" in f for f in filenames):
            print(dirpath)
EOF
)
    [[ -n "$dirs" ]] && python_dirs+="$dirs"$'\n'
  done
}
find_lib() {
  local name=$1 d p
  local IFS_save=$IFS
  IFS=:
  for d in ${WINFER_CUDA_LIB_DIRS:-}; do
    [[ -n "$d" && -e "$d/$name" ]] && { IFS=$IFS_save; echo "$d/$name"; return 0; }
  done
  IFS=$IFS_save
  p=$(ldconfig_p | awk -v n="$name" '$1 == n && /x86-64/ { print $NF; exit }')
  [[ -n "$p" && -e "$p" ]] && { echo "$p"; return 0; }
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 \
           /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/wsl/lib; do
    [[ -e "$d/$name" ]] && { echo "$d/$name"; return 0; }
  done
  find_python_dirs
  while read -r d; do
    [[ -n "$d" && -e "$d/$name" ]] && { echo "$d/$name"; return 0; }
  done <<< "$python_dirs"
  return 1
}
lib_dir() { dirname "$1"; }
ldconfig_p() {  # the ld.so cache (ldconfig is in /sbin where PATH lacks it)
  local c
  for c in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
    command -v "$c" > /dev/null 2>&1 && { "$c" -p 2> /dev/null; return; }
  done
}
# lib_lacks_tag FILE TAG...: succeeds when FILE defines every version TAG; else prints the first
# missing one and fails. With readelf, from its version definitions; without, from its strings
# (the NUL-terminated string table; a tag may be stored as the tail of a longer name, so a string
# ending with it counts).
lib_lacks_tag() {
  local file=$1 tag defs
  shift
  if command -v readelf > /dev/null 2>&1; then
    defs=$(readelf -V --wide "$file" 2> /dev/null | sed -n '/Version definition/,/Version needs/p' | grep -oE 'Name: [^ ]+' | cut -c7-)
    for tag in "$@"; do grep -qxF "$tag" <<< "$defs" || { echo "$tag"; return 1; }; done
  else
    for tag in "$@"; do LC_ALL=C grep -qaz -- "${tag//./\\.}\$" "$file" || { echo "$tag"; return 1; }; done
  fi
  return 0
}

main() {
  # shellcheck source=/dev/null
  source "$stage/stage.env" 2> /dev/null || fatal 2 "$stage/stage.env is missing: this is not a folder staged by scripts/stage_device.sh"
  echo "winfer device check: stage of $STAGE_COMMIT built $STAGE_DATE on $STAGE_HOST_OS (nvcc $STAGE_NVCC, archs $STAGE_CUDA_ARCHS)"
  echo "host $(uname -n), $(uname -m), kernel $(uname -r), $(nproc) CPUs; results in $res"

  # ================= preflight
  section "preflight"
  local missing=()
  for f in bin/winfer lib/winfer/libwinfer_cuda.so lib/winfer/libwinfer_bench_cuda.so models/examples/tiny_net.yaml \
           bench/layers/paper12.yaml; do
    [[ -e "$stage/$f" ]] || missing+=("$f")
  done
  ((${#missing[@]} == 0)) || fatal 2 "the staged folder lacks ${missing[*]}: stage again with scripts/stage_device.sh"
  [[ "$(uname -m)" == x86_64 ]] || fatal 2 "this machine is $(uname -m); the staged binaries are x86_64"
  for t in timeout awk sed grep; do command -v "$t" > /dev/null || fatal 2 "'$t' is not installed here"; done

  # glibc: the device's own; it must be at least the newest version the binaries were linked against.
  local glibc
  glibc=$(getconf GNU_LIBC_VERSION 2> /dev/null | awk '{ print $2 }')
  [[ -n "$glibc" ]] || glibc=$(ldd --version 2> /dev/null | head -1 | grep -oE '[0-9]+\.[0-9]+$')
  if [[ -z "$glibc" ]]; then
    fatal 2 "cannot tell this machine's glibc version (getconf GNU_LIBC_VERSION); the binaries need glibc >= $STAGE_GLIBC_MIN"
  fi
  if [[ "$(printf '%s\n%s\n' "$STAGE_GLIBC_MIN" "$glibc" | sort -V | head -1)" != "$STAGE_GLIBC_MIN" ]]; then
    fatal 2 "glibc $glibc here, the staged binaries need >= $STAGE_GLIBC_MIN: build the stage on an older system"
  fi
  info glibc "$glibc (needs >= $STAGE_GLIBC_MIN)"

  # GCC runtime, library by library: the device's own when it has every version tag the binaries
  # need (a newer libstdc++ also serves cuDNN and compute-sanitizer's injected libraries); else the
  # staged one, linked into lib/gcc-use/ (libstdc++ with its libgcc_s).
  local staged_gcc=() why=""
  local lib tags tag sys
  for lib in libstdc++.so.6 libgcc_s.so.1 libgomp.so.1; do
    case "$lib" in
      libstdc++*) tags=$STAGE_NEEDS_LIBSTDCXX ;;
      libgcc_s*) tags=$STAGE_NEEDS_LIBGCC ;;
      *) tags=$STAGE_NEEDS_LIBGOMP ;;
    esac
    sys=$(ldconfig_p | awk -v n="$lib" '$1 == n && /x86-64/ { print $NF; exit }')
    if [[ -z "$sys" ]]; then
      for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /lib64; do
        [[ -e "$d/$lib" ]] && { sys="$d/$lib"; break; }
      done
    fi
    if [[ -z "$sys" ]]; then
      staged_gcc+=("$lib")
      why+=" $lib missing;"
      continue
    fi
    # shellcheck disable=SC2086  # $tags: a list of words
    if ! tag=$(lib_lacks_tag "$sys" $tags); then
      staged_gcc+=("$lib")
      why+=" $sys lacks $tag;"
    fi
  done
  if [[ " ${staged_gcc[*]} " == *" libstdc++.so.6 "* && " ${staged_gcc[*]} " != *" libgcc_s.so.1 "* ]]; then
    staged_gcc+=(libgcc_s.so.1)
  fi
  local ld_path="$stage/lib"
  rm -rf "$stage/lib/gcc-use"
  if ((${#staged_gcc[@]})); then
    if [[ -n "${STAGE_GCC_GLIBC_MIN:-}" && "$(printf '%s\n%s\n' "$STAGE_GCC_GLIBC_MIN" "$glibc" | sort -V | head -1)" != "$STAGE_GCC_GLIBC_MIN" ]]; then
      fatal 2 "this machine's GCC runtime is too old or missing ($why ) and the staged one (lib/gcc) needs glibc >= $STAGE_GCC_GLIBC_MIN, here $glibc: stage on an older system"
    fi
    mkdir -p "$stage/lib/gcc-use" || fatal 2 "cannot create $stage/lib/gcc-use"
    for lib in "${staged_gcc[@]}"; do ln -s "../gcc/$lib" "$stage/lib/gcc-use/$lib"; done
    ld_path+=":$stage/lib/gcc-use"
    info "GCC runtime" "staged ${staged_gcc[*]} (lib/gcc):$why others this machine's"
  else
    info "GCC runtime" "this machine's (it has every version the binaries need)"
  fi

  # The driver: libcuda.so.1 (cudart, linked into winfer statically, opens it).
  local libcuda
  libcuda=$(find_lib libcuda.so.1) ||
    fatal 2 "no NVIDIA driver library: libcuda.so.1 is not in the ld.so cache nor in /usr/local/nvidia/lib64, /usr/lib/x86_64-linux-gnu, /usr/lib64 (no GPU driver on this machine, or it is not mounted)"
  info "driver library" "$(readlink -f "$libcuda")"
  local cuda_dirs="" d
  d=$(lib_dir "$libcuda")
  ldconfig_p | grep -q "libcuda.so.1 .*=> $d/" || cuda_dirs="$d"
  if command -v nvidia-smi > /dev/null; then
    # Informational: the first CUDA run below decides whether the device is usable.
    local smi
    if smi=$(timeout 30 nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv,noheader 2>&1) ||
       smi=$(timeout 30 nvidia-smi -L 2>&1); then
      while read -r line; do info GPU "$line"; done <<< "$smi"
      versions+="GPU $(head -1 <<< "$smi"); "
      info "driver CUDA version" "$(timeout 30 nvidia-smi 2> /dev/null | grep -oE 'CUDA Version: [0-9.]+' | head -1)"
    else
      info GPU "nvidia-smi failed: $(head -3 <<< "$smi" | tr '\n' ' ')"
    fi
  else
    info GPU "nvidia-smi not installed (the first CUDA run below says whether a device is usable)"
  fi
  [[ -r /proc/driver/nvidia/version ]] && info "kernel module" "$(head -1 /proc/driver/nvidia/version | sed 's/  */ /g')"
  info "CUDA runtime" "cudart ${STAGE_NVCC} linked statically into the plug-in and the tests"

  # cuBLAS and cuDNN, opened by winfer with dlopen() by these sonames.
  local cublas cublaslt cudnn
  cublas=$(find_lib "$STAGE_CUBLAS_SONAME") ||
    fatal 2 "cuBLAS not found: no $STAGE_CUBLAS_SONAME in \$WINFER_CUDA_LIB_DIRS, the ld.so cache, /usr/local/cuda/lib64 or the Python packages (nvidia-cublas); set WINFER_CUDA_LIB_DIRS to its folder"
  cublaslt=$(find_lib "$STAGE_CUBLASLT_SONAME") ||
    fatal 2 "cuBLASLt not found: $STAGE_CUBLASLT_SONAME (needed by $cublas) is in none of the folders searched"
  for d in "$(lib_dir "$cublas")" "$(lib_dir "$cublaslt")"; do
    [[ ":$cuda_dirs:" == *":$d:"* ]] || cuda_dirs+="${cuda_dirs:+:}$d"
  done
  info cuBLAS "$(readlink -f "$cublas")"
  local have_cudnn=1
  if [[ "$STAGE_CUDNN_SONAME" == none ]]; then
    have_cudnn=0
    cudnn=""
    info cuDNN "not used: the stage was built without cuDNN (no cudnn algorithm)"
  elif cudnn=$(find_lib "$STAGE_CUDNN_SONAME"); then
    d=$(lib_dir "$cudnn")
    [[ ":$cuda_dirs:" == *":$d:"* ]] || cuda_dirs+="${cuda_dirs:+:}$d"
    info cuDNN "$(readlink -f "$cudnn")"
  else
    have_cudnn=0
    echo "  MISSING: cuDNN ($STAGE_CUDNN_SONAME) is in none of the folders searched (set WINFER_CUDA_LIB_DIRS):"
    echo "           the check goes on without the cudnn algorithm and ends with a failure"
    record "preflight: cuDNN" FAIL 0 "$STAGE_CUDNN_SONAME not found"
  fi
  [[ -n "$cuda_dirs" ]] && ld_path+=":$cuda_dirs"
  echo "$cuda_dirs" > "$stage/lib/cuda_dirs" 2> /dev/null
  run_env=("LD_LIBRARY_PATH=$ld_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  info LD_LIBRARY_PATH "$ld_path"

  # Versions as the libraries report them (Python ctypes, where there is a python3).
  local py=""
  for p in python3 /opt/torch/.venv/bin/python3; do command -v "$p" > /dev/null 2>&1 && { py=$p; break; }; done
  if [[ -n "$py" ]]; then
    local reported
    reported=$(timeout 30 "$py" - "$libcuda" "$cublas" "${cudnn:-}" 2>&1 << 'EOF'

import ctypes, sys
libcuda, cublas, cudnn = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    v = ctypes.c_int()
    ctypes.CDLL(libcuda).cuDriverGetVersion(ctypes.byref(v))
    print("driver API version: %d.%d" % (v.value // 1000, v.value % 1000 // 10))
except Exception as e:
    print("driver API version: unknown (%s)" % e)
try:
    lib = ctypes.CDLL(cublas)
    parts = []
    for prop in range(3):
        v = ctypes.c_int()
        lib.cublasGetProperty(prop, ctypes.byref(v))
        parts.append(str(v.value))
    print("cuBLAS version: " + ".".join(parts))
except Exception as e:
    print("cuBLAS version: unknown (%s)" % e)
if cudnn:
    try:
        lib = ctypes.CDLL(cudnn)
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        v = lib.cudnnGetVersion()
        print("cuDNN version: %d.%d.%d (%d)" % (v // 10000, v % 10000 // 100, v % 100, v))
    except Exception as e:
        print("cuDNN version: unknown (%s)" % e)
EOF
)
    while read -r line; do info "${line%%:*}" "${line#*: }"; done <<< "$reported"
    versions+="$(grep -E '^(driver API|cuBLAS|cuDNN) version' <<< "$reported" | sed 's/ version:/:/' | paste -sd ';' | sed 's/;/; /g')"
  else
    info versions "no python3 here: versions from the file names above"
  fi

  # winfer_engine_cuda_tests loads models from the source folder compiled into it.
  local made_link=""
  if [[ -n "${STAGE_SOURCE_DIR:-}" && ! -e "$STAGE_SOURCE_DIR/models/examples/tiny_net.yaml" ]]; then
    if [[ ! -e "$STAGE_SOURCE_DIR" ]] && mkdir -p "$(dirname "$STAGE_SOURCE_DIR")" 2> /dev/null &&
       ln -s "$stage" "$STAGE_SOURCE_DIR" 2> /dev/null; then
      made_link=$STAGE_SOURCE_DIR
      info "engine tests' files" "$STAGE_SOURCE_DIR -> $stage (a link, removed at the end)"
    else
      info "engine tests' files" "$STAGE_SOURCE_DIR has no models/ and cannot be linked here: file-based engine tests will fail"
    fi
  fi
  # shellcheck disable=SC2064
  [[ -n "$made_link" ]] && trap "rm -f '$made_link'" EXIT

  # The first CUDA run: a device, the plug-in, cuBLAS, one network against PyTorch's output.
  local smoke rc
  smoke=$(timeout -k 5 90 env "${run_env[@]}" "$stage/bin/winfer" run "$stage/models/examples/tiny_net.yaml" --device cuda \
          --input "$stage/models/examples/tiny_net.input.npy" --expect "$stage/models/examples/tiny_net.output.npy" \
          --repeat 0 --top 0 2>&1)
  rc=$?
  echo "$smoke" > "$res/first_cuda_run.log"
  if ((rc != 0)); then
    echo "$smoke" | tail -20
    fatal 3 "the first CUDA run (tiny_net on cuda:0 against PyTorch's output) failed with status $rc: $(echo "$smoke" | grep -m1 -iE 'error|fail' || echo "$smoke" | tail -1)"
  fi
  info "first CUDA run" "tiny_net on cuda:0: $(echo "$smoke" | grep -m1 'max relative error' || echo ok)"
  record preflight ok $((SECONDS - t0)) "GPU, driver, cuBLAS$( ((have_cudnn)) && echo ", cuDNN"), tiny_net on CUDA"
  if ((probe)); then
    summary
    return "$overall"
  fi

  # ================= 1, 2: native tests
  local s note lines
  s=$SECONDS
  local native_tests=(winfer_cuda_tests winfer_engine_cuda_tests)
  ((zoo_only)) && native_tests=()
  for t in "${native_tests[@]}"; do
    local name cap later
    # later: the minimum seconds kept for the steps after this one (engine tests 30, zoo 60, bench 120)
    if [[ $t == winfer_cuda_tests ]]; then name="kernel tests"; cap=90; later=210; else name="engine tests"; cap=150; later=180; fi
    section "$name ($t)"
    if [[ ! -x "$stage/bin/$t" ]]; then
      record "$name" SKIP 0 "$t not staged"
      continue
    fi
    cap=$(step_cap $cap $later)
    if ((cap < 20)); then record "$name" SKIP 0 "out of time"; continue; fi
    s=$SECONDS
    timeout -k 5 "$cap" env "${run_env[@]}" "$stage/bin/$t" > "$res/$t.log" 2>&1
    rc=$?
    lines=$(grep -E '^\[doctest\] (test cases|assertions)' "$res/$t.log" | sed 's/\[doctest\] //; s/  */ /g; s/ *| *$//' |
            paste -sd ';' | sed 's/;/; /g')
    tail -25 "$res/$t.log"
    if ((rc == 0)); then
      record "$name" ok $((SECONDS - s)) "$lines"
    elif ((rc == 124 || rc == 137)); then
      record "$name" TIMEOUT $((SECONDS - s)) "killed after $cap s; $lines"
    else
      grep -E 'ERROR|FAILED|error:' "$res/$t.log" | head -20
      record "$name" FAIL $((SECONDS - s)) "status $rc$( ((rc == 77)) && echo " (skipped: no usable device)"); $lines see $t.log"
    fi
  done

  # ================= 3: the zoo on CUDA against the CPU backend
  section "zoo on CUDA against the CPU backend, every CUDA algorithm"
  local models
  IFS=',' read -r -a models <<< "$zoo_models"
  if [[ $zoo_models == all ]]; then
    models=()
    for f in "$stage"/models/zoo/*.yaml; do models+=("$(basename "$f" .yaml)"); done
  fi
  ((quick)) && models=(resnet18)
  local algorithms
  algorithms=$(timeout 60 env "${run_env[@]}" "$stage/bin/winfer" run "$stage/models/examples/tiny_net.yaml" --device cuda \
               --conv '?' 2>&1 | sed -n 's/.*(known: \(.*\)).*/\1/p' | tr -d ',')
  [[ -n "$algorithms" ]] || algorithms="direct im2col im2win cudnn"
  ((have_cudnn)) || algorithms=$(tr ' ' '\n' <<< "$algorithms" | grep -vx cudnn | tr '\n' ' ')
  echo "CUDA algorithms: $algorithms"
  local cap zoo_end zoo_fail=0 zoo_rows=0
  if ((zoo_only)); then cap=$(step_cap "$budget" 5); else cap=$(step_cap 200 120); fi
  zoo_end=$((SECONDS + cap))
  s=$SECONDS
  local table="$res/zoo_cuda.txt"
  printf '%-20s %-9s %10s %12s %12s %12s %10s %8s %s\n' model conv "median ms" arena workspace weights "rel err" tol result > "$table"
  local threads
  threads=$(nproc)
  for model in "${models[@]}"; do
    local yaml="$stage/models/zoo/$model.yaml" ref="$res/$model.cpu.npy" left
    left=$((zoo_end - SECONDS))
    if ((left < 10)); then
      printf '%-20s %-9s %s\n' "$model" - "SKIPPED: out of time" >> "$table"
      zoo_fail=1
      continue
    fi
    timeout -k 5 "$left" env "${run_env[@]}" "$stage/bin/winfer" run "$yaml" --random-weights 1 --batch "$zoo_batch" --threads "$threads" \
      --repeat 0 --top 0 --output "$ref" > "$res/$model.cpu.log" 2>&1
    rc=$?
    if ((rc != 0)); then
      printf '%-20s %-9s %s\n' "$model" cpu "FAILED (status $rc): $(grep -m1 -iE 'error' "$res/$model.cpu.log")" >> "$table"
      zoo_fail=1
      continue
    fi
    # The CPU's own spread: its direct convolution against its im2win (another summation order).
    # Random weights blow some networks' activations up (regnet_y_1_6gf: outputs near 800, CPU
    # algorithms 0.7-1.9e-4 apart, measured), so the GPU may differ from the CPU by up to 8x that
    # spread, and never by less than 1e-4; a wrong kernel is off by 1e-2 or more.
    local spread tol
    timeout -k 5 "$((left < 120 ? left : 120))" env "${run_env[@]}" "$stage/bin/winfer" run "$yaml" --random-weights 1 \
      --batch "$zoo_batch" --threads "$threads" --conv direct --repeat 0 --top 0 --expect "$ref" --tolerance 1 \
      > /dev/null 2> "$res/$model.cpu-direct.log"
    spread=$(relative_error "$res/$model.cpu-direct.log")
    tol=$(awk -v s="${spread:-0}" 'BEGIN { t = 8 * s; if (t < 1e-4) t = 1e-4; printf "%.3g", t }')
    echo "$model: CPU direct vs im2win ${spread:-unknown}; GPU tolerance $tol"
    for conv in $algorithms; do
      local log="$res/$model.$conv.log" median arena ws weights err result
      left=$((zoo_end - SECONDS))
      if ((left < 5)); then
        printf '%-20s %-9s %s\n' "$model" "$conv" "SKIPPED: out of time" >> "$table"
        zoo_fail=1
        continue
      fi
      timeout -k 5 "$((left < 90 ? left : 90))" env "${run_env[@]}" "$stage/bin/winfer" run "$yaml" --random-weights 1 \
        --batch "$zoo_batch" --device cuda --conv "$conv" --repeat 20 --top 0 "${zoo_profile[@]}" --expect "$ref" --tolerance "$tol" > /dev/null 2> "$log"
      rc=$?
      zoo_rows=$((zoo_rows + 1))
      median=$(sed -n 's/.*run: median \([0-9.]*\) ms.*/\1/p' "$log" | head -1)
      read -r arena ws weights < <(sed -n 's/^memory ([^)]*): activation arena \(.*\), largest workspace \(.*\), weights as run \(.*\)$/\1|\2|\3/p' "$log" |
                                    tr ' ' '~' | tr '|' ' ')
      err=$(relative_error "$log")
      result=ok
      if ((rc == 124 || rc == 137)); then
        result="TIMEOUT"
        zoo_fail=1
      elif ((rc != 0)); then
        result="FAILED: $(grep -m1 -iE 'error|fail' "$log")"
        zoo_fail=1
      fi
      printf '%-20s %-9s %10s %12s %12s %12s %10s %8s %s\n' "$model" "$conv" "${median:--}" "${arena:--}" "${ws:--}" \
        "${weights:--}" "${err:--}" "$tol" "$result" >> "$table"
    done
  done
  echo "batch $zoo_batch, 224x224, random weights and input; median of 20 runs after one warm-up, including the"
  echo "input upload and output download; memory as the session plans it (device bytes)"
  tr '~' ' ' < "$table" > "$table.tmp" && mv "$table.tmp" "$table"
  cat "$table"
  note="$zoo_rows model x algorithm runs; table in zoo_cuda.txt"
  if ((zoo_fail)); then record "zoo on CUDA" FAIL $((SECONDS - s)) "$note"; else record "zoo on CUDA" ok $((SECONDS - s)) "$note"; fi

  # ================= 4: compute-sanitizer
  section "compute-sanitizer"
  s=$SECONDS
  local sanitizer=""
  for c in compute-sanitizer /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
           /usr/local/cuda-*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer/compute-sanitizer; do
    if command -v "$c" > /dev/null 2>&1; then sanitizer=$(command -v "$c"); break; fi
  done
  if ((zoo_only)); then
    record sanitizer SKIP 0 "--zoo-only"
  elif ((quick)); then
    record sanitizer SKIP 0 "--quick"
  elif [[ -z "$sanitizer" ]]; then
    record sanitizer SKIP 0 "compute-sanitizer not found (PATH, /usr/local/cuda*/bin)"
  else
    echo "$sanitizer: $("$sanitizer" --version 2>&1 | grep -m1 -i version)"
    # san_fail: an error found (fails the check); san_open: a run timed out or was left out for
    # time (no verdict, reported, does not fail the check)
    local san_end san_fail=0 san_open=0 san_runs=0 san_skip=""
    san_end=$((SECONDS + $(step_cap 120 120)))
    # tool | program and arguments | label
    local jobs=(
      "memcheck|winfer im2win|tiny_net im2win"
      "racecheck|winfer im2win|tiny_net im2win"
      "initcheck|winfer im2win|tiny_net im2win"
      "memcheck|winfer direct|tiny_net direct"
      "racecheck|winfer direct|tiny_net direct"
      "initcheck|winfer direct|tiny_net direct"
      "memcheck|winfer im2col|tiny_net im2col"
      "memcheck|winfer cudnn|tiny_net cudnn"
      "racecheck|tests cuda im2win GEMM*,cuda im2win falls back*|im2win GEMM tests"
      "memcheck|tests cuda im2win GEMM*,cuda im2win falls back*|im2win GEMM tests"
    )
    local job tool what label cmd
    for job in "${jobs[@]}"; do
      IFS='|' read -r tool what label <<< "$job"
      local left=$((san_end - SECONDS))
      if [[ -n "$san_skip" ]]; then break; fi
      if ((left < 15)); then
        echo "  $tool $label: skipped, out of time"
        san_open=$((san_open + 1))
        continue
      fi
      case "$what" in
        "winfer cudnn") ((have_cudnn)) || continue ;;
      esac
      if [[ "$what" == winfer* ]]; then
        cmd=("$stage/bin/winfer" run "$stage/models/examples/tiny_net.yaml" --device cuda --conv "${what#winfer }" --repeat 1 --top 0
             --input "$stage/models/examples/tiny_net.input.npy" --expect "$stage/models/examples/tiny_net.output.npy")
      else
        [[ -x "$stage/bin/winfer_cuda_tests" ]] || continue
        cmd=("$stage/bin/winfer_cuda_tests" "-tc=${what#tests }")
      fi
      local slog="$res/sanitizer.$tool.${label// /_}.log"
      local st=$SECONDS
      timeout -k 5 "$((left < 60 ? left : 60))" env "${run_env[@]}" "$sanitizer" --tool "$tool" --error-exitcode 99 \
        --print-limit 20 "${cmd[@]}" > "$slog" 2>&1
      rc=$?
      san_runs=$((san_runs + 1))
      local summary_line
      summary_line=$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$slog" | sed 's/^=* *//')
      if ((san_runs == 1)) && ((rc != 0 && rc != 124 && rc != 137)) &&
         { [[ -z "$summary_line" ]] ||
           grep -qiE 'Device not supported|not supported on this|Failed to initialize|Target application terminated before first instrumented' "$slog"; }; then
        # The tool itself did not work here (e.g. "Device not supported" under gVisor).
        san_skip="compute-sanitizer does not work here: $( (grep -m1 -iE 'error|not supported|fail' "$slog" || grep -m1 -v '^\s*$' "$slog") | sed 's/^=* *//')"
        tail -5 "$slog"
        break
      fi
      local verdict=ok
      if ((rc == 124 || rc == 137)); then
        verdict="TIMEOUT (no verdict)"
        san_open=$((san_open + 1))
      elif ((rc != 0)); then
        verdict="FAILED (status $rc)"
        san_fail=1
        grep -E '^=+ (Invalid|Race|Uninitialized|Error|Program hit|Warning)' "$slog" | head -8
      fi
      printf '  %-10s %-18s %4d s  %-40s %s\n' "$tool" "$label" $((SECONDS - st)) "${summary_line:-no summary}" "$verdict"
    done
    if [[ -n "$san_skip" ]]; then
      record sanitizer SKIP $((SECONDS - s)) "$san_skip"
    elif ((san_fail)); then
      record sanitizer FAIL $((SECONDS - s)) "$san_runs runs, errors found, $san_open without verdict; logs sanitizer.*.log"
    else
      record sanitizer ok $((SECONDS - s)) "$san_runs runs, no errors$( ((san_open)) && echo ", $san_open timed out or left out for time (no verdict)")"
    fi
  fi

  # ================= 5: paper12 layer benchmark
  section "paper12 layer benchmark, batch 128 (im2win, im2col, direct, cudnn)"
  s=$SECONDS
  cap=$(step_cap 200 0)
  if ((zoo_only)); then
    record "paper12 bench" SKIP 0 "--zoo-only"
  elif ((cap < 30)); then
    record "paper12 bench" SKIP 0 "out of time"
  else
    local convs="im2win,im2col,direct,cudnn" filter=()
    ((have_cudnn)) || convs="im2win,im2col,direct"
    ((quick)) && filter=(--filter conv1)
    timeout -k 5 "$cap" env "${run_env[@]}" WINFER_BENCH_LAYERS="$stage/bench/layers" "$stage/bin/winfer" bench --device cuda \
      --layers paper12 --batch 128 --conv "$convs" --runs "${RUNS:-20}" "${filter[@]}" > "$res/paper12_cuda.txt" 2> "$res/paper12_cuda.log"
    rc=$?
    cat "$res/paper12_cuda.txt"
    tail -5 "$res/paper12_cuda.log"
    local peak tf
    peak=$(grep -m1 -oE 'FP32 peak [0-9.]+ TFLOPS' "$res/paper12_cuda.txt")
    tf=$(grep -E '^  [a-z0-9]+ +[0-9]+ layer\(s\)' "$res/paper12_cuda.txt" |
         awk '{ printf "%s%s %s TFLOPS (%s%%)", sep, $1, $4, $6; sep = ", " }')
    if ((rc == 0)); then
      record "paper12 bench" ok $((SECONDS - s)) "${tf:-no summary}; ${peak:-peak unknown}"
    elif ((rc == 124 || rc == 137)); then
      record "paper12 bench" TIMEOUT $((SECONDS - s)) "killed after $cap s"
    else
      record "paper12 bench" FAIL $((SECONDS - s)) "status $rc: $(grep -h -m1 -iE 'error' "$res/paper12_cuda.log" "$res/paper12_cuda.txt" | head -1)"
    fi
  fi
  summary
  return "$overall"
}

summary() {
  section "summary"
  {
    [[ -n "$versions" ]] && echo "found: $versions"
    printf '%-18s %-8s %6s  %s\n' step status seconds note
    local row name status secs note
    for row in "${steps[@]}"; do
      IFS='|' read -r name status secs note <<< "$row"
      printf '%-18s %-8s %6s  %s\n' "$name" "$status" "$secs" "$note"
    done
    echo "total $((SECONDS - t0)) s; overall: $( ((overall == 0)) && echo PASSED || echo FAILED)"
  } | tee "$res/summary.txt"
}

main 2>&1 | tee "$res/device_check.log"
status=${PIPESTATUS[0]}
exit "$status"
