#!/usr/bin/env bash
# Formats winfer's C++ and CUDA sources with clang-format and the style in .clang-format.
#
#   scripts/format.sh               # the whole tree, in place
#   scripts/format.sh FILE...       # these files, in place
#   scripts/format.sh --check [FILE...]   # change nothing; list the files that are not formatted
#                                   # and exit 1 if any (ctest: format.check)
#
# The tree: engine/ layers/ kernels/ apps/ bench/ tests/ (*.h *.cpp *.cu *.cuh *.c), without the
# third-party and generated files (none are kept in those folders today).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
check=0
if [[ "${1:-}" == "--check" ]]; then
  check=1
  shift
fi
format=$(command -v clang-format || command -v clang-format-14 || true)
if [[ -z "$format" ]]; then
  echo "format.sh: clang-format not found (apt-get install clang-format)" >&2
  exit 77
fi
if (($#)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'engine/*' 'layers/*' 'kernels/*' 'apps/*' 'bench/*' 'tests/*' |
                       grep -E '\.(h|cpp|cu|cuh|c)$')
fi
if ((check)); then
  # One clang-format for all the files, not one per file: 2 s instead of 12 s of CPU for the
  # tree (379 files; ctest's format.check in CI). With --dry-run --Werror it goes through every
  # file and names each violation "FILE:LINE:COL: error: code should be clang-formatted".
  status=0
  report=$("$format" --style=file --dry-run --Werror "${files[@]}" 2>&1 > /dev/null) || status=$?
  mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<< "$report" | sort -u)
  if ((status != 0 && ${#bad[@]} == 0)); then
    printf '%s\n' "$report" >&2
    echo "format.sh: clang-format failed (exit $status)" >&2
    exit 1
  fi
  if ((${#bad[@]})); then
    printf 'not formatted (scripts/format.sh FILE fixes it):\n'
    printf '  %s\n' "${bad[@]}"
    exit 1
  fi
  echo "format.sh: ${#files[@]} files formatted"
else
  "$format" --style=file -i "${files[@]}"
fi
