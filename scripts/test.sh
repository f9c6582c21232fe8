#!/usr/bin/env bash
# Quick start 2: set up, build, and run the whole test suite (this is what CI runs).
#
# Stages, each with a header and its time:
#   1. the test suite (build/, ctest; arguments of this script go to this ctest)
#   2. ASan + UBSan: the doctest suites and the fuzz corpora, instrumented (scripts/sanitize.sh asan)
#   3. TSan: the thread and concurrency tests (scripts/sanitize.sh tsan)
#   4. fuzzing: each libFuzzer target for WINFER_FUZZ_SECONDS (15) s, two at a time, with its
#      number of executions (scripts/fuzz.sh; reuses stage 2's build)
#   5. Python: the package built by pip into a venv (its engine objects from stage 1's ccache),
#      its pytest suite and the Ray example on a local Ray (scripts/python_test.sh)
# WINFER_CI_QUICK=1 runs stage 1 only (for a quick local check; CI runs all four).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
failed=()
durations=()

stage() {  # name, command...
  local name=$1 t0
  shift
  t0=$(date +%s)
  echo
  echo "==== test.sh stage: $name ===="
  if "$@"; then
    durations+=("$name: $(( $(date +%s) - t0 )) s, passed")
  else
    durations+=("$name: $(( $(date +%s) - t0 )) s, FAILED")
    failed+=("$name")
  fi
}

main_suite() {
  "$root/scripts/build.sh" && (cd "$root/build" && ctest --output-on-failure -j "$(nproc)" "$@")
}

"$root/scripts/setup.sh" || exit 1
stage "test suite" main_suite "$@"
if [[ "${WINFER_CI_QUICK:-0}" != 1 ]]; then
  stage "ASan+UBSan" "$root/scripts/sanitize.sh" asan
  stage "TSan" "$root/scripts/sanitize.sh" tsan
  stage "fuzzing" "$root/scripts/fuzz.sh" --build-dir "$root/build-asan" --no-build --time "${WINFER_FUZZ_SECONDS:-15}"
  # The tests compare the package with stage 1's CLI (the same sources), so the package leaves
  # its own CLI out.
  stage "Python" env WINFER_CLI="$root/build/bin/winfer" "$root/scripts/python_test.sh"
else
  echo "test.sh: WINFER_CI_QUICK=1: sanitizer, fuzzing and Python stages skipped"
fi

echo
echo "==== test.sh summary ===="
printf '  %s\n' "${durations[@]}"
echo "test.sh: done in $(( $(date +%s) - start )) s"
if ((${#failed[@]})); then
  echo "test.sh: FAILED: ${failed[*]}"
  exit 1
fi
