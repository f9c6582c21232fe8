#!/bin/sh
# The measurements behind the tables of docs/PERFORMANCE.md: paper12 and zoo at 1 and 2 threads,
# each as a JSON report and a progress log, then the markdown tables.
#
#   bench/tools/run_tables.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, bench-results)
#
# Run on an otherwise idle machine (check `uptime`): every core the bench uses must be free.
set -eu
build=${1:-build}
out=${2:-bench-results}
winfer=$build/bin/winfer
here=$(dirname "$0")
mkdir -p "$out"
uptime | tee "$out/uptime-before.txt"
for set in paper12 zoo; do
  for threads in 1 2; do
    name=$out/$set-t$threads
    echo "== $set, $threads thread(s)" >&2
    # The JSON is the record (the markdown is made from it); the log has the progress lines.
    # A mismatch against direct makes winfer exit 1: say so, and keep going.
    if ! "$winfer" bench --layers "$set" --threads "$threads" --json > "$name.json" 2> "$name.log"; then
      echo "winfer bench failed or found a mismatch: see $name.log" >&2
    fi
  done
  python3 "$here/bench_tables.py" "$out/$set-t1.json" "$out/$set-t2.json" > "$out/$set.md"
done
uptime | tee "$out/uptime-after.txt"
