#!/usr/bin/env bash
# The im2win paper's twelve layers on the CUDA device, batch 128, FP32: im2win, cuBLAS-im2col,
# direct and cuDNN's fastest FP32 algorithm (TF32 off) side by side, in one run
# (docs/PERFORMANCE_CUDA.md says what to look for). Run on a machine with an NVIDIA GPU:
#
#   scripts/gpu_bench.sh [BUILD_DIR] [extra winfer bench options...]
#
# BUILD_DIR (default build-gpu) is configured and built if needed (Release, CUDA on). Writes the
# table to stdout and BUILD_DIR/paper12_cuda.txt; with JSON=1 a second run (unverified) writes
# BUILD_DIR/paper12_cuda.json.
# Without a GPU it stops with winfer's "no CUDA device: <reason>" (exit status 1).
# Environment: BATCH (default 128), CONVS (default im2win,im2col,direct,cudnn), RUNS (default 20),
# FILTER (a layer name part, default all twelve).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build-gpu}"
shift || true
case "$build" in /*) ;; *) build="$root/$build" ;; esac

batch="${BATCH:-128}"
convs="${CONVS:-im2win,im2col,direct,cudnn}"
runs="${RUNS:-20}"
filter=()
if [[ -n "${FILTER:-}" ]]; then filter=(--filter "$FILTER"); fi

if [[ ! -x "$build/bin/winfer" ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWINFER_CUDA=ON >&2
  cmake --build "$build" --target winfer -j"$(nproc)" >&2
fi

if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total,driver_version --format=csv >&2 || true
fi

common=(bench --device cuda --layers paper12 --batch "$batch" --conv "$convs" --runs "$runs" "${filter[@]}" "$@")
"$build/bin/winfer" "${common[@]}" | tee "$build/paper12_cuda.txt"
echo "wrote $build/paper12_cuda.txt" >&2
if [[ "${JSON:-0}" == 1 ]]; then
  "$build/bin/winfer" "${common[@]}" --json --no-verify > "$build/paper12_cuda.json"
  echo "wrote $build/paper12_cuda.json" >&2
fi
