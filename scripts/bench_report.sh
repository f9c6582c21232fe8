#!/usr/bin/env bash
# Whole networks, winfer against PyTorch (eager, frozen, optimized) and, per conv layer, oneDNN and
# XNNPACK, all in one run; then the tables of docs/PERFORMANCE.md and the plots in docs/bench/.
#
#   scripts/bench_report.sh [--build DIR] [--out DIR] [--threads "1 2"] [--quick] [--no-docs]
#                           [--skip-peers] [--skip-batch8] [--skip-memory] [--group NAME]
#   scripts/bench_report.sh --peers [--models "M ..."] [--rounds N] [--threads "1 2"] [--skip-batch8] ...
#
#   --build DIR   the winfer build (default build/; configured with the peers for the per-layer part)
#   --out DIR     raw results (default BUILD/bench-report[-GROUP]): JSON lines, logs, uptime
#   --quick       few runs and small batches: checks the pipeline in a few minutes, numbers are noise
#   --no-docs     write the markdown to OUT/report.md instead of docs/PERFORMANCE.md
#   --group NAME  only one group of networks (each has its own section of docs/PERFORMANCE.md):
#                 classic  resnet18 resnet50 vgg16 shufflenet_v2_x1_0
#                 mobile   mobilenet_v2 mobilenet_v3_large efficientnet_b0 regnet_y_400mf resnext50_32x4d
#                 Default: both, one after the other.
#                 peers    (= --peers) the four-peer comparison of issue 25: winfer against ONNX Runtime,
#                          OpenVINO and ncnn (and PyTorch), resnet18 resnet50 vgg16 shufflenet_v2_x1_0
#                          mobilenet_v2 efficientnet_b0 regnet_y_400mf, batch 1 and 8, interleaved call by
#                          call in one process (bench/tools/peer_bench.py; it makes BUILD/peer-venv with
#                          the pinned peers of bench/tools/peer_requirements.txt on its first run, from
#                          PyPI), plus memory and start-up per engine in processes of their own; tables
#                          between the markers bench_report:peers:begin/end of docs/PERFORMANCE.md.
#                          Never part of the default run. --models replaces its networks, --rounds its
#                          interleaved rounds (default 30 at batch 1, 10 at batch 8; --quick 3). The
#                          whole grid took 19-21 minutes on 2 cores (sessions 23 and 25, otherwise idle).
#
# Run it on an otherwise idle machine: check `uptime` first (it is recorded before and after).
# PyTorch runs through /usr/bin/python3 (Debian's python3-torch, python3-torchvision); without
# them the PyTorch columns stay empty. Each measurement is a process of its own, so every peak
# memory figure is that configuration's alone.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
command_line="scripts/bench_report.sh $*"
build=build
out=
threads_list="1 2"
quick=0
docs=1
peers=1
batch8=1
memory=1
group=
models=
rounds=
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --threads) threads_list=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-docs) docs=0; shift ;;
    --skip-peers) peers=0; shift ;;
    --skip-batch8) batch8=0; shift ;;
    --skip-memory) memory=0; shift ;;
    --group) group=$2; shift 2 ;;
    --peers) group=peers; shift ;;
    --models) models=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "bench_report: unknown argument $1" >&2; exit 2 ;;
  esac
done

# The groups: the classic networks (markers bench_report:begin/end of docs/PERFORMANCE.md) and
# the mobile and grouped ones of issue 23 (markers bench_report:mobile:begin/end).
declare -A group_models=(
  [classic]="resnet18 resnet50 vgg16 shufflenet_v2_x1_0"
  [mobile]="mobilenet_v2 mobilenet_v3_large efficientnet_b0 regnet_y_400mf resnext50_32x4d"
  [peers]="resnet18 resnet50 vgg16 shufflenet_v2_x1_0 mobilenet_v2 efficientnet_b0 regnet_y_400mf"
)
if [[ -z $group ]]; then  # every group, each by a run of this script of its own
  for g in classic mobile; do
    "$0" --build "$build" ${out:+--out "$out-$g"} --threads "$threads_list" \
      $( ((quick)) && echo --quick) $( ((docs)) || echo --no-docs) $( ((peers)) || echo --skip-peers) \
      $( ((batch8)) || echo --skip-batch8) $( ((memory)) || echo --skip-memory) --group $g || exit 1
  done
  exit 0
fi
[[ -n ${group_models[$group]:-} ]] || { echo "bench_report: unknown group '$group' (classic, mobile, peers)" >&2; exit 2; }
read -r -a zoo <<< "${models:-${group_models[$group]}}"
tag_args=(--models "${zoo[*]}")
[[ $group == classic ]] || tag_args+=(--tag "$group")

out=${out:-$build/bench-report-$group}

if [[ $group == peers ]]; then  # bench/tools/peer_bench.py does it all, in one process per step
  [[ -f $build/lib/libwinfer.so ]] ||
    { echo "bench_report: $build/lib/libwinfer.so not found (build first: scripts/build.sh)" >&2; exit 1; }
  mkdir -p "$out"
  rm -f "$out"/peer-engines.jsonl
  echo "$command_line" > "$out/command.txt"
  uptime | tee "$out/uptime-before.txt"
  peer_args=(--threads "${threads_list// /,}" --build "$build" --json "$out/peer-engines.jsonl")
  ((quick)) && peer_args+=(--warmup 1)
  ((memory)) || peer_args+=(--no-memory)
  : > "$out/peer_bench.txt"
  # Batch 1 with 30 rounds, batch 8 with 10 (VGG-16 at batch 8 takes seconds a call, per engine).
  for b in 1 $( ((batch8)) && echo 8); do
    r=${rounds:-$( ((quick)) && echo 3 || { ((b == 1)) && echo 30 || echo 10; })}
    /usr/bin/python3 "$here/bench/tools/peer_bench.py" "${zoo[@]}" --batch $b --rounds "$r" "${peer_args[@]}" \
      2> >(tee -a "$out/progress.log" >&2) | tee -a "$out/peer_bench.txt"
  done
  uptime | tee "$out/uptime-after.txt"
  if ((docs)); then
    /usr/bin/python3 "$here/bench/tools/bench_report.py" "$out" --models "${zoo[*]}" --tag peers \
      --docs "$here/docs/PERFORMANCE.md"
  else
    /usr/bin/python3 "$here/bench/tools/bench_report.py" "$out" --models "${zoo[*]}" --tag peers > "$out/report.md"
    echo "bench_report: wrote $out/report.md" >&2
  fi
  exit 0
fi
winfer=$build/bin/winfer
[[ -x $winfer ]] || { echo "bench_report: $winfer not found (build first: scripts/build.sh)" >&2; exit 1; }
python=/usr/bin/python3
torch_ok=0
if $python -c 'import torch, torchvision' 2>/dev/null; then torch_ok=1; else
  echo "bench_report: $python cannot import torch and torchvision: PyTorch columns left empty" >&2; fi

runs=20; min_time=0.25; runs_big=10; b_mem=16; b_e2e=32; pair_rounds=30; pair_rounds_big=10
if ((quick)); then runs=3; min_time=0; runs_big=2; b_mem=2; b_e2e=2; pair_rounds=3; pair_rounds_big=2; fi

mkdir -p "$out"
rm -f "$out"/*.jsonl "$out"/peers-*.json
echo "$command_line" > "$out/command.txt"
uptime | tee "$out/uptime-before.txt"
log=$out/progress.log
: > "$log"

engine() {  # engine FILE MODEL ARGS...: winfer bench MODEL ARGS --json >> FILE
  local file=$1 model=$2; shift 2
  "$winfer" bench "$model" --json "$@" >> "$out/$file" 2>> "$log" ||
    echo "bench_report: winfer bench $model $* failed (see $log)" >&2
}
pair() {  # pair FILE MODEL ARGS...: bench/tools/pair_bench.py MODEL ARGS --json >> FILE
  ((torch_ok)) && [[ -f $build/lib/libwinfer.so ]] || return 0
  local file=$1 model=$2; shift 2
  $python "$here/bench/tools/pair_bench.py" "$model" --lib "$build/lib/libwinfer.so" --json "$@" 2>> "$log" |
    tail -n 1 >> "$out/$file" || echo "bench_report: pair_bench $model $* failed (see $log)" >&2
}
torch() {  # torch FILE MODEL ARGS...: one process per measurement
  ((torch_ok)) || return 0
  local file=$1 model=$2; shift 2
  $python "$here/bench/tools/torch_bench.py" --model "$model" "$@" >> "$out/$file" 2>> "$log" ||
    echo "bench_report: torch_bench $model $* failed (see $log)" >&2
}

# Model by model, so that the engine and PyTorch numbers of one network are taken minutes apart
# at most (the load of a shared machine drifts).
for t in $threads_list; do
  echo "== batch 1, $t thread(s): winfer (im2win per layer; indirect, im2col, winograd), PyTorch frozen, optimized, eager" >&2
  for m in "${zoo[@]}"; do
    engine "latency-b1-t$t.jsonl" "$m" --threads "$t" --runs $runs --min-time $min_time --per-layer
    torch "latency-b1-t$t.jsonl" "$m" --threads "$t" --batch 1 --runs $runs --min-time $min_time --mode frozen
    torch "latency-b1-t$t.jsonl" "$m" --threads "$t" --batch 1 --runs $runs --min-time $min_time --mode optimized
    torch "latency-b1-t$t.jsonl" "$m" --threads "$t" --batch 1 --runs $runs --min-time $min_time --mode eager
    engine "latency-b1-t$t.jsonl" "$m" --threads "$t" --runs $runs --min-time $min_time --conv indirect,im2col,winograd
  done
done
# The same batch-1 comparison again with both engines in one process, called in turn call by call
# (bench/tools/pair_bench.py): a burst of the neighbours' load then slows both alike.
for t in $threads_list; do
  echo "== batch 1, $t thread(s), interleaved in one process: winfer im2win and winograd, PyTorch optimized and frozen" >&2
  for m in "${zoo[@]}"; do pair "pairs-b1-t$t.jsonl" "$m" --threads "$t" --rounds $pair_rounds; done
done
if ((batch8)); then
  for t in $threads_list; do
    echo "== batch 8, $t thread(s): winfer im2win and winograd, PyTorch frozen and optimized ($runs_big timed runs)" >&2
    for m in "${zoo[@]}"; do
      engine "latency-b8-t$t.jsonl" "$m" --threads "$t" --batch 8 --runs $runs_big --min-time 0 --conv im2win,winograd
      torch "latency-b8-t$t.jsonl" "$m" --threads "$t" --batch 8 --runs $runs_big --mode frozen
      torch "latency-b8-t$t.jsonl" "$m" --threads "$t" --batch 8 --runs $runs_big --mode optimized
    done
    echo "== batch 8, $t thread(s), interleaved in one process ($pair_rounds_big rounds)" >&2
    for m in "${zoo[@]}"; do pair "pairs-b8-t$t.jsonl" "$m" --threads "$t" --batch 8 --rounds $pair_rounds_big; done
  done
fi
if ((memory)); then
  tm=${threads_list##* }
  echo "== memory: batch $b_mem (winfer im2win, PyTorch eager), batch $b_e2e (im2win vs im2col); $tm thread(s)" >&2
  for m in "${zoo[@]}"; do
    engine "memory-b$b_mem.jsonl" "$m" --threads "$tm" --batch $b_mem --runs 1 --min-time 0
    torch "memory-b$b_mem.jsonl" "$m" --threads "$tm" --batch $b_mem --runs 1 --warmup 0 --mode eager
    engine "memory-b$b_e2e.jsonl" "$m" --threads "$tm" --batch $b_e2e --runs 1 --min-time 0 --conv im2win,im2col
  done
fi
if ((peers)); then
  convs=im2win,depthwise
  for p in onednn xnnpack; do  # the peers built into this winfer
    if "$winfer" bench --layers tiny --conv "$p" --runs 1 --min-time 0 --no-peak --no-verify >/dev/null 2>&1; then
      convs=$convs,$p
    fi
  done
  for t in $threads_list; do
    echo "== conv layers, $t thread(s): $convs" >&2
    for m in "${zoo[@]}"; do
      "$winfer" bench --layers "$here/models/zoo/$m.yaml" --conv "$convs" --threads "$t" --runs $runs \
        --min-time $([ $quick = 1 ] && echo 0 || echo 0.1) --json > "$out/peers-$m-t$t.json" 2>> "$log" ||
        echo "bench_report: layer bench of $m failed (see $log)" >&2
    done
  done
fi
uptime | tee "$out/uptime-after.txt"

if ((docs)); then
  $python "$here/bench/tools/bench_report.py" "$out" "${tag_args[@]}" --docs "$here/docs/PERFORMANCE.md" \
    --plots "$here/docs/bench"
else
  $python "$here/bench/tools/bench_report.py" "$out" "${tag_args[@]}" --plots "$out/plots" --plots-link plots \
    > "$out/report.md"
  echo "bench_report: wrote $out/report.md and $out/plots/" >&2
fi
