#!/usr/bin/env python3
"""Per-call cost of winfer's Python binding: Session.run against the C API, on a tiny model.

    build/python-venv/bin/python bench/tools/python_overhead.py [--model M] [--calls N] [--lib L]

Runs, interleaved in rounds (the machine is shared and noisy), with one thread each:
  c-loop        winfer_session_run called from a C loop (a helper compiled here with cc and
                loaded with ctypes; the loop and its clock are C): the engine's own time;
  ctypes        winfer_session_run called through ctypes, one Python call per run;
  run(out=)     Session.run(x, out=y): no allocation;
  run()         Session.run(x): a new output array per call;
and prints the median microseconds per call of each, and the binding's overhead (run(out=)
and run() less c-loop). The C API comes from build/lib/libwinfer.so (--lib); the Python one
from the `winfer` package of the interpreter running this script.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]

C_LOOP = r"""
#include <stddef.h>
#include <time.h>
int winfer_session_run(void* session, const float* input, size_t input_count, float* output, size_t output_count);
static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
/* Runs `calls` times, each call's microseconds into us[i]; the first failing status or 0. */
int time_runs(void* session, const float* in, size_t n_in, float* out, size_t n_out, int calls, double* us) {
  for (int i = 0; i < calls; ++i) {
    const double start = now_us();
    const int status = winfer_session_run(session, in, n_in, out, n_out);
    us[i] = now_us() - start;
    if (status != 0) return status;
  }
  return 0;
}
"""


def c_api(lib_path: str, model: str):
    lib = ctypes.CDLL(lib_path)
    lib.winfer_last_error.restype = ctypes.c_char_p
    p = ctypes.c_void_p

    def ok(status):
        if status != 0:
            raise RuntimeError(lib.winfer_last_error().decode())

    model_h, config, session = p(), p(), p()
    ok(lib.winfer_model_load(model.encode(), None, ctypes.byref(model_h)))
    ok(lib.winfer_session_config_create(ctypes.byref(config)))
    ok(lib.winfer_session_config_set_threads(config, 1))
    ok(lib.winfer_session_create_with_config(model_h, config, ctypes.byref(session)))
    lib.winfer_session_run.argtypes = [p, p, ctypes.c_size_t, p, ctypes.c_size_t]
    return lib, session


def compile_c_loop(lib_path: str):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    folder = Path(tempfile.mkdtemp(prefix="winfer_overhead_"))
    (folder / "loop.c").write_text(C_LOOP)
    so = folder / "libloop.so"
    lib_dir = str(Path(lib_path).resolve().parent)
    subprocess.run([cc, "-O2", "-shared", "-fPIC", str(folder / "loop.c"), "-o", str(so), "-L" + lib_dir,
                    "-Wl,-rpath," + lib_dir, "-l:" + Path(lib_path).name], check=True)
    loop = ctypes.CDLL(str(so))
    p = ctypes.c_void_p
    loop.time_runs.argtypes = [p, p, ctypes.c_size_t, p, ctypes.c_size_t, ctypes.c_int, p]
    return loop


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "models/examples/tiny_net.yaml"))
    parser.add_argument("--lib", default=str(ROOT / "build/lib/libwinfer.so"))
    parser.add_argument("--calls", type=int, default=200, help="calls per method per round")
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()

    import winfer

    if not os.path.exists(args.lib):
        print(f"{args.lib} not found: build it (cmake --build build --target winfer_lib)", file=sys.stderr)
        return 1
    lib, c_session = c_api(args.lib, args.model)
    loop = compile_c_loop(args.lib)
    session = winfer.Model(args.model).session(threads=1)
    x = np.random.default_rng(0).uniform(-1, 1, session.input_shape).astype(np.float32)
    y = np.empty(session.output_shapes[0], np.float32)
    y_c = np.empty_like(y)
    xp, yp = x.ctypes.data, y_c.ctypes.data
    run_c = lib.winfer_session_run

    def ctypes_calls(n):
        times = []
        for _ in range(n):
            t = time.perf_counter_ns()
            run_c(c_session, xp, x.size, yp, y_c.size)
            times.append((time.perf_counter_ns() - t) / 1e3)
        return times

    def c_loop_calls(n):
        us = (ctypes.c_double * n)()
        if loop.time_runs(c_session, xp, x.size, yp, y_c.size, n, us) != 0:
            raise RuntimeError(lib.winfer_last_error().decode())
        return list(us)

    def run_out(n):
        times, run = [], session.run
        for _ in range(n):
            t = time.perf_counter_ns()
            run(x, out=y)
            times.append((time.perf_counter_ns() - t) / 1e3)
        return times

    def run_new(n):
        times, run = [], session.run
        for _ in range(n):
            t = time.perf_counter_ns()
            run(x)
            times.append((time.perf_counter_ns() - t) / 1e3)
        return times

    methods = {"ctypes": ctypes_calls, "run(out=)": run_out, "run()": run_new}
    if loop is not None:
        methods = {"c-loop": c_loop_calls, **methods}
    samples = {name: [] for name in methods}
    for fn in methods.values():  # warm-up
        fn(args.calls)
    for r in range(args.rounds):
        order = list(methods.items())
        if r % 2:
            order.reverse()
        for name, fn in order:
            samples[name] += fn(args.calls)
    assert np.array_equal(y, y_c), "the Python and C outputs differ"

    print(f"model {Path(args.model).name}, input {session.input_shape}, 1 thread, "
          f"{args.rounds} rounds x {args.calls} calls per method, interleaved")
    medians = {name: statistics.median(t) for name, t in samples.items()}
    for name, m in medians.items():
        q = statistics.quantiles(samples[name], n=10)
        print(f"  {name:10s} median {m:8.2f} us   (p10 {q[0]:.2f}, p90 {q[-1]:.2f})")
    base = medians.get("c-loop", medians["ctypes"])
    print(f"binding overhead vs {'c-loop' if 'c-loop' in medians else 'ctypes'}: "
          f"run(out=) {medians['run(out=)'] - base:+.2f} us, run() {medians['run()'] - base:+.2f} us, "
          f"ctypes {medians['ctypes'] - base:+.2f} us per call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
