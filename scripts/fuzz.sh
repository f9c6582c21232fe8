#!/usr/bin/env bash
# Runs each libFuzzer target (tests/fuzz/) for a fixed time and prints its executions.
#
#   scripts/fuzz.sh                      # builds build-fuzz/ (clang, ASan+UBSan) and runs 60 s per target
#   scripts/fuzz.sh --time 300 image     # one target, 5 minutes
#   scripts/fuzz.sh --build-dir build-asan --no-build   # fuzzers already built there (scripts/test.sh)
#
# Targets: model_yaml safetensors image idx onnx (default: all). Two run at a time (--jobs). Each
# starts from its committed seed corpus (tests/fuzz/corpus/<target>/) plus what earlier runs in
# the same build folder found (<build>/fuzz/corpus/<target>/, never committed). A crash, leak,
# UB report, timeout (10 s per input) or out-of-memory (2 GiB) fails the script; the input is
# saved under <build>/fuzz/findings/<target>/ and the report printed. Turn such an input into a
# regression test: copy it into tests/fuzz/corpus/<target>/ (ctest replays the corpus, tests
# fuzz.<target>.corpus) and add a doctest case for the error it must now give (docs/ERRORS.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=60
jobs=2
build="$root/build-fuzz"
do_build=1
targets=()
while (($#)); do
  case "$1" in
    --time) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build-dir) build=$(cd "$root" && realpath -m "$2"); shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(model_yaml safetensors image idx onnx)
# libFuzzer reads -max_total_time=0 as "forever".
[[ "$seconds" =~ ^[0-9]+$ ]] && ((seconds >= 1)) || { echo "fuzz.sh: --time must be a whole number of seconds >= 1" >&2; exit 2; }

if ((do_build)); then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DWINFER_FUZZ=ON -DWINFER_SANITIZE=address,undefined -DWINFER_BUILD_TESTS=OFF -DWINFER_BENCH_PEERS=OFF \
        -DWINFER_CUDA=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local t=$1 work="$build/fuzz/corpus/$1" findings="$build/fuzz/findings/$1" log="$build/fuzz/$1.log"
  mkdir -p "$work" "$findings"
  local extra=()
  [[ -f "$root/tests/fuzz/$t.dict" ]] && extra+=("-dict=$root/tests/fuzz/$t.dict")
  # New inputs go to the first folder (the build's); the committed seeds are only read.
  # A fixed seed (WINFER_FUZZ_SEED, default 1) makes a CI run repeatable up to where its time ran out.
  "$build/bin/fuzz_$t" "$work" "$root/tests/fuzz/corpus/$t" -max_total_time="$seconds" -print_final_stats=1 \
    -seed="${WINFER_FUZZ_SEED:-1}" \
    -timeout=10 -rss_limit_mb=2048 -max_len=16384 -artifact_prefix="$findings/" "${extra[@]}" >"$log" 2>&1
}

start=$(date +%s)
failed=()
pids=() names=()
for t in "${targets[@]}"; do
  [[ -x "$build/bin/fuzz_$t" ]] || { echo "fuzz.sh: $build/bin/fuzz_$t not built" >&2; exit 1; }
  run_one "$t" & pids+=($!) names+=("$t")
  if ((${#pids[@]} >= jobs)); then
    wait "${pids[0]}" || failed+=("${names[0]}")
    pids=("${pids[@]:1}") names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${names[$i]}"); done

printf '%-12s %14s %10s %8s %s\n' target executions exec/s seconds result
for t in "${targets[@]}"; do
  log="$build/fuzz/$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  result=ok
  [[ " ${failed[*]} " == *" $t "* ]] && result="FAILED (log: $log)"
  printf '%-12s %14s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$seconds" "$result"
done
for t in "${failed[@]}"; do
  echo "---- fuzz_$t failed; the report (full log: $build/fuzz/$t.log) ----"
  grep -E "ERROR|runtime error|SUMMARY|Test unit written|#[0-9]+ 0x" "$build/fuzz/$t.log" | head -40
done
echo "fuzz.sh: ${#targets[@]} target(s), ${#failed[@]} failed, in $(( $(date +%s) - start )) s"
((${#failed[@]} == 0))
