#!/usr/bin/env bash
# Mutation check of the CUDA emulator (issue 26): each mutant of tests/cuda/mutants/mutants.txt
# is a known kind of CUDA bug planted in a real kernel of kernels/cuda/; this script applies them
# one at a time to a private copy of the sources, rebuilds only the emulated kernel tests
# (winfer_cuda_emu_tests, WINFER_CUDA=EMU) and runs them under the emulator's check modes until
# one fails. Every mutant must be caught, and the unmutated copy must pass every mode.
#
#   scripts/emu_mutants.sh                  run every mutant; table on stdout; exit 1 if one survives
#   scripts/emu_mutants.sh NAME...          only these mutants (names from the table)
#   scripts/emu_mutants.sh --if-changed     run only if kernels/cuda, tests/cuda or this script
#                                           changed since the run recorded in tests/cuda/mutants/STAMP
#   scripts/emu_mutants.sh --update-stamp   run every mutant; on success write STAMP (commit it)
#   scripts/emu_mutants.sh --all-modes      run every mode on every mutant (which modes catch what)
#   scripts/emu_mutants.sh --list           the mutants of the table, and whether each applies
#   --work-dir DIR   the copy, its build and its ccache (default build-mutants/; kept between runs)
#   --lock FILE      hold FILE (flock) around each compile, e.g. /tmp/winfer-build.lock
#
# The shared working tree is never modified: the tracked and untracked-not-ignored files are
# copied into DIR/src (only files whose content changed are rewritten, so the build there stays
# incremental), the mutant is applied there and undone after its run. ccache (where installed)
# keeps DIR/ccache, so an undone mutant's objects come back from the cache.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
table="$root/tests/cuda/mutants/mutants.txt"
stamp="$root/tests/cuda/mutants/STAMP"
work="$root/build-mutants"
lock=""
action=run
all_modes=0
names=()
# The check modes, in the order tried (the same as ctest's emu.checks.*; "plain" = no checks).
# shellcheck disable=SC2054  # the commas are inside the modes
modes=(plain poison warps,seed=1 warps,seed=2 warps,seed=3 uninit,race poison,warps,seed=4)
# What the stamp covers: the kernels and the emulator, their tests, the mutants and this script.
stamp_paths=(kernels/cuda tests/cuda scripts/emu_mutants.sh)
test_timeout=${WINFER_MUTANT_TEST_TIMEOUT:-300}

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
    --if-changed) action=if-changed ;;
    --update-stamp) action=update-stamp ;;
    --list) action=list ;;
    --all-modes) all_modes=1 ;;
    --work-dir) work=$2; shift ;;
    --lock) lock=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "emu_mutants.sh: unknown option $1 (--help)" >&2; exit 2 ;;
    *) names+=("$1") ;;
  esac
  shift
done
work=$(mkdir -p "$work" && cd "$work" && pwd)
src="$work/src"
bld="$work/build"
backup="$work/backup"

# The helper for what bash does badly: the table, the copy, applying and undoing a mutant, the
# stamp (python3 -c, so that stdin stays free for file lists).
helper_py=$(
  cat << 'PY'
import hashlib, os, shutil, sys

def parse(path):
    """Mutant blocks: '== name', 'key: value' lines, then hunks '@@ old' ... '@@ new' ... '@@ end'."""
    mutants, cur, block, lines = [], None, None, []
    for no, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if block is not None and not line.startswith("@@ "):
            lines.append(line)
            continue
        if line.startswith("@@ "):
            word = line[3:].strip()
            if cur is None:
                sys.exit(f"{path}:{no}: '{line}' outside a mutant")
            if block == "old" and word == "new":
                cur["hunks"].append(["\n".join(lines) + "\n", None])
            elif block == "new" and word in ("end", "old"):  # another hunk may follow
                cur["hunks"][-1][1] = "\n".join(lines) + "\n" if lines else ""
            elif block is None and word == "old":
                pass
            else:
                sys.exit(f"{path}:{no}: '@@ {word}' out of order (expected @@ old, @@ new, @@ end)")
            block = None if word == "end" else word
            lines = []
            continue
        if line.startswith("== "):
            cur = {"name": line[3:].strip(), "hunks": [], "line": no}
            mutants.append(cur)
        elif line.strip() and not line.startswith("#"):
            if cur is None or ":" not in line:
                sys.exit(f"{path}:{no}: expected '== name', 'key: value' or '@@ old'")
            key, value = line.split(":", 1)
            cur[key.strip()] = value.strip()
    if block is not None:
        sys.exit(f"{path}: the last mutant's hunk has no '@@ end'")
    for m in mutants:
        for key in ("file", "kind", "expect"):
            if key not in m:
                sys.exit(f"{path}:{m['line']}: mutant {m['name']} has no '{key}:'")
        if not m["hunks"]:
            sys.exit(f"{path}:{m['line']}: mutant {m['name']} has no hunk")
    names = [m["name"] for m in mutants]
    if len(set(names)) != len(names):
        sys.exit(f"{path}: duplicate mutant names")
    return mutants

def find(mutants, name):
    for m in mutants:
        if m["name"] == name:
            return m
    sys.exit(f"no mutant '{name}' in the table")

def mutate(m, tree):
    """The file's text with every hunk applied; each old text must occur exactly once."""
    path = os.path.join(tree, m["file"])
    if not os.path.isfile(path):
        return None, f"{m['file']} does not exist"
    text = open(path, encoding="utf-8").read()
    for i, (old, new) in enumerate(m["hunks"], 1):
        count = text.count(old)
        if count != 1:
            return None, f"hunk {i}'s old text occurs {count} times in {m['file']} (must be once): update the table"
        text = text.replace(old, new)
    return text, None

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "list":  # table -> "name<TAB>kind<TAB>file<TAB>expect" (and whether it applies to tree)
    table, tree = args
    for m in parse(table):
        _, err = mutate(m, tree)
        print("\t".join([m["name"], m["kind"], m["file"], m["expect"], err or "applies"]))
elif cmd == "apply":  # table name tree backup_dir
    table, name, tree, backup = args
    m = find(parse(table), name)
    text, err = mutate(m, tree)
    if err:
        sys.exit(f"mutant {name}: {err}")
    path = os.path.join(tree, m["file"])
    saved = os.path.join(backup, m["file"])
    os.makedirs(os.path.dirname(saved), exist_ok=True)
    shutil.copy2(path, saved)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(m["file"])
elif cmd == "undo":  # tree backup_dir file: the original content, with a new mtime (make rebuilds)
    tree, backup, rel = args
    saved = os.path.join(backup, rel)
    with open(saved, "rb") as f:
        data = f.read()
    with open(os.path.join(tree, rel), "wb") as f:
        f.write(data)
    os.remove(saved)
elif cmd == "sync":  # source dest; the file list (NUL-separated) on stdin
    source, dest = args
    wanted = set(p for p in sys.stdin.read().split("\0") if p and os.path.isfile(os.path.join(source, p)))
    copied = 0
    for rel in sorted(wanted):
        s, d = os.path.join(source, rel), os.path.join(dest, rel)
        data = open(s, "rb").read()
        if os.path.isfile(d) and open(d, "rb").read() == data:
            continue
        os.makedirs(os.path.dirname(d), exist_ok=True)
        with open(d, "wb") as f:
            f.write(data)
        shutil.copymode(s, d)
        copied += 1
    removed = 0
    for dirpath, _, files in os.walk(dest):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), dest)
            if rel not in wanted:
                os.remove(os.path.join(dirpath, name))
                removed += 1
    print(f"{len(wanted)} files, {copied} copied, {removed} removed")
elif cmd == "stamp":  # source; paths (NUL-separated) on stdin -> one hash of names and contents
    source = args[0]
    h = hashlib.sha256()
    for rel in sorted(p for p in sys.stdin.read().split("\0") if p):
        path = os.path.join(source, rel)
        if rel == "tests/cuda/mutants/STAMP" or not os.path.isfile(path):
            continue
        h.update(rel.encode() + b"\0" + hashlib.sha256(open(path, "rb").read()).digest())
    print(h.hexdigest())
else:
    sys.exit(f"unknown helper command {cmd}")
PY
)
helper() { python3 -c "$helper_py" "$@"; }

source_files() { git -C "$root" ls-files -z -co --exclude-standard -- "$@"; }
current_stamp() { source_files "${stamp_paths[@]}" | helper stamp "$root"; }

if [[ $action == if-changed ]]; then
  if ! git -C "$root" rev-parse --git-dir > /dev/null 2>&1; then
    echo "emu_mutants.sh: $root is not a git checkout: cannot tell what changed, running every mutant"
  else
    now=$(current_stamp) || exit 2
    recorded=$(sed -n '/^[0-9a-f]\{64\}$/p' "$stamp" 2> /dev/null | head -1)
    if [[ "$now" == "$recorded" ]]; then
      echo "emu_mutants.sh: kernels/cuda, tests/cuda and the mutants unchanged since the recorded passing run ($stamp): nothing to do"
      exit 0
    fi
    echo "emu_mutants.sh: ${stamp_paths[*]} changed since the recorded passing run (stamp ${recorded:-missing}, now $now): running every mutant"
  fi
fi

sync_sources() {
  mkdir -p "$src"
  source_files . | helper sync "$root" "$src" || return 1
}

if [[ $action == list ]]; then
  sync_sources > /dev/null || exit 2
  helper list "$table" "$src" | column -t -s $'\t'
  exit 0
fi

# One run per work folder at a time (ctest's and a developer's would undo each other's mutants).
exec 9> "$work/run.lock"
flock -n 9 || { echo "emu_mutants.sh: another run is using $work (--work-dir elsewhere, or wait)"; exit 2; }

t_start=$(date +%s)
# The stamp of the sources this run copies (written on success with --update-stamp).
stamp_now=$(current_stamp) || exit 2
echo "emu_mutants.sh: copy in $src: $(sync_sources)" || exit 2
# Undo anything a killed run left applied (the copy was just synced back, but not the backups).
rm -rf "$backup"

compile() {  # cmake --build of the emulated kernel tests, under the lock when asked
  local cmdline=(cmake --build "$bld" --target winfer_cuda_emu_tests -j "$(nproc)")
  if [[ -n "$lock" ]]; then flock "$lock" "${cmdline[@]}"; else "${cmdline[@]}"; fi
}

if [[ ! -f "$bld/CMakeCache.txt" ]]; then
  generator=()
  command -v ninja > /dev/null && generator=(-G Ninja)
  launcher=()
  if [[ "${WINFER_CCACHE:-1}" != 0 ]] && command -v ccache > /dev/null; then
    ccache_env="env;CCACHE_DIR=$work/ccache;CCACHE_BASEDIR=$src;CCACHE_NOHASHDIR=true;ccache"
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER="$ccache_env" -DCMAKE_CXX_COMPILER_LAUNCHER="$ccache_env")
  fi
  echo "emu_mutants.sh: configuring $bld (WINFER_CUDA=EMU, Release)"
  cmake -S "$src" -B "$bld" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DWINFER_CUDA=EMU \
    -DWINFER_BENCH_PEERS=OFF "${launcher[@]}" > "$work/configure.log" 2>&1 || {
    tail -30 "$work/configure.log"
    echo "emu_mutants.sh: configure failed ($work/configure.log)"
    exit 2
  }
fi
tests_bin="$bld/bin/winfer_cuda_emu_tests"

# run_mode MODE LOG: the emulated kernel tests under MODE; status 0 = passed.
run_mode() {
  local mode=$1 log=$2 checks=()
  [[ $mode != plain ]] && checks=(WINFER_EMU_CHECKS="$mode")
  # In a subshell that waits (exit $?), so that bash's "Segmentation fault" notice goes to the log.
  (
    env -u WINFER_EMU_CHECKS "${checks[@]}" stdbuf -oL timeout "$test_timeout" "$tests_bin" --abort-after=1 \
      --no-colors=true --duration=true > "$log" 2>&1
    exit $?
  ) 2>> "$log"
}

# The test case a failed run names (doctest's "TEST CASE:" line), or what else ended it.
failed_case() {
  local log=$1 rc=$2 name note
  # The last "TEST CASE:" header before the first error (doctest prints one before messages too).
  name=$(awk '/^TEST CASE:/ { sub(/^TEST CASE: */, ""); tc = $0 }
              / ERROR: |FATAL ERROR|SIGNAL|crashed|Aborting/ && tc != "" { print tc; exit }' "$log")
  # And what the emulator reported first in that test case, if anything (a check's or the alignment
  # handler's words): stdout is line-buffered and doctest ends each passed case with its duration
  # line, so the reports after the last such line belong to the failed case.
  note=$(awk '/^[0-9.]+ s: / { note = "" }
              /^winfer emulator: / && note == "" { note = $0 }
              / ERROR: |FATAL ERROR|SIGNAL|crashed|Aborting/ { print note; exit }' "$log" |
    sed 's/^winfer emulator: //; s/ at 0x.*//; s/: kernel.*//' | cut -c1-60)
  if ((rc == 124)); then
    echo "timeout (${test_timeout} s)${name:+ in $name}"
  elif [[ -n $name ]]; then
    echo "$name${note:+ [$note]}"
  else
    echo "exit $rc: $(grep -m1 -i 'error\|fail\|abort' "$log" | cut -c1-80)${note:+ [$note]}"
  fi
}

logs="$work/logs"
rm -rf "$logs"
mkdir -p "$logs"

# The unmutated copy: it must build and pass every mode.
t0=$(date +%s)
if ! compile > "$logs/baseline.build.log" 2>&1; then
  tail -30 "$logs/baseline.build.log"
  echo "emu_mutants.sh: the unmutated sources do not build ($logs/baseline.build.log)"
  exit 1
fi
t_build=$(($(date +%s) - t0))
for mode in "${modes[@]}"; do
  run_mode "$mode" "$logs/baseline.$mode.log"
  rc=$?
  if ((rc != 0)); then
    tail -30 "$logs/baseline.$mode.log"
    echo "emu_mutants.sh: the unmutated kernel tests fail under '$mode': $(failed_case "$logs/baseline.$mode.log" $rc)"
    exit 1
  fi
done
echo "emu_mutants.sh: baseline built in ${t_build} s, passes every mode (${modes[*]}) in $(($(date +%s) - t0 - t_build)) s"

mapfile -t rows < <(helper list "$table" "$src") || exit 2
((${#rows[@]})) || { echo "emu_mutants.sh: no mutants in $table"; exit 2; }
if ((${#names[@]})); then
  selected=()
  for n in "${names[@]}"; do
    found=0
    for r in "${rows[@]}"; do [[ ${r%%$'\t'*} == "$n" ]] && selected+=("$r") && found=1; done
    ((found)) || { echo "emu_mutants.sh: no mutant '$n' in $table"; exit 2; }
  done
  rows=("${selected[@]}")
fi

results=()
survivors=()
broken=()
for r in "${rows[@]}"; do
  IFS=$'\t' read -r name kind _file expect applies <<< "$r"
  t0=$(date +%s)
  if [[ $applies != applies ]]; then
    results+=("$name|$kind|NOT APPLIED|$applies|0")
    broken+=("$name")
    continue
  fi
  changed=$(helper apply "$table" "$name" "$src" "$backup") || {
    results+=("$name|$kind|NOT APPLIED|apply failed|0")
    broken+=("$name")
    continue
  }
  caught="" by=""
  compile > "$logs/$name.build.log" 2>&1
  build_rc=$?
  t_built=$(($(date +%s) - t0))
  if ((build_rc != 0)); then
    caught="BUILD FAILED"
    by="$logs/$name.build.log"
    broken+=("$name")
  else
    catchers=()
    for mode in "${modes[@]}"; do
      log="$logs/$name.$mode.log"
      run_mode "$mode" "$log"
      rc=$?
      if ((rc != 0)); then
        catchers+=("$mode: $(failed_case "$log" $rc)")
        ((all_modes)) || break
      fi
    done
    if ((${#catchers[@]})); then
      caught=yes
      by=${catchers[0]}
      # --all-modes: the first catcher in full, then the other modes that failed, and where the
      # emulator reported something of its own, the first such report.
      if ((${#catchers[@]} > 1)); then
        also=$(printf '%s\n' "${catchers[@]:1}" | sed 's/: .*//' | paste -sd' ')
        report=$(printf '%s\n' "${catchers[@]}" | grep -m1 -o '\[[^]]*\]$')
        [[ $by == *"]" ]] && report=""
        by="$by; also $also${report:+ $report}"
      fi
    else
      caught=NO
      by="survived every mode (expected: $expect)"
      survivors+=("$name")
    fi
  fi
  helper undo "$src" "$backup" "$changed"
  results+=("$name|$kind|$caught|$by|$(($(date +%s) - t0))")
  echo "emu_mutants.sh: $name: $caught ($by), $(($(date +%s) - t0)) s (build $t_built s)"
done
# Leave the copy's build unmutated (the next run starts from it).
compile > "$logs/restore.build.log" 2>&1

echo
echo "| mutant | kind | caught? | by (mode: test case) | s |"
echo "|---|---|---|---|---|"
for line in "${results[@]}"; do
  IFS='|' read -r name kind caught by secs <<< "$line"
  echo "| $name | $kind | $caught | $by | $secs |"
done
echo
total=$(($(date +%s) - t_start))
echo "emu_mutants.sh: ${#rows[@]} mutants, ${#survivors[@]} survived, ${#broken[@]} did not apply or build; ${total} s in all"
if ((${#survivors[@]} || ${#broken[@]})); then
  ((${#survivors[@]})) && echo "emu_mutants.sh: SURVIVED (an emulator blind spot or a missing test): ${survivors[*]}"
  ((${#broken[@]})) && echo "emu_mutants.sh: BROKEN MUTANTS (fix the table): ${broken[*]}"
  exit 1
fi
if [[ $action == update-stamp ]]; then
  if ((${#names[@]})); then
    echo "emu_mutants.sh: --update-stamp needs the whole table (no mutant names): stamp not written"
    exit 1
  fi
  {
    echo "# scripts/emu_mutants.sh --update-stamp: the hash of ${stamp_paths[*]} (names and contents)"
    echo "# when every mutant was last caught; --if-changed runs the mutants only when it differs."
    echo "$stamp_now"
  } > "$stamp"
  echo "emu_mutants.sh: wrote $stamp (commit it)"
fi
exit 0
