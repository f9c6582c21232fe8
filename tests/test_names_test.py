#!/usr/bin/env python3
"""Every doctest test case of the given test binaries is one that ctest can run.

doctest_discover_tests turns each test case name into a ctest test whose command filters the
binary by that name (-tc=NAME). CMake splits lists at ';', so a name holding one became a ctest
test named after its first half, whose filter matched no test case: doctest then ran nothing and
exited 0, and 12 test cases passed in CI for months without running (found in session 32). This
check fails on any name with a character that the discovery cannot carry: ';'. Commas are
escaped by the discovery script and are fine.

    test_names_test.py BINARY...

Binaries that a build did not make (a sanitizer build's subset) are named and left out; with
none built the test is skipped (exit 77).
"""
import os
import subprocess
import sys


def names(binary):
    out = subprocess.run([binary, "--list-test-cases", "--no-version"], check=True, capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if line and not line.startswith(("[doctest]", "====="))]


SKIPPED = 77  # ctest's SKIP_RETURN_CODE for this test


def main(binaries):
    # A sanitizer build makes only some of the test binaries (scripts/sanitize.sh): check those.
    built = [b for b in binaries if os.path.exists(b)]
    for binary in sorted(set(binaries) - set(built)):
        print(f"not built here, not checked: {binary}")
    if not built:
        return SKIPPED
    bad = []
    for binary in built:
        bad += [f"{binary}: {name!r}" for name in names(binary) if ";" in name]
    if bad:
        print("test case names with ';' (ctest would run none of them; use ',' or ':'):")
        print("\n".join(bad))
        return 1
    print(f"{len(built)} test binaries: every test case name can be run by ctest")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
