#!/usr/bin/env python3
"""What sending the pool workers to sleep after each run costs the next run, measured A/B.

    /usr/bin/python3 bench/tools/idle_ab.py MODEL [--threads 2] [--idle 0.3] [--rounds 25]

MODEL: an .onnx or winfer .yaml file (a quantized .yaml too). After a multi-threaded run the
engine sends the calling thread's pool workers to sleep (kernels/cpu/thread_pool.h, so that idle
workers do not spin on the cores; docs/PERFORMANCE.md, "Idle workers", "Thread pool");
WINFER_PAUSE_WORKERS=0 leaves them spinning (2 ms, then they sleep). The engine reads the
variable at every run, so one process can compare both: each round, in shuffled order, per mode:
set the mode, one untimed run (which ends with that mode's rest or not), `--idle` seconds of
sleep (a caller with other work between inferences), then the timed run. Prints median and p10
per mode, and the CPU the process burns in the idle time after a run in each mode.
"""
import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import peer_bench  # noqa: E402

MODES = {"pause": None, "keep": "0"}  # WINFER_PAUSE_WORKERS per mode


def set_mode(mode):
    if MODES[mode] is None:
        os.environ.pop("WINFER_PAUSE_WORKERS", None)
    else:
        os.environ["WINFER_PAUSE_WORKERS"] = MODES[mode]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--idle", type=float, default=0.3, help="seconds between runs (default 0.3)")
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "..", "build"))
    args = parser.parse_args()
    winfer = peer_bench.winfer_lib(os.path.abspath(args.build))
    if args.model.endswith(".yaml"):
        call = peer_bench.load_winfer_int8(winfer, args.model, args.threads, 1)
    else:
        call = peer_bench.load_winfer(winfer, args.model, "im2win", args.threads, 1)
    call = call[0] if isinstance(call, tuple) else call
    shape = (1, 3, 224, 224)
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    times = {mode: [] for mode in MODES}
    idle_cpu = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        modes = list(MODES)
        random.shuffle(modes)
        for mode in modes:
            set_mode(mode)
            call(x)
            cpu = time.process_time()
            time.sleep(args.idle)
            idle_cpu[mode].append((time.process_time() - cpu) * 1e3)
            start = time.perf_counter()
            call(x)
            times[mode].append((time.perf_counter() - start) * 1e3)
    set_mode("pause")
    print(f"{os.path.basename(args.model)}, {args.threads} threads, {args.idle} s idle between runs, "
          f"{args.rounds} rounds, load average {os.getloadavg()[0]:.2f}")
    for mode in MODES:
        ts = sorted(times[mode])
        print(f"  {mode:6s} (WINFER_PAUSE_WORKERS={MODES[mode] or 'unset'}): run median {statistics.median(ts):.2f} ms, "
              f"p10 {ts[len(ts) // 10]:.2f} ms; CPU in the idle time after a run: median "
              f"{statistics.median(idle_cpu[mode]):.1f} ms")


if __name__ == "__main__":
    main()
