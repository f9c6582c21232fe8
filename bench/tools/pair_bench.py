#!/usr/bin/python3
"""winfer and PyTorch on one model, timed call by call in turn in one process, for a ratio this
noisy machine cannot skew.

Why: neighbours' bursts here last from a second to minutes and slow whatever runs then by 30-60%,
so two separate measurements (scripts/bench_report.sh times each configuration in a process of
its own) can compare an idle winfer with a slowed PyTorch, or the reverse. Here one process holds
both engines -- winfer through its C API (libwinfer.so, ctypes), PyTorch as torchvision's model
after torch.jit.optimize_for_inference and torch.jit.freeze -- and each round calls every
configuration once, in turn, so that a burst slows them alike. Each configuration's figure is
the median of its calls; the verdict is best winfer / best PyTorch. Each engine evicts the other's
weights from the caches between calls, so both run with cold weights, as they do in the
separate-process measurement anyway for any model larger than L2 (every zoo model).

  /usr/bin/python3 bench/tools/pair_bench.py MODEL [--conv im2win,winograd] [--threads 1]
                   [--batch 1] [--rounds 40] [--warmup 3] [--lib build/lib/libwinfer.so] [--json]

MODEL is a zoo name: models/zoo/MODEL.yaml for winfer (random weights), torchvision's MODEL
(random weights) for PyTorch. Run it with Debian's python (/usr/bin/python3), which has torch and
torchvision.
"""
import argparse
import ctypes
import json
import os
import random
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from torch_bench import set_openblas_coretype  # noqa: E402  (before torch is imported)


class LoadOptions(ctypes.Structure):
    _fields_ = [("weights_path", ctypes.c_char_p), ("use_random_weights", ctypes.c_int),
                ("random_seed", ctypes.c_uint64), ("fuse", ctypes.c_int), ("pack_for", ctypes.c_char_p)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("device", ctypes.c_char_p), ("conv_algorithm", ctypes.c_char_p), ("threads", ctypes.c_int),
                ("batch", ctypes.c_int64), ("memory_budget", ctypes.c_size_t), ("autotune_cache", ctypes.c_char_p),
                ("plan_memory", ctypes.c_int)]


class Winfer:
    """The few C API calls a timed run needs (engine/include/winfer/winfer_c.h)."""

    def __init__(self, lib_path):
        self.lib = ctypes.CDLL(lib_path)
        lib = self.lib
        lib.winfer_last_error.restype = ctypes.c_char_p
        lib.winfer_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(LoadOptions), ctypes.POINTER(ctypes.c_void_p)]
        lib.winfer_session_create.argtypes = [ctypes.c_void_p, ctypes.POINTER(SessionOptions),
                                              ctypes.POINTER(ctypes.c_void_p)]
        lib.winfer_model_input_shape.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                                 ctypes.POINTER(ctypes.c_int)]
        lib.winfer_session_output_shape.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64),
                                                    ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        lib.winfer_session_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                           ctypes.c_size_t]

    def check(self, status, what):
        if status != 0:
            tool = os.path.splitext(os.path.basename(sys.argv[0]))[0]
            raise SystemExit(f"{tool}: {what}: {self.lib.winfer_last_error().decode()}")

    def load(self, yaml_path, pack_for, fuse=1):
        options = LoadOptions()
        self.lib.winfer_load_options_init(ctypes.byref(options))
        options.use_random_weights = 1
        options.random_seed = 1
        options.fuse = fuse
        # "auto" as `winfer bench --conv auto` loads it: packed for the default, im2win.
        options.pack_for = b"im2win" if pack_for == "auto" else pack_for.encode()
        model = ctypes.c_void_p()
        self.check(self.lib.winfer_model_load(yaml_path.encode(), ctypes.byref(options), ctypes.byref(model)),
                   f"loading {yaml_path}")
        return model

    def input_count(self, model, batch):
        """Floats of the model's input at this batch."""
        dims = (ctypes.c_int64 * 8)()
        rank = ctypes.c_int()
        self.check(self.lib.winfer_model_input_shape(model, dims, 8, ctypes.byref(rank)), "input shape")
        count = batch
        for i in range(1, rank.value):
            count *= dims[i]
        return count

    def session(self, model, conv, threads, batch, images_per_run=None):
        """images_per_run: None = the engine's default (its automatic choice), 0 = the whole batch in
        one run, N = N images per run."""
        session = ctypes.c_void_p()
        if images_per_run is not None:  # an option of the session config API only
            config = ctypes.c_void_p()
            self.check(self.lib.winfer_session_config_create(ctypes.byref(config)), "session config")
            self.check(self.lib.winfer_session_config_set_conv_algorithm(config, conv.encode()), "conv")
            self.check(self.lib.winfer_session_config_set_threads(config, ctypes.c_int(threads)), "threads")
            self.check(self.lib.winfer_session_config_set_batch(config, ctypes.c_int64(batch)), "batch")
            self.check(self.lib.winfer_session_config_set_images_per_run(config, ctypes.c_int64(images_per_run)),
                       "images_per_run")
            self.check(self.lib.winfer_session_create_with_config(model, config, ctypes.byref(session)),
                       f"session --conv {conv}, {images_per_run} image(s) per run")
            self.lib.winfer_session_config_destroy(config)
        else:
            options = SessionOptions()
            self.lib.winfer_session_options_init(ctypes.byref(options))
            options.conv_algorithm = conv.encode()
            options.threads = threads
            options.batch = batch
            self.check(self.lib.winfer_session_create(model, ctypes.byref(options), ctypes.byref(session)),
                       f"session --conv {conv}")
        dims = (ctypes.c_int64 * 8)()
        rank = ctypes.c_int()
        self.check(self.lib.winfer_session_output_shape(session, 0, dims, 8, ctypes.byref(rank)), "output shape")
        count = 1
        for i in range(rank.value):
            count *= dims[i]
        return session, count


def interleaved_times(calls, warmup, rounds, idle=0.0, after=None):
    """Each round calls every configuration once, in a fresh random order (seeded: reproducible),
    so that none always runs right after the same other one; per configuration, the milliseconds
    of its calls after the first `warmup` rounds (each after `idle` seconds of sleep). What the
    order cannot fix, a session's own placement in memory, model_ab.py's --copies averages out.
    after(name), if given, runs after each timed call, outside its time (model_ab.py --per-layer
    reads the session's layer times there)."""
    times = {name: [] for name in calls}
    order = list(calls.items())
    shuffle = random.Random(1).shuffle
    for r in range(warmup + rounds):
        shuffle(order)
        for name, call in order:
            if idle:
                time.sleep(idle)
            t0 = time.perf_counter()
            call()
            if r >= warmup:
                times[name].append((time.perf_counter() - t0) * 1e3)
                if after is not None:
                    after(name)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--conv", default="im2win,winograd", help="winfer algorithms; the best counts")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--size", type=int, default=224, help="input height and width (the model's)")
    ap.add_argument("--rounds", type=int, default=40, help="timed calls of each configuration")
    ap.add_argument("--warmup", type=int, default=3, help="untimed rounds first")
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "lib", "libwinfer.so"))
    ap.add_argument("--json", action="store_true", help="one JSON object at the end")
    args = ap.parse_args()
    if args.rounds < 1 or args.threads < 1 or args.batch < 1:
        raise SystemExit("pair_bench: --rounds, --threads and --batch must be at least 1")
    yaml_path = os.path.join(ROOT, "models", "zoo", args.model + ".yaml")
    if not os.path.exists(yaml_path):
        raise SystemExit(f"pair_bench: no zoo model {yaml_path}")
    if not os.path.exists(args.lib):
        raise SystemExit(f"pair_bench: {args.lib} not found (build first: scripts/build.sh)")

    set_openblas_coretype()
    import torch
    import torchvision

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    net = getattr(torchvision.models, args.model)(weights=None).eval()
    torch_models = {"torch-optimized": torch.jit.optimize_for_inference(torch.jit.script(net)),
                    "torch-frozen": torch.jit.freeze(torch.jit.script(net))}
    x = torch.rand(args.batch, 3, args.size, args.size)

    winfer = Winfer(args.lib)
    calls = {}
    convs = args.conv.split(",")
    for conv in convs:
        # Each algorithm's model packed for it, as `winfer bench --conv` loads it.
        model = winfer.load(yaml_path, conv)
        session, out_count = winfer.session(model, conv, args.threads, args.batch)
        out = (ctypes.c_float * out_count)()
        x_ptr, x_count = x.data_ptr(), x.numel()
        calls[conv] = (lambda s=session, o=out, n=out_count: winfer.check(
            winfer.lib.winfer_session_run(s, x_ptr, x_count, o, n), "run"))
    for name, m in torch_models.items():
        calls[name] = (lambda m=m: m(x))

    with torch.inference_mode():
        times = interleaved_times(calls, args.warmup, args.rounds)

    medians = {name: statistics.median(t) for name, t in times.items()}
    best_winfer = min(medians[c] for c in convs)
    best_torch = min(medians[n] for n in torch_models)
    print(f"{args.model}, batch {args.batch}, {args.threads} thread(s), {args.rounds} rounds, one call of each "
          f"configuration per round; load average {os.getloadavg()[0]:.2f}")
    for name, t in times.items():
        print(f"  {name:16s} median {medians[name]:8.2f} ms   min {min(t):8.2f}   max {max(t):8.2f}")
    print(f"ratio best winfer / best PyTorch: {best_winfer / best_torch:.3f}")
    if args.json:
        print(json.dumps({"model": args.model, "threads": args.threads, "batch": args.batch, "rounds": args.rounds,
                          "median_ms": medians, "ratio": best_winfer / best_torch}))


if __name__ == "__main__":
    main()
