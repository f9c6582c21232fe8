#!/usr/bin/env python3
"""cmake/code_order.txt against the library this build linked with it (cmake/code_order.cmake).

  code_order_test.py LIB ORDER_FILE

1. The list still names the library's functions: a function renamed or removed since
   scripts/code_order.sh made the list is skipped by the link, and the code networks execute
   spreads over the library again (more of it resident). Fails below 90% with the names missing.
2. The link put them together: the listed functions lie in one block, no longer than their sizes
   and alignment padding, so a network's code is a few 64 KiB windows of the file, not ~40.
"""
import subprocess
import sys


def main():
    lib, order_file = sys.argv[1], sys.argv[2]
    nm = subprocess.run(["nm", "--defined-only", "-S", lib], capture_output=True, text=True, check=True).stdout
    functions = {}
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            functions.setdefault(parts[3], []).append((int(parts[0], 16), int(parts[1], 16)))
    with open(order_file) as f:
        listed = [line.strip() for line in f if line.strip()]
    present = [name for name in listed if name in functions]
    missing = [name for name in listed if name not in functions]
    share = len(present) / max(1, len(listed))
    print(f"code_order_test: {len(present)} of {len(listed)} listed functions in {lib} ({share:.1%})")
    if share < 0.9:
        sys.exit(f"code_order_test: {len(missing)} names of {order_file} are not functions of {lib} "
                 f"(renamed or removed since it was made: run scripts/code_order.sh), e.g. "
                 + ", ".join(missing[:5]))
    spans = [span for name in present for span in functions[name]]
    begin = min(start for start, _ in spans)
    end = max(start + size for start, size in spans)
    code = sum(size for _, size in spans)
    # Each function starts at a 16-byte boundary (GCC's -falign-functions at -O2/-O3): up to 15
    # bytes of padding each, and up to 64 bytes where a function asks for more.
    allowed = code + 64 * len(spans)
    print(f"code_order_test: the listed functions span {(end - begin) / 1024:.0f} KiB from {begin:#x}, "
          f"their code {code / 1024:.0f} KiB")
    if end - begin > allowed:
        sys.exit(f"code_order_test: the listed functions are not together in {lib}: they span "
                 f"{end - begin} bytes for {code} bytes of code (was it linked with lld and "
                 f"--symbol-ordering-file={order_file}?)")


if __name__ == "__main__":
    main()
