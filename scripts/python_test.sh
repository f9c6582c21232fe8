#!/usr/bin/env bash
# The Python stage: the package `winfer` built by pip from the repository root into a venv of
# Debian's python, then its pytest suite (tests/python/). Prints the stage's wall and CPU time.
#
#   scripts/python_test.sh [PYTEST ARGS...]    e.g. -k classify, -x
#
# The venv (build/python-venv, or $WINFER_PYTHON_VENV) is made once and reused; the package's
# CMake build directory (build/pip/<wheel tag>, pyproject.toml) too, so a second run rebuilds
# only what changed: pip runs without build isolation for that (an isolated build environment
# lives in a new temporary folder each time, and scikit-build-core then starts the build
# directory afresh). The build is CPU-only, without tests or bench peers (pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${WINFER_PYTHON_VENV:-build/python-venv}
python=/usr/bin/python3
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export PIP_DISABLE_PIP_VERSION_CHECK=1
start=$SECONDS

if [[ ! -x $venv/bin/python ]]; then
  echo "python_test: creating $venv ($($python --version))"
  $python -m venv "$venv" || { echo "python_test: $python -m venv failed: apt-get install python3-venv" >&2; exit 1; }
fi
echo "python_test: installing the build and test requirements (tests/python/requirements.txt)"
"$venv/bin/pip" install -q -r tests/python/requirements.txt
# The Ray example's test needs Ray Data and Pillow (test-only); WINFER_REQUIRE_RAY=1 makes that
# test fail rather than skip when they are missing.
"$venv/bin/pip" install -q -r tests/python/requirements-ray.txt
export WINFER_REQUIRE_RAY=1
# With $WINFER_CLI (e.g. build/bin/winfer, built from the same sources), the tests compare with
# that CLI and the package leaves its own out (a fifth of its build).
if [[ -n ${WINFER_CLI:-} ]]; then
  config=(--config-settings=cmake.define.WINFER_PYTHON_CLI=OFF)
else
  config=(--config-settings=cmake.define.WINFER_PYTHON_CLI=ON)
fi
# The engine's objects from build/'s compile, where scripts/build.sh made it through ccache: the
# same compilers and launcher, and a build folder beside build/ (ccache's base_dir makes paths
# relative to the build folder, so only a folder at the same depth gives the same command
# lines). In CI this saves compiling the engine a second time (~300 s of CPU).
if [[ -f build/CMakeCache.txt ]] && grep -q '^CMAKE_CXX_COMPILER_LAUNCHER:.*ccache' build/CMakeCache.txt; then
  cache_value() { sed -n "s/^$1:[A-Z]*=//p" build/CMakeCache.txt; }
  launcher=$(cache_value CMAKE_CXX_COMPILER_LAUNCHER)
  config+=(--config-settings=build-dir=build-python
           "--config-settings=cmake.define.CMAKE_C_COMPILER=$(cache_value CMAKE_C_COMPILER)"
           "--config-settings=cmake.define.CMAKE_CXX_COMPILER=$(cache_value CMAKE_CXX_COMPILER)"
           "--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=$launcher"
           "--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=$launcher")
  echo "python_test: compiling through build/'s ccache, in build-python/"
fi
echo "python_test: building and installing the package (pip install ., $CMAKE_BUILD_PARALLEL_LEVEL jobs, CLI: ${WINFER_CLI:-its own})"
build_start=$SECONDS
log=$(mktemp)
if ! "$venv/bin/pip" install -v --no-build-isolation "${config[@]}" . >"$log" 2>&1; then
  tail -n 60 "$log" >&2
  echo "python_test: pip install . failed (the full log: $log)" >&2
  exit 1
fi
rm -f "$log"
build_seconds=$((SECONDS - build_start))

echo "python_test: pytest tests/python"
test_start=$SECONDS
status=0
"$venv/bin/python" -m pytest tests/python -q -p no:cacheprovider "$@" || status=$?
test_seconds=$((SECONDS - test_start))

# CPU time of this script's children (pip, the compiler, pytest): the second line of bash's
# `times`, run in this shell (in a pipeline it would be a child's, which starts at zero).
times_file=$(mktemp)
times >"$times_file"
cpu=$(sed -n 2p "$times_file" | awk '{
  split($1, u, "m"); split($2, s, "m"); sub("s", "", u[2]); sub("s", "", s[2]);
  printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
rm -f "$times_file"
echo "python_test: $((SECONDS - start)) s wall (build ${build_seconds} s, tests ${test_seconds} s), ${cpu} s CPU"
exit $status
