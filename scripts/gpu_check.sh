#!/usr/bin/env bash
# The GPU check (docs/CUDA.md): on a machine with a CUDA device, in one go and in a few minutes,
#   1. builds winfer with the CUDA backend (Release, WINFER_CUDA=ON) into build-gpu/,
#   2. runs the CUDA tests natively: every kernel (winfer_cuda_tests) and whole networks against the
#      CPU backend (winfer_engine_cuda_tests),
#   3. runs one network of each zoo family end to end on CUDA with every CUDA convolution algorithm
#      and compares each output with the CPU backend's (max relative error <= 1e-4, FP32),
#   4. prints a table of time and memory per model and algorithm, then the layer benchmark of the
#      im2win paper's twelve layers at batch 128 when scripts/gpu_bench.sh is there.
# Usage: scripts/gpu_check.sh [--quick]     (--quick: resnet18 only, no layer benchmark)
# Exit status: 0 when every step passed; the table is printed either way.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-gpu"
quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
start=$(date +%s)
status=0
section() { printf '\n==== %s (%d s)\n' "$1" $(( $(date +%s) - start )); }

section "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi not found"

section "build (Release, WINFER_CUDA=ON)"
jobs=$(nproc)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DWINFER_CUDA=ON -DWINFER_BENCH_PEERS=OFF >/dev/null || exit 1
cmake --build "$build" -j "$jobs" --target winfer winfer_cuda_tests winfer_engine_cuda_tests 2>&1 | grep -E 'error|warning' || true
for t in winfer winfer_cuda_tests winfer_engine_cuda_tests; do
  [[ -x "$build/bin/$t" ]] || { echo "build failed: $t missing"; exit 1; }
done
winfer="$build/bin/winfer"

section "CUDA kernel tests (native)"
"$build/bin/winfer_cuda_tests" || status=1
section "whole networks on CUDA vs the CPU backend (native)"
"$build/bin/winfer_engine_cuda_tests" || status=1

section "zoo end to end: CUDA vs CPU, every CUDA algorithm"
models=(resnet18 resnet50 vgg16 shufflenet_v2_x1_0)
[[ $quick == 1 ]] && models=(resnet18)
algorithms=$("$winfer" run "$root/models/examples/tiny_net.yaml" --device cuda --conv '?' 2>&1 |
             sed -n 's/.*(known: \(.*\)).*/\1/p' | tr -d ',')
echo "CUDA algorithms: $algorithms"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
table="$tmp/table"
printf '%-20s %-8s %10s %12s %12s %12s %10s %s\n' model conv "median ms" arena workspace weights "rel err" result >"$table"
for model in "${models[@]}"; do
  yaml="$root/models/zoo/$model.yaml"
  ref="$tmp/$model.cpu.npy"
  "$winfer" run "$yaml" --random-weights 1 --batch 8 --threads "$jobs" --repeat 0 --top 0 --output "$ref" \
    >/dev/null 2>"$tmp/cpu.log" || { cat "$tmp/cpu.log"; status=1; continue; }
  for conv in $algorithms; do
    log="$tmp/$model.$conv.log"
    "$winfer" run "$yaml" --random-weights 1 --batch 8 --device cuda --conv "$conv" --repeat 20 --top 0 \
      --expect "$ref" --tolerance 1e-4 >/dev/null 2>"$log"
    rc=$?
    median=$(sed -n 's/.*run: median \([0-9.]*\) ms.*/\1/p' "$log")
    read -r arena ws weights < <(sed -n 's/^memory ([^)]*): activation arena \(.*\), largest workspace \(.*\), weights as run \(.*\)$/\1|\2|\3/p' "$log" |
                                  tr ' ' '_' | tr '|' ' ')
    err=$(sed -n 's/^max relative error vs [^:]*: \([^ ]*\) .*/\1/p' "$log")
    result=ok
    if [[ $rc != 0 ]]; then result="FAILED: $(grep -m1 -E 'error|FAILED' "$log")"; status=1; fi
    printf '%-20s %-8s %10s %12s %12s %12s %10s %s\n' "$model" "$conv" "${median:--}" "${arena:--}" "${ws:--}" \
      "${weights:--}" "${err:--}" "$result" >>"$table"
  done
done
echo "batch 8, 224x224, random weights and input; median of 20 runs after one warm-up, including the"
echo "input upload and output download; memory as the session plans it (device bytes)"
tr '_' ' ' <"$table"

if [[ $quick == 0 && -x "$root/scripts/gpu_bench.sh" ]]; then
  section "layer benchmark (scripts/gpu_bench.sh)"
  WINFER_BUILD_DIR="$build" "$root/scripts/gpu_bench.sh" || status=1
fi

section "done, status $status"
exit $status
